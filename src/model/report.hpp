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

struct Summary {
  int errors = 0;
  int warnings = 0;
  int infos = 0;
  std::string status; // OK, WARNING, CRITICAL, UNKNOWN
  int exit_code() const;
};

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

  // Counts findings (workload findings included) into summary.
  void summarize();
};

} // namespace model
