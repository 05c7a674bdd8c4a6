#include "model/fleet.hpp"

#include <algorithm>

namespace model {

int status_rank(const std::string& status) {
  if (status == "OK") return 0;
  if (status == "WARNING") return 1;
  if (status == "CRITICAL") return 2;
  return 3;
}

int FleetSummary::exit_code() const {
  // Nothing evaluated is never OK; one unreadable file among readable reports is listed and
  // counts as a WARNING, it does not hide the fleet behind UNKNOWN.
  if (nodes.empty()) return 3;
  int worst = unreadable.empty() ? 0 : 1;
  for (const auto& n : nodes) worst = std::max(worst, n.stale ? 1 : status_rank(n.status));
  return worst;
}

int verdict_rank(std::string_view verdict) {
  if (verdict == "runs") return 0;
  if (verdict == "at_risk") return 1;
  if (verdict == "unknown") return 2;
  if (verdict == "fails") return 3;
  return 4;
}

bool fleet_label_runs(std::string_view label) {
  return !label.empty() && label != "none" && label != "unknown" && label != "runs" && !label.starts_with("fails");
}

} // namespace model
