// Fleet summary. A report that is not JSON, or not a doctor report, is listed as unreadable
// rather than ending the summary: one broken node must not hide the others.
#include "service/fleet.hpp"

#include "util/file.hpp"
#include "util/input_guard.hpp"
#include "util/json_text.hpp"
#include "util/strings.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <ctime>

namespace service {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

int status_rank(const std::string& status) {
  if (status == "OK") return 0;
  if (status == "WARNING") return 1;
  if (status == "CRITICAL") return 2;
  return 3;
}

int severity_rank(const std::string& severity) {
  return severity == "error" ? 0 : severity == "warning" ? 1 : 2;
}

std::string str(const Json& doc, const char* key) {
  return doc.contains(key) && doc[key].is_string() ? doc[key].get<std::string>() : std::string();
}

} // namespace

std::optional<double> parse_rfc3339(std::string_view text) {
  std::tm tm{};
  int year, month, day, hour, minute, second;
  char tail[40] = {};
  std::string s(text.substr(0, 60));
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%39s", &year, &month, &day, &hour, &minute, &second, tail) < 6) {
    return std::nullopt;
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  double t = static_cast<double>(::timegm(&tm));
  std::string_view rest(tail);
  if (!rest.empty() && rest[0] == '.') {
    std::size_t i = 1;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) ++i;
    t += std::stod("0" + std::string(rest.substr(0, i)));
    rest = rest.substr(i);
  }
  if (rest == "Z" || rest == "z") return t;
  int oh = 0, om = 0;
  char sign = 0;
  if (std::sscanf(std::string(rest).c_str(), "%c%2d:%2d", &sign, &oh, &om) == 3 && (sign == '+' || sign == '-')) {
    double offset = (oh * 3600.0 + om * 60.0) * (sign == '+' ? 1 : -1);
    return t - offset;
  }
  return std::nullopt;
}

int FleetSummary::exit_code() const {
  int worst = unreadable.empty() ? 0 : 3;
  for (const auto& n : nodes) worst = std::max(worst, n.stale ? 1 : status_rank(n.status));
  return worst;
}

void FleetReader::add(const std::string& file, std::string_view text) {
  // Reports come from other nodes: one nested 100,000 levels deep must cost this file, not the
  // fleet's summary (nlohmann's tree recurses per level when it is destroyed).
  if (auto checked = util::check_json(text, file); !checked) {
    m_unreadable.push_back(checked.error().message);
    return;
  }
  Json doc = Json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("summary") || !doc.contains("host")) {
    m_unreadable.push_back(file + ": not an nvte-doctor report (JSON with host and summary)");
    return;
  }
  Loaded loaded;
  loaded.node.host = str(doc, "host");
  loaded.node.file = file;
  loaded.node.generated_at = str(doc, "generated_at");
  loaded.node.status = doc["summary"].is_object() ? str(doc["summary"], "status") : "";
  auto generated = parse_rfc3339(loaded.node.generated_at);
  if (!generated) {
    m_unreadable.push_back(file + ": generated_at '" + loaded.node.generated_at + "' is not RFC 3339");
    return;
  }
  loaded.generated = *generated;
  loaded.node.age_seconds = m_now - *generated;
  loaded.node.stale = loaded.node.age_seconds > static_cast<double>(m_max_age.count());
  if (doc.contains("findings") && doc["findings"].is_array()) {
    for (const auto& f : doc["findings"]) {
      if (f.is_object()) loaded.findings.push_back({str(f, "id"), str(f, "severity"), str(f, "title"), {}});
    }
  }
  if (doc.contains("workloads") && doc["workloads"].is_array()) {
    for (const auto& w : doc["workloads"]) {
      if (!w.is_object()) continue;
      std::string backend = w.contains("selected") && w["selected"].is_string() ? w["selected"].get<std::string>() : "none";
      loaded.workloads.emplace_back(str(w, "name"), backend);
    }
  }
  auto it = m_newest.find(loaded.node.host);
  if (it == m_newest.end() || it->second.generated < loaded.generated) m_newest[loaded.node.host] = std::move(loaded);
}

FleetSummary FleetReader::finish() const {
  FleetSummary summary;
  summary.unreadable = m_unreadable;
  std::map<std::pair<std::string, std::string>, FleetFinding> findings;
  std::map<std::string, FleetWorkload> workloads;
  for (const auto& [host, loaded] : m_newest) {
    summary.nodes.push_back(loaded.node);
    for (const auto& f : loaded.findings) {
      auto& entry = findings[{f.id, f.severity}];
      entry.id = f.id;
      entry.severity = f.severity;
      if (entry.title.empty()) entry.title = f.title;
      if (entry.nodes.empty() || entry.nodes.back() != host) entry.nodes.push_back(host);
    }
    for (const auto& [name, backend] : loaded.workloads) {
      workloads[name].name = name;
      auto& hosts = workloads[name].by_backend[backend];
      if (hosts.empty() || hosts.back() != host) hosts.push_back(host);
    }
  }
  for (auto& [_, f] : findings) summary.findings.push_back(std::move(f));
  std::stable_sort(summary.findings.begin(), summary.findings.end(), [](const FleetFinding& a, const FleetFinding& b) {
    if (severity_rank(a.severity) != severity_rank(b.severity)) return severity_rank(a.severity) < severity_rank(b.severity);
    return a.nodes.size() > b.nodes.size();
  });
  for (auto& [_, w] : workloads) summary.workloads.push_back(std::move(w));
  return summary;
}

FleetSummary summarize_fleet(const std::vector<fs::path>& inputs, std::chrono::seconds max_age, double now_seconds) {
  FleetReader reader(max_age, now_seconds);
  std::vector<fs::path> files;
  for (const auto& input : inputs) {
    std::error_code ec;
    if (fs::is_directory(input, ec)) {
      auto names = util::list_directory(input);
      if (!names) {
        reader.add_unreadable(names.error().message);
        continue;
      }
      for (const auto& name : *names) {
        if (util::ends_with(name, ".json")) files.push_back(input / name);
      }
    } else {
      files.push_back(input);
    }
  }
  for (const auto& file : files) {
    auto text = util::read_input(file);
    if (text) reader.add(file.string(), *text);
    else reader.add_unreadable(text.error().message);
  }
  return reader.finish();
}

std::string render_fleet_text(const FleetSummary& s) {
  std::string out;
  std::size_t stale = 0;
  std::map<std::string, int> by_status;
  for (const auto& n : s.nodes) {
    ++by_status[n.status];
    if (n.stale) ++stale;
  }
  out += "Nodes: " + std::to_string(s.nodes.size());
  for (const auto& [status, count] : by_status) out += ", " + std::to_string(count) + " " + status;
  if (stale) out += ", " + std::to_string(stale) + " stale";
  out += "\n";
  if (!s.findings.empty()) {
    out += "\nFindings:\n";
    for (const auto& f : s.findings) {
      std::string severity = f.severity;
      severity.resize(std::max<std::size_t>(severity.size(), 7), ' ');
      out += "  " + severity + "  " + f.id + "  on " + std::to_string(f.nodes.size()) + " node" +
             (f.nodes.size() == 1 ? "" : "s") + ": " + util::join(f.nodes, ", ") + "\n";
      if (!f.title.empty()) out += "             " + f.title + "\n";
    }
  }
  if (!s.workloads.empty()) {
    out += "\nWorkloads:\n";
    for (const auto& w : s.workloads) {
      out += "  " + w.name + "\n";
      for (const auto& [backend, nodes] : w.by_backend) {
        out += "    " + (backend == "none" ? std::string("no backend") : backend) + ": " + util::join(nodes, ", ") + "\n";
      }
    }
  }
  if (stale) {
    out += "\nStale reports:\n";
    for (const auto& n : s.nodes) {
      if (n.stale) out += "  " + n.host + "  generated " + n.generated_at + " (" + std::to_string(static_cast<long long>(n.age_seconds)) + " s ago)\n";
    }
  }
  if (!s.unreadable.empty()) {
    out += "\nUnreadable:\n";
    for (const auto& u : s.unreadable) out += "  " + u + "\n";
  }
  return out;
}

std::string render_fleet_json(const FleetSummary& s) {
  Json nodes = Json::array();
  for (const auto& n : s.nodes) {
    nodes.push_back(Json{{"host", n.host}, {"status", n.status}, {"generated_at", n.generated_at},
                         {"age_seconds", static_cast<long long>(n.age_seconds)}, {"stale", n.stale}, {"file", n.file}});
  }
  Json findings = Json::array();
  for (const auto& f : s.findings) {
    findings.push_back(Json{{"id", f.id}, {"severity", f.severity}, {"title", f.title}, {"count", f.nodes.size()}, {"nodes", f.nodes}});
  }
  Json workloads = Json::array();
  for (const auto& w : s.workloads) {
    Json by_backend = Json::object();
    Json runs_on = Json::array();
    for (const auto& [backend, hosts] : w.by_backend) {
      by_backend[backend] = hosts;
      if (backend != "none") {
        for (const auto& h : hosts) runs_on.push_back(h);
      }
    }
    std::sort(runs_on.begin(), runs_on.end());
    workloads.push_back(Json{{"name", w.name}, {"runs_on", runs_on}, {"by_backend", by_backend}});
  }
  Json stale = Json::array();
  for (const auto& n : s.nodes) {
    if (n.stale) stale.push_back(n.host);
  }
  Json doc{{"schema_version", 1}, {"nodes", nodes}, {"findings", findings}, {"workloads", workloads},
           {"stale", stale}, {"unreadable", s.unreadable}, {"exit_code", s.exit_code()}};
  return util::json_text(doc, 2) + "\n";
}

} // namespace service
