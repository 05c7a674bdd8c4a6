// `nvte-doctor fleet REPORT...|DIR`: many nodes' report JSONs (what `run` writes or pushes)
// summarised: each finding with how many and which nodes, each workload with the nodes where
// it runs and the backend it gets there, and nodes whose reports are stale.
#pragma once

#include "util/result.hpp"

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace service {

struct FleetNode {
  std::string host;
  std::string file;
  std::string generated_at;
  std::string status;
  double age_seconds = 0;
  bool stale = false;
};

struct FleetFinding {
  std::string id;
  std::string severity;
  std::string title;
  std::vector<std::string> nodes; // sorted
};

struct FleetWorkload {
  std::string name;
  std::map<std::string, std::vector<std::string>> by_backend; // backend (or "none") -> nodes
};

struct FleetSummary {
  std::vector<FleetNode> nodes;        // by host
  std::vector<FleetFinding> findings;  // errors first, then by node count
  std::vector<FleetWorkload> workloads;
  std::vector<std::string> unreadable; // "file: reason"
  int exit_code() const;               // worst fresh status; stale nodes count as WARNING; unreadable -> 3
};

// The reader behind summarize_fleet, for report texts in memory (and the fuzz target's entry):
// add every report, then finish. When several reports come from one host, the newest counts.
// A text that is not a doctor report is listed as unreadable with the reason.
class FleetReader {
public:
  FleetReader(std::chrono::seconds max_age, double now_seconds) : m_max_age(max_age), m_now(now_seconds) {}
  void add(const std::string& file, std::string_view text);
  void add_unreadable(std::string reason) { m_unreadable.push_back(std::move(reason)); }
  FleetSummary finish() const;

private:
  struct Loaded {
    FleetNode node;
    double generated = 0;
    std::vector<FleetFinding> findings;                         // one node each
    std::vector<std::pair<std::string, std::string>> workloads; // name, backend
  };
  std::chrono::seconds m_max_age;
  double m_now;
  std::map<std::string, Loaded> m_newest; // host -> newest report
  std::vector<std::string> m_unreadable;
};

// Reads the report files (directories: their *.json files, not recursing) into a FleetReader.
// now_seconds is Unix time.
FleetSummary summarize_fleet(const std::vector<std::filesystem::path>& inputs, std::chrono::seconds max_age,
                             double now_seconds);

std::string render_fleet_text(const FleetSummary& summary);
std::string render_fleet_json(const FleetSummary& summary);

// "2026-11-22T04:00:00Z" (and with an offset or fraction) -> Unix time; nullopt when malformed.
std::optional<double> parse_rfc3339(std::string_view text);

} // namespace service
