// Report: the neutral output model of a check. Rules produce it, renderers (text, JSON,
// Prometheus, NFD) consume it; neither side knows the other.
#pragma once

#include "model/explanation.hpp"
#include "model/facts.hpp"
#include "model/finding.hpp"
#include "model/knowledge.hpp"
#include "model/selftest_summary.hpp"

#include <optional>
#include <string>
#include <vector>

namespace model {

// The workloads' verdicts, counted.
struct WorkloadCounts {
  int runs = 0;
  int at_risk = 0;
  int unknown = 0;
  int fails = 0;
  int no_backend = 0;
  int total() const { return runs + at_risk + unknown + fails + no_backend; }
};

// Two scopes, kept apart: the node's health comes from the node's findings alone (what NHC, NPD,
// NFD's status label and nvte_doctor_status carry: one team's model never drains a node), the
// workloads' from their verdicts. The exit code is the worse of the two (CRITICAL, then UNKNOWN,
// WARNING, OK), so that `check --hf-config ...` and the preflight answer for the job.
struct Summary {
  int errors = 0; // node findings (Finding::workload empty) by severity
  int warnings = 0;
  int infos = 0;
  std::string status; // the node's: OK, WARNING, CRITICAL (UNKNOWN when the check could not run)
  WorkloadCounts workloads;
  // OK (all run), WARNING (one at risk, or a workload's warning finding), CRITICAL (one fails or has
  // no backend), UNKNOWN (one unknown, none failing); empty without workloads.
  std::string workload_status;
  int exit_code() const;
  std::string overall_status() const; // the status of exit_code(): what the preflight acts on
};

// "OK", "WARNING", "CRITICAL", "UNKNOWN" for an exit code 0-3.
std::string status_of_exit_code(int code);
// The Nagios exit code of a status (UNKNOWN and anything else: 3).
int exit_code_of_status(std::string_view status);

struct Report {
  std::string tool_version;
  std::string rules_digest;
  std::string host;
  std::string generated_at; // RFC 3339
  std::string fingerprint;
  Facts facts;
  std::vector<Explanation> workloads;
  std::vector<Finding> findings;           // node findings, then each workload's
  std::optional<SelftestSummary> selftest; // when the self-test ran (check --selftest, run)
  Knowledge knowledge;                     // where the rules' knowledge ends, and what lies beyond it
  Summary summary;

  // Counts the node's findings and the workloads' verdicts into summary.
  void summarize();
};

} // namespace model
