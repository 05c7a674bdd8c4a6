#include "model/report.hpp"

namespace model {

std::string status_of_exit_code(int code) {
  switch (code) {
  case 0: return "OK";
  case 1: return "WARNING";
  case 2: return "CRITICAL";
  default: return "UNKNOWN";
  }
}

int exit_code_of_status(std::string_view status) {
  if (status == "OK") return 0;
  if (status == "WARNING") return 1;
  if (status == "CRITICAL") return 2;
  return 3;
}

int Summary::exit_code() const {
  int node = exit_code_of_status(status);
  if (workload_status.empty()) return node;
  int workload = exit_code_of_status(workload_status);
  // CRITICAL wins, then UNKNOWN, then WARNING.
  for (int code : {2, 3, 1})
    if (node == code || workload == code) return code;
  return 0;
}

std::string Summary::overall_status() const { return status_of_exit_code(exit_code()); }

void Report::summarize() {
  summary = Summary{};
  for (const auto& finding : findings) {
    if (!finding.workload.empty()) continue;
    switch (finding.severity) {
    case Severity::error: ++summary.errors; break;
    case Severity::warning: ++summary.warnings; break;
    case Severity::info: ++summary.infos; break;
    }
  }
  summary.status = summary.errors ? "CRITICAL" : summary.warnings ? "WARNING" : "OK";
  if (workloads.empty()) return;
  auto& c = summary.workloads;
  for (const auto& e : workloads) {
    switch (e.verdict.verdict) {
    case Verdict::runs: ++c.runs; break;
    case Verdict::at_risk: ++c.at_risk; break;
    case Verdict::unknown: ++c.unknown; break;
    case Verdict::fails: ++c.fails; break;
    case Verdict::no_backend: ++c.no_backend; break;
    }
  }
  // A workload that runs with a warning finding (a slower backend than it could have) is a
  // WARNING too, as explain's exit code says.
  bool warned = false;
  for (const auto& finding : findings) warned = warned || (!finding.workload.empty() && finding.severity != Severity::info);
  summary.workload_status = c.fails || c.no_backend ? "CRITICAL" : c.unknown ? "UNKNOWN" : c.at_risk || warned ? "WARNING" : "OK";
}

} // namespace model
