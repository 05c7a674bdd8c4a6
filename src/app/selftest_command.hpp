// The self-test as a step of a command: `selftest` runs it on its own, `check --selftest` folds
// it into the report. Both merge its facts (selftest.*) into the node's facts before the rules.
#pragma once

#include "app/options.hpp"
#include "model/explanation.hpp"
#include "model/facts.hpp"
#include "model/selftest_summary.hpp"
#include "model/workload.hpp"
#include "rules/rules.hpp"

#include <string>
#include <vector>

namespace app {

// Runs every check for the workloads, adds selftest.* facts to facts and returns the result for
// the report.
model::SelftestSummary run_selftest_step(const Options& options, model::Facts& facts, const rules::RuleSet& rules,
                                         const std::vector<model::Workload>& workloads);

// Each failed check joined to the finding that explains it (a rule's `explains:`: the workload's
// own findings, then node_findings), and, on a node where GPU checks ran, each environment fix
// of those findings verified by re-running the failing check alone with it applied
// (selftest::verify_env_fixes). Called once before the verdicts (node findings) and once after
// (the workloads' findings); a check already explained or tried is left as it is.
void explain_selftest_failures(model::SelftestSummary& summary, const std::vector<model::Finding>& node_findings,
                               const std::vector<model::Explanation>& workloads = {});

} // namespace app
