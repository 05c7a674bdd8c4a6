#include "model/finding.hpp"

namespace model {

std::string_view to_string(Severity severity) {
  switch (severity) {
  case Severity::info: return "info";
  case Severity::warning: return "warning";
  case Severity::error: return "error";
  }
  return "info";
}

std::optional<Severity> parse_severity(std::string_view text) {
  if (text == "info") return Severity::info;
  if (text == "warning") return Severity::warning;
  if (text == "error") return Severity::error;
  return std::nullopt;
}

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
