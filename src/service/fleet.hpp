// `nvte-doctor fleet REPORT...|DIR`: many nodes' report JSONs (what `run` writes or pushes) read
// into a model::FleetSummary: each finding with the nodes that have it, the configurations
// (driver, CUDA, cuDNN, NCCL, torch, TE) with their nodes and worst status, each workload with
// the nodes where it runs and the backend it gets there, and nodes whose reports are stale.
// The renderers are report::render_fleet_text / render_fleet_json.
#pragma once

#include "model/fleet.hpp"
#include "util/result.hpp"

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace service {

// The reader behind summarize_fleet, for report texts in memory (and the fuzz target's entry):
// add every report, then finish. When several reports come from one host, the newest counts.
// A text that is not a doctor report is listed as unreadable with the reason. Only the fields
// the summary needs are kept (a 20,000-node fleet fits in tens of MB): reports are read with a
// streaming parser, never as a whole tree.
class FleetReader {
public:
  FleetReader(std::chrono::seconds max_age, double now_seconds) : m_max_age(max_age), m_now(now_seconds) {}
  // `fleet --by`: finish() also builds the workload x configuration matrix over these keys
  // (names of model::k_fleet_group_keys, checked by the caller with matrix_key_error).
  void set_matrix(std::vector<std::string> by) { m_matrix_by = std::move(by); }
  void add(const std::string& file, std::string_view text);
  struct Loaded;
  // A report read_fleet_report has already read (or its error).
  void add(const std::string& file, util::Result<Loaded> read);
  void add_unreadable(std::string reason) { m_unreadable.push_back(std::move(reason)); }
  model::FleetSummary finish() const;

  // What one report contributes (public for the parser in fleet_report.cpp).
  struct Loaded {
    model::FleetNode node;
    double generated = 0;
    std::vector<model::FleetFinding> findings;                  // without nodes
    // name, and what the node promises for it: its backend when the verdict runs ("FusedAttention"),
    // "FusedAttention (at risk)", "fails (FusedAttention)", "none" (no backend), "unknown". A report
    // from before verdicts (no "verdict" member) gives its selected backend or "none".
    struct Workload {
      std::string name;
      std::string label = "none";
      std::string verdict; // runs, at_risk, unknown, fails, no_backend (from `selected` before verdicts)
      std::string fix;     // the verdict's fix command, "" when none
      std::string finding; // the verdict's finding id
    };
    std::vector<Workload> workloads;
    model::GpuModel gpu;
    model::StackVersions versions;
  };

private:
  model::FleetMatrix matrix() const;
  std::chrono::seconds m_max_age;
  double m_now;
  std::map<std::string, Loaded> m_newest; // host -> newest report
  std::vector<std::string> m_unreadable;
  std::vector<std::string> m_matrix_by;
};

// The keys of `fleet --by` ("gpu,te"): an error naming a key that is not one of
// model::k_fleet_group_keys (with the nearest one), or a repeated or empty list.
util::Result<std::vector<std::string>> parse_matrix_keys(std::string_view text);

// The fields of one report text; an error ("FILE: why") when it is not a doctor report.
util::Result<FleetReader::Loaded> read_fleet_report(const std::string& file, std::string_view text);

// Reads the report files (directories: their *.json files, not recursing) into a FleetReader.
// now_seconds is Unix time.
// matrix_by: `fleet --by` keys (empty: no matrix).
model::FleetSummary summarize_fleet(const std::vector<std::filesystem::path>& inputs, std::chrono::seconds max_age, double now_seconds,
                                    const std::vector<std::string>& matrix_by = {});

// "2026-11-22T04:00:00Z" (and with an offset or fraction) -> Unix time; nullopt when malformed.
std::optional<double> parse_rfc3339(std::string_view text);

} // namespace service
