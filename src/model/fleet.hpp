// The fleet summary: what `nvte-doctor fleet` makes of many nodes' reports, neutral data for the
// renderers (report/fleet_*.cpp). Host lists are sorted; every count is a number of nodes, each
// node counted once with its newest report.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace model {

struct FleetNode {
  std::string host;
  std::string file;
  std::string generated_at;
  std::string status;     // the report's summary.status
  double age_seconds = 0; // now - generated_at; negative when the node's clock runs ahead
  bool stale = false;     // older than the max age
};

struct FleetFinding {
  std::string id;
  std::string severity;
  std::string title;
  std::vector<std::string> nodes;
};

// The software stack a node runs, in this order: driver, CUDA, cuDNN, NCCL, torch, TE. An
// absent component (no torch on the node) is nullopt.
inline constexpr std::array<const char*, 6> k_configuration_keys = {"driver", "cuda", "cudnn", "nccl", "torch", "te"};
using StackVersions = std::array<std::optional<std::string>, 6>;

// The GPU model of a node: its first GPU's name ("NVIDIA H100 80GB HBM3"), as the Prometheus
// _info metric's gpu label has it; nullopt when the report names no GPU.
using GpuModel = std::optional<std::string>;

struct FleetConfiguration {
  GpuModel gpu;
  StackVersions versions;
  std::string worst_status; // of the nodes' newest reports
  std::vector<std::string> nodes;
};

struct FleetWorkload {
  std::string name;
  // What each node promises for the workload -> nodes: its backend when it runs there
  // ("FusedAttention"), "FusedAttention (at risk)", "fails (FusedAttention)", "none" (no
  // backend), "unknown" (service::FleetReader builds them from each report's verdicts).
  std::map<std::string, std::vector<std::string>> by_backend;
};

// The keys `fleet --by` groups nodes by: the GPU model, then the stack in k_configuration_keys order.
inline constexpr std::array<const char*, 7> k_fleet_group_keys = {"gpu", "driver", "cuda", "cudnn", "nccl", "torch", "te"};

// One cell of the workload x configuration matrix: what the workload gets on the nodes of one
// configuration.
struct FleetMatrixCell {
  std::map<std::string, std::vector<std::string>> by_verdict; // verdict (runs, at_risk, unknown, fails, no_backend) -> hosts
  std::string worst;                                          // the worst verdict among the nodes ("" when no node reports it)
  std::string fix;                                            // the fix command most of the worst verdict's nodes give ("" when none)
  std::string fix_finding;                                    // the finding that decided those nodes' verdict
};

// `fleet --by gpu,te`: nodes grouped by the chosen keys (the columns of a group's key, in `by`
// order), and for each workload and group what it gets there.
struct FleetMatrix {
  std::vector<std::string> by; // keys of k_fleet_group_keys, in the user's order
  struct Group {
    std::vector<std::optional<std::string>> key; // one value per `by` key; nullopt: absent
    std::vector<std::string> nodes;              // sorted
  };
  std::vector<Group> groups;                       // by node count, most first, then by key
  std::vector<std::string> workloads;              // by name
  std::vector<std::vector<FleetMatrixCell>> cells; // [workload][group]
};

// 0 runs, 1 at_risk, 2 unknown, 3 fails, 4 no_backend (and anything else): worse is larger.
int verdict_rank(std::string_view verdict);

// Whether a FleetWorkload::by_backend key means the workload runs on those nodes (runs or at risk).
bool fleet_label_runs(std::string_view label);

struct FleetSummary {
  std::vector<FleetNode> nodes;                   // by host
  std::vector<FleetFinding> findings;             // errors first, then by node count
  std::vector<FleetConfiguration> configurations; // by node count, most first
  std::vector<FleetWorkload> workloads;           // by name
  std::vector<std::string> unreadable;            // "file: reason"
  std::optional<FleetMatrix> matrix;              // with `fleet --by`
  double max_age_seconds = 0;                     // what made a node stale
  // The worst fresh status; a stale node or an unreadable file counts as WARNING; no node is 3.
  int exit_code() const;
};

// 0 OK, 1 WARNING, 2 CRITICAL, 3 anything else (UNKNOWN, a missing status).
int status_rank(const std::string& status);

} // namespace model
