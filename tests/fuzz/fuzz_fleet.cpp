// Fuzz target: the fleet report reader (`nvte-doctor fleet`). The input is one or more report
// texts separated by a line "~~~", as if they were files of one directory. Properties: both
// renderings succeed, the JSON one parses back with the summary's exit code, every node and
// every finding's node list names each host once, and the Slurm host list of the nodes expands
// back to exactly those hosts (when no name holds a bracket or a comma, which a list cannot).
#include "fuzz_common.hpp"
#include "report/render.hpp"
#include "service/fleet.hpp"
#include "util/hostlist.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <set>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::string_view k_separator = "\n~~~\n";
  constexpr double k_now = 1795348800; // 2026-11-22T12:00:00Z
  std::string_view rest = fuzz::as_text(data, size);
  service::FleetReader reader(std::chrono::hours(24), k_now);
  for (int i = 0; i < 16; ++i) {
    auto cut = rest.find(k_separator);
    reader.add("node" + std::to_string(i) + ".json", rest.substr(0, cut));
    if (cut == std::string_view::npos) break;
    rest = rest.substr(cut + k_separator.size());
  }
  model::FleetSummary summary = reader.finish();
  (void)report::render_fleet_text(summary, {});
  (void)report::render_fleet_text(summary, {0, true});
  auto doc = nlohmann::json::parse(report::render_fleet_json(summary), nullptr, false);
  if (doc.is_discarded() || doc["exit_code"] != summary.exit_code() || doc["nodes"].size() != summary.nodes.size()) std::abort();
  std::set<std::string> hosts;
  for (const auto& node : summary.nodes) {
    if (!hosts.insert(node.host).second) std::abort();
  }
  for (const auto& finding : summary.findings) {
    if (std::set<std::string>(finding.nodes.begin(), finding.nodes.end()).size() != finding.nodes.size()) std::abort();
  }
  std::vector<std::string> names(hosts.begin(), hosts.end());
  bool listable = std::none_of(names.begin(), names.end(),
                               [](const std::string& h) { return h.find_first_of("[],") != std::string::npos || h.empty(); });
  if (listable) {
    auto back = util::expand_hostlist(util::compress_hostlist(names));
    if (!back) std::abort();
    std::sort(back->begin(), back->end());
    if (*back != names) std::abort();
  }
  return 0;
}
