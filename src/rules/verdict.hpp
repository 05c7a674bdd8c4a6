// A workload's verdict (model/verdict.hpp): TE's selection, everything known to make the selected
// backend fail afterwards, and what the doctor cannot know. Computed once per workload, after
// the explanation and its fix search, by the one pipeline every command shares (src/app).
#pragma once

#include "model/explanation.hpp"
#include "model/facts.hpp"
#include "model/observed_selection.hpp"
#include "model/selftest_summary.hpp"

#include <vector>

namespace rules {

struct VerdictInputs {
  // The facts the workload was explained with (a TE log's versions applied over the node's).
  const model::Facts* facts = nullptr;
  // The node's findings: those with a verdict effect concern every workload whose selected
  // backend they name. nullptr: none evaluated.
  const std::vector<model::Finding>* node_findings = nullptr;
  const model::ObservedSelection* observed = nullptr; // what TE's own log said of it, or nullptr
  const model::SelftestSummary* selftest = nullptr;   // when the self-test ran, or nullptr
  int workload_index = -1;                            // the workload's index among the self-test's
};

// Sets explanation.verdict. In order: no GPU known, or TE absent without an assumption ->
// unknown (with how to know); no backend selected -> no_backend; else the worst verdict effect of
// the findings (the workload's and the node's) that concern its backend and a self-test failure
// of that backend at this shape (fails), else runs. The fix is the best fix of the finding that
// decided it. Evidence: ran when the self-test ran the backend at this shape, observed when TE's
// log says what it selected, else predicted.
void decide_verdict(model::Explanation& explanation, const VerdictInputs& inputs);

// Joins each failed self-test check not yet explained to the finding that explains it: the
// first of findings whose `explains:` names the check's failure class and, when both name
// backends, concerns the check's backend; workload findings (a workload's own) only for checks
// at that workload. Sets explained_by and fix (the finding's best fix, else its first with a
// command). workloads: the explanations in the self-test's workload order, or empty.
void join_selftest_failures(model::SelftestSummary& selftest, const std::vector<model::Finding>& node_findings,
                            const std::vector<model::Explanation>& workloads);

} // namespace rules
