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
  std::map<std::pair<model::GpuModel, model::StackVersions>, model::FleetConfiguration> configurations;
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
    for (const auto& w : loaded.workloads) {
      workloads[w.name].name = w.name;
      auto& hosts = workloads[w.name].by_backend[w.label];
      if (hosts.empty() || hosts.back() != host) hosts.push_back(host);
    }
    auto& configuration = configurations[{loaded.gpu, loaded.versions}];
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
  for (auto& [key, c] : configurations) {
    c.gpu = key.first;
    c.versions = key.second;
    summary.configurations.push_back(std::move(c));
  }
  std::stable_sort(summary.configurations.begin(), summary.configurations.end(),
                   [](const model::FleetConfiguration& a, const model::FleetConfiguration& b) { return a.nodes.size() > b.nodes.size(); });
  for (auto& [_, w] : workloads) summary.workloads.push_back(std::move(w));
  if (!m_matrix_by.empty()) summary.matrix = matrix();
  return summary;
}

model::FleetMatrix FleetReader::matrix() const {
  model::FleetMatrix m;
  m.by = m_matrix_by;
  std::vector<std::size_t> slots; // index into k_fleet_group_keys per `by` key
  for (const auto& key : m.by) {
    auto it = std::find(model::k_fleet_group_keys.begin(), model::k_fleet_group_keys.end(), key);
    slots.push_back(static_cast<std::size_t>(it - model::k_fleet_group_keys.begin()));
  }
  auto key_of = [&](const Loaded& loaded) {
    std::vector<std::optional<std::string>> key;
    for (auto slot : slots) key.push_back(slot == 0 ? loaded.gpu : loaded.versions[slot - 1]);
    return key;
  };
  std::map<std::vector<std::optional<std::string>>, std::vector<std::string>> groups;
  std::map<std::string, int> workload_names;
  for (const auto& [host, loaded] : m_newest) {
    groups[key_of(loaded)].push_back(host);
    for (const auto& w : loaded.workloads) workload_names[w.name] = 0;
  }
  for (auto& [key, nodes] : groups) m.groups.push_back({key, std::move(nodes)});
  std::stable_sort(m.groups.begin(), m.groups.end(), [](const auto& a, const auto& b) { return a.nodes.size() > b.nodes.size(); });
  std::map<std::vector<std::optional<std::string>>, std::size_t> group_index;
  for (std::size_t g = 0; g < m.groups.size(); ++g) group_index[m.groups[g].key] = g;
  int next = 0;
  for (auto& [name, index] : workload_names) {
    index = next++;
    m.workloads.push_back(name);
  }
  m.cells.assign(m.workloads.size(), std::vector<model::FleetMatrixCell>(m.groups.size()));
  // Per cell: fix command -> (nodes giving it, finding) among the worst verdict's nodes.
  std::vector<std::vector<std::map<std::string, std::pair<std::size_t, std::string>>>> fixes(
      m.workloads.size(), std::vector<std::map<std::string, std::pair<std::size_t, std::string>>>(m.groups.size()));
  for (const auto& [host, loaded] : m_newest) {
    std::size_t g = group_index[key_of(loaded)];
    for (const auto& w : loaded.workloads) {
      auto wi = static_cast<std::size_t>(workload_names[w.name]);
      auto& cell = m.cells[wi][g];
      auto& hosts = cell.by_verdict[w.verdict];
      if (!hosts.empty() && hosts.back() == host) continue; // one workload named twice in a report
      hosts.push_back(host);
      auto& cell_fixes = fixes[wi][g];
      if (cell.worst.empty() || model::verdict_rank(w.verdict) > model::verdict_rank(cell.worst)) {
        cell.worst = w.verdict;
        cell_fixes.clear();
      }
      if (w.verdict == cell.worst && !w.fix.empty()) {
        auto& entry = cell_fixes[w.fix];
        ++entry.first;
        if (entry.second.empty()) entry.second = w.finding;
      }
    }
  }
  for (std::size_t wi = 0; wi < m.workloads.size(); ++wi) {
    for (std::size_t g = 0; g < m.groups.size(); ++g) {
      std::size_t best = 0;
      for (const auto& [command, entry] : fixes[wi][g]) {
        if (entry.first > best) {
          best = entry.first;
          m.cells[wi][g].fix = command;
          m.cells[wi][g].fix_finding = entry.second;
        }
      }
    }
  }
  return m;
}

util::Result<std::vector<std::string>> parse_matrix_keys(std::string_view text) {
  std::vector<std::string> keys;
  for (const auto& part : util::split(text, ',')) {
    std::string key(util::trim(part));
    if (std::find(model::k_fleet_group_keys.begin(), model::k_fleet_group_keys.end(), key) == model::k_fleet_group_keys.end()) {
      std::string nearest;
      std::size_t best = 3;
      for (const char* known : model::k_fleet_group_keys) {
        if (auto d = util::edit_distance(key, known); d < best) {
          best = d;
          nearest = known;
        }
      }
      return util::Error{
          util::ErrorKind::invalid,
          "--by: unknown key '" + key + "'" + (nearest.empty() ? "" : " (did you mean '" + nearest + "'?)") + "; the keys are " +
              util::join(std::vector<std::string>(model::k_fleet_group_keys.begin(), model::k_fleet_group_keys.end()), ", ")};
    }
    if (std::find(keys.begin(), keys.end(), key) != keys.end())
      return util::Error{util::ErrorKind::invalid, "--by: key '" + key + "' given twice"};
    keys.push_back(key);
  }
  if (keys.empty()) return util::Error{util::ErrorKind::invalid, "--by needs keys, e.g. --by gpu,te"};
  return keys;
}

model::FleetSummary summarize_fleet(const std::vector<fs::path>& inputs, std::chrono::seconds max_age, double now_seconds,
                                    const std::vector<std::string>& matrix_by) {
  FleetReader reader(max_age, now_seconds);
  reader.set_matrix(matrix_by);
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
