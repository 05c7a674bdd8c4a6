// The self-test as a step of a command: `selftest` runs it on its own, `check --selftest` folds
// it into the report. Both merge its facts (selftest.*) into the node's facts before the rules.
#pragma once

#include "app/options.hpp"
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

} // namespace app
