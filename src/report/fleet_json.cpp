// `fleet --format json` (packaging/schema/fleet.schema.json): everything, nothing cut, in a
// stable order (hosts sorted; findings errors first then by count; configurations by count, then
// by versions), so two runs over the same reports at the same time give the same bytes. Every
// node list comes with its Slurm host list.
#include "report/render.hpp"

#include "util/hostlist.hpp"
#include "util/json_text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

namespace report {

namespace {

using Json = nlohmann::ordered_json;

long long whole_seconds(double seconds) { return static_cast<long long>(seconds); }

} // namespace

std::string render_fleet_json(const model::FleetSummary& s) {
  Json nodes = Json::array();
  Json by_status = Json::object();
  std::map<std::string, long long> status_counts;
  Json stale = Json::array();
  for (const auto& n : s.nodes) {
    nodes.push_back(Json{{"host", n.host},
                         {"status", n.status},
                         {"generated_at", n.generated_at},
                         {"age_seconds", whole_seconds(n.age_seconds)},
                         {"stale", n.stale},
                         {"file", n.file}});
    ++status_counts[n.status];
    if (n.stale) stale.push_back(n.host);
  }
  for (const auto& [status, count] : status_counts) by_status[status] = count;

  Json configurations = Json::array();
  for (const auto& c : s.configurations) {
    Json entry = Json::object();
    for (std::size_t i = 0; i < c.versions.size(); ++i) {
      entry[model::k_configuration_keys[i]] = c.versions[i] ? Json(*c.versions[i]) : Json(nullptr);
    }
    entry["count"] = c.nodes.size();
    entry["worst_status"] = c.worst_status;
    entry["hostlist"] = util::compress_hostlist(c.nodes);
    entry["nodes"] = c.nodes;
    configurations.push_back(std::move(entry));
  }

  Json findings = Json::array();
  for (const auto& f : s.findings) {
    findings.push_back(Json{{"id", f.id},
                            {"severity", f.severity},
                            {"title", f.title},
                            {"count", f.nodes.size()},
                            {"hostlist", util::compress_hostlist(f.nodes)},
                            {"nodes", f.nodes}});
  }

  Json workloads = Json::array();
  for (const auto& w : s.workloads) {
    Json by_backend = Json::object();
    Json backends = Json::array();
    std::vector<std::string> runs_on;
    for (const auto& [backend, hosts] : w.by_backend) {
      by_backend[backend] = hosts;
      backends.push_back(Json{{"backend", backend}, {"count", hosts.size()}, {"hostlist", util::compress_hostlist(hosts)}});
      if (model::fleet_label_runs(backend)) runs_on.insert(runs_on.end(), hosts.begin(), hosts.end());
    }
    std::sort(runs_on.begin(), runs_on.end());
    workloads.push_back(Json{{"name", w.name}, {"runs_on", runs_on}, {"backends", backends}, {"by_backend", by_backend}});
  }

  Json summary{{"nodes", s.nodes.size()},
               {"by_status", by_status},
               {"stale", stale.size()},
               {"unreadable", s.unreadable.size()},
               {"configurations", s.configurations.size()},
               {"max_age_seconds", whole_seconds(s.max_age_seconds)}};
  Json doc{{"schema_version", 1},       {"summary", summary},     {"nodes", nodes}, {"configurations", configurations},
           {"findings", findings},      {"workloads", workloads}, {"stale", stale}, {"unreadable", s.unreadable},
           {"exit_code", s.exit_code()}};
  return util::json_text(doc, 2) + "\n";
}

} // namespace report
