#include "model/report.hpp"

namespace model {

int Summary::exit_code() const {
  if (status == "UNKNOWN") return 3;
  if (errors > 0) return 2;
  if (warnings > 0) return 1;
  return 0;
}

void Report::summarize() {
  summary = Summary{};
  for (const auto& finding : findings) {
    switch (finding.severity) {
    case Severity::error: ++summary.errors; break;
    case Severity::warning: ++summary.warnings; break;
    case Severity::info: ++summary.infos; break;
    }
  }
  summary.status = summary.errors ? "CRITICAL" : summary.warnings ? "WARNING" : "OK";
}

} // namespace model
