// Fleet summary. A report that is not JSON, or not a doctor report, is listed as unreadable
// rather than ending the summary: one broken node must not hide the others. Hosts are kept in a
// map, so every node list comes out sorted without a sort per finding.
#include "service/fleet.hpp"

#include "util/file.hpp"
#include "util/input_guard.hpp"
#include "util/parallel.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <ctime>

namespace service {

namespace fs = std::filesystem;

namespace {

// Threads that read reports at once; beyond a few the disk or the allocator is the limit.
constexpr std::size_t k_max_threads = 8;

int severity_rank(const std::string& severity) { return severity == "error" ? 0 : severity == "warning" ? 1 : 2; }

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

void FleetReader::add(const std::string& file, std::string_view text) { add(file, read_fleet_report(file, text)); }

void FleetReader::add(const std::string& file, util::Result<Loaded> read) {
  if (!read) {
    m_unreadable.push_back(read.error().message);
    return;
  }
  Loaded& loaded = *read;
  auto generated = parse_rfc3339(loaded.node.generated_at);
  if (!generated) {
    m_unreadable.push_back(file + ": generated_at '" + loaded.node.generated_at + "' is not RFC 3339");
    return;
  }
  loaded.generated = *generated;
  loaded.node.age_seconds = m_now - *generated;
  loaded.node.stale = loaded.node.age_seconds > static_cast<double>(m_max_age.count());
  auto it = m_newest.find(loaded.node.host);
  if (it == m_newest.end()) m_newest.emplace(loaded.node.host, std::move(loaded));
  else if (it->second.generated < loaded.generated) it->second = std::move(loaded);
}

model::FleetSummary FleetReader::finish() const {
  model::FleetSummary summary;
  summary.unreadable = m_unreadable;
  summary.max_age_seconds = static_cast<double>(m_max_age.count());
  std::map<std::pair<std::string, std::string>, model::FleetFinding> findings;
  std::map<std::string, model::FleetWorkload> workloads;
  std::map<model::StackVersions, model::FleetConfiguration> configurations;
  summary.nodes.reserve(m_newest.size());
  for (const auto& [host, loaded] : m_newest) {
    summary.nodes.push_back(loaded.node);
    for (const auto& f : loaded.findings) {
      auto& entry = findings[{f.id, f.severity}];
      if (entry.nodes.empty()) {
        entry.id = f.id;
        entry.severity = f.severity;
      }
      if (entry.title.empty()) entry.title = f.title;
      if (entry.nodes.empty() || entry.nodes.back() != host) entry.nodes.push_back(host);
    }
    for (const auto& [name, backend] : loaded.workloads) {
      workloads[name].name = name;
      auto& hosts = workloads[name].by_backend[backend];
      if (hosts.empty() || hosts.back() != host) hosts.push_back(host);
    }
    auto& configuration = configurations[loaded.versions];
    if (configuration.nodes.empty() || model::status_rank(loaded.node.status) > model::status_rank(configuration.worst_status)) {
      configuration.worst_status = loaded.node.status;
    }
    configuration.nodes.push_back(host);
  }
  for (auto& [_, f] : findings) summary.findings.push_back(std::move(f));
  std::stable_sort(summary.findings.begin(), summary.findings.end(), [](const model::FleetFinding& a, const model::FleetFinding& b) {
    if (severity_rank(a.severity) != severity_rank(b.severity)) return severity_rank(a.severity) < severity_rank(b.severity);
    return a.nodes.size() > b.nodes.size();
  });
  for (auto& [versions, c] : configurations) {
    c.versions = versions;
    summary.configurations.push_back(std::move(c));
  }
  std::stable_sort(summary.configurations.begin(), summary.configurations.end(),
                   [](const model::FleetConfiguration& a, const model::FleetConfiguration& b) { return a.nodes.size() > b.nodes.size(); });
  for (auto& [_, w] : workloads) summary.workloads.push_back(std::move(w));
  return summary;
}

model::FleetSummary summarize_fleet(const std::vector<fs::path>& inputs, std::chrono::seconds max_age, double now_seconds) {
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
  // Reading and parsing is most of the work and each file is independent: worker threads take
  // files by index; the results are added in file order, so the summary does not depend on
  // which thread finished first.
  std::vector<std::optional<util::Result<FleetReader::Loaded>>> results(files.size());
  std::size_t threads = std::clamp<std::size_t>(util::available_cpus(), 1, k_max_threads);
  threads = std::min(threads, files.size() / 64 + 1);
  util::parallel_for(files.size(), static_cast<unsigned>(threads), [&](std::size_t i) {
    auto text = util::read_input(files[i]);
    results[i] = text ? read_fleet_report(files[i].string(), *text) : util::Result<FleetReader::Loaded>(text.take_error());
  });
  for (std::size_t i = 0; i < files.size(); ++i) reader.add(files[i].string(), std::move(*results[i]));
  return reader.finish();
}

} // namespace service
