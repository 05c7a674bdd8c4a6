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

// `fleet --by`: the groups with their keys, and per workload one cell per group (same order).
Json matrix_json(const model::FleetMatrix& m) {
  Json groups = Json::array();
  for (const auto& g : m.groups) {
    Json key = Json::object();
    for (std::size_t k = 0; k < m.by.size(); ++k) key[m.by[k]] = g.key[k] ? Json(*g.key[k]) : Json(nullptr);
    groups.push_back(Json{{"key", key}, {"count", g.nodes.size()}, {"hostlist", util::compress_hostlist(g.nodes)}});
  }
  Json workloads = Json::array();
  for (std::size_t w = 0; w < m.workloads.size(); ++w) {
    Json cells = Json::array();
    for (const auto& cell : m.cells[w]) {
      Json by_verdict = Json::object();
      for (const auto& [verdict, hosts] : cell.by_verdict)
        by_verdict[verdict] = Json{{"count", hosts.size()}, {"hostlist", util::compress_hostlist(hosts)}};
      cells.push_back(Json{{"verdict", cell.worst.empty() ? Json(nullptr) : Json(cell.worst)},
                           {"by_verdict", by_verdict},
                           {"fix", cell.fix.empty() ? Json(nullptr) : Json(cell.fix)},
                           {"finding", cell.fix_finding.empty() ? Json(nullptr) : Json(cell.fix_finding)}});
    }
    workloads.push_back(Json{{"name", m.workloads[w]}, {"cells", cells}});
  }
  return Json{{"by", m.by}, {"groups", groups}, {"workloads", workloads}};
}

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
    entry["gpu"] = c.gpu ? Json(*c.gpu) : Json(nullptr);
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
  if (s.matrix) doc["matrix"] = matrix_json(*s.matrix);
  return util::json_text(doc, 2) + "\n";
}

} // namespace report
