#include "rules/fix_session.hpp"

#include <algorithm>
#include <cstdint>

namespace rules::detail {

std::string change_key(const std::vector<Change>& changes) {
  std::string key;
  for (const auto& c : changes) {
    key += std::to_string(static_cast<int>(c.kind)) + '\x1f' + c.name + '\x1f' + (c.value ? "=" + *c.value : "-") + '\x1f' +
           std::to_string(reinterpret_cast<std::uintptr_t>(c.package)) + '\x1f' +
           std::to_string(reinterpret_cast<std::uintptr_t>(c.release)) + '\x1e';
  }
  return key;
}

int backend_rank(const std::optional<std::string>& selected) {
  if (!selected) return 9;
  if (*selected == "FlashAttention") return 0;
  if (*selected == "FusedAttention") return 1;
  return 2;
}

int tier_of(const Outcome& o, const std::vector<Change>& changes) {
  if (!o.selected) return k_no_backend_tier;
  bool forced = std::any_of(changes.begin(), changes.end(), [](const Change& c) {
    return forces_backend((c.kind == ChangeKind::env ? "env." : "workload.") + c.name, c.value.value_or(""));
  });
  return outcome_tier(*o.selected, forced);
}

void note_added(Outcome& outcome, const Outcome& baseline) {
  for (const auto& [id, severity] : outcome.findings)
    if (!baseline.findings.count(id)) outcome.added.emplace_back(id, severity);
}

bool meets(const Goal& goal, const Outcome& o) {
  if (!o.ok) return false;
  if (o.findings.count(goal.finding_id)) return false;
  // A workload keeps (or gets) a backend: clearing one finding of a workload that cannot run is
  // no fix.
  if (goal.workload && !o.selected) return false;
  for (const auto& [id, severity] : o.added)
    if (severity >= goal.severity) return false;
  return true;
}

bool progress(const Outcome& base, const Outcome& o) {
  if (!o.ok) return false;
  for (const auto& r : base.reasons)
    if (!o.reasons.count(r)) return true;
  return false;
}

model::Fix to_fix(const Verified& v, const Session& s, const Goal& goal) {
  std::vector<Change> all = v.candidate.changes;
  all.insert(all.end(), v.extra.begin(), v.extra.end());
  model::Fix fix = render_changes(all, s.facts());
  model::FixOutcome outcome;
  if (s.workload()) {
    outcome.backend = v.outcome->selected.value_or("");
    if (outcome.backend == "FusedAttention") outcome.sub_backend = v.outcome->sub_backend.value_or("");
  }
  outcome.clears = goal.finding_id;
  fix.verified = outcome;
  return fix;
}

bool same_changes(const model::Fix& a, const model::Fix& b) { return a.changes == b.changes; }

} // namespace rules::detail
