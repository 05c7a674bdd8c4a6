// The one pipeline that turns workloads into verdicts, shared by explain, check (and so run,
// daemon and the preflight) and selftest: each workload is explained with its facts (a TE log's
// versions over the node's), its findings get the fix search, one pin per package is kept
// within each context of facts, and then each workload gets its verdict (rules::decide_verdict)
// from the explanation, the node findings that concern its backend and the self-test's checks
// at its shape. Renderers and carriers only read what this produced.
#pragma once

#include "app/fix_cache.hpp"
#include "app/workloads.hpp"
#include "model/explanation.hpp"
#include "model/selftest_summary.hpp"
#include "rules/fix_search.hpp"

#include <functional>
#include <memory>
#include <vector>

namespace app {

enum class FixSearch { yes, no };

struct DiagnosisInputs {
  FixSearch fixes = FixSearch::yes; // no: explain and verdict only (a sweep cell)
  // The node's findings, already evaluated (and, with fixes, already searched): those with a
  // verdict effect concern each workload whose backend they name; with fixes they also take part
  // in the one-pin rule (their pins may change). nullptr: none.
  std::vector<model::Finding>* node_findings = nullptr;
  const model::SelftestSummary* selftest = nullptr; // its checks carry the workload index they ran for
  // Work that must be done before the pins and verdicts but not before the workloads'
  // explanations and fix searches, which read no node finding: check's node fix search. It runs
  // beside them, on a thread of its own; an exception from it is rethrown here.
  std::function<void()> beside;
  // Where the workloads' fix searches may be answered from (check's; app/fix_cache.hpp).
  // nullptr: searched.
  const FixCache* cache = nullptr;
};

// The explanations of workloads (observed: one per workload, null where no TE log), in order,
// each with its verdict. util::Fatal on a TE log's fact that the catalog refuses.
std::vector<model::Explanation> diagnose(const rules::RuleSet& rules, const model::Facts& node,
                                         const std::vector<model::Workload>& workloads,
                                         const std::vector<std::shared_ptr<const model::ObservedSelection>>& observed,
                                         const DiagnosisInputs& inputs);

// The node findings explain and selftest need for verdicts: the node rules' findings that have a
// verdict effect, with their fixes searched (CUDNN_PATH for two cuDNN copies).
std::vector<model::Finding> verdict_node_findings(const rules::RuleSet& rules, const model::Facts& node);

// Exit code of explain: 2 when any workload fails or has no backend, else 3 when any is unknown,
// else 1 when any is at risk or has a warning finding, else 0.
int verdict_exit_code(const std::vector<model::Explanation>& explanations);

} // namespace app
