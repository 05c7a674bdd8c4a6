#include "app/diagnosis.hpp"

#include "app/rules_loading.hpp"
#include "rules/verdict.hpp"
#include "util/parallel.hpp"

#include <algorithm>
#include <future>

namespace app {

std::vector<model::Explanation> diagnose(const rules::RuleSet& rules, const model::Facts& node,
                                         const std::vector<model::Workload>& workloads,
                                         const std::vector<std::shared_ptr<const model::ObservedSelection>>& observed,
                                         const DiagnosisInputs& inputs) {
  const std::size_t n = workloads.size();
  auto observed_at = [&](std::size_t i) { return i < observed.size() ? observed[i].get() : nullptr; };
  // Each workload's facts first, on this thread: a TE log's bad value is util::Fatal, which must
  // not be thrown on a worker.
  std::vector<model::Facts> scratch(n);
  std::vector<const model::Facts*> facts(n);
  for (std::size_t i = 0; i < n; ++i) facts[i] = &facts_for(node, observed_at(i), scratch[i]);

  rules::SearchOptions search = fix_search_options();
  std::vector<model::Explanation> explanations(n);
  std::future<void> beside;
  if (inputs.beside) {
    if (util::available_cpus() > 1) beside = std::async(std::launch::async, inputs.beside);
    else inputs.beside();
  }
  // Each workload's explanation and fix search stand alone: they run on several threads.
  util::parallel_for(n, std::min(util::available_cpus(), 8u), [&](std::size_t i) {
    explanations[i] = rules::explain(rules, *facts[i], workloads[i]);
    if (inputs.fixes == FixSearch::no) return;
    if (inputs.cache) inputs.cache->verify_explanation(rules, *facts[i], explanations[i], search);
    else rules::verify_explanation(rules, *facts[i], explanations[i], search);
  });
  if (beside.valid()) beside.get();
  if (inputs.fixes == FixSearch::yes) {
    std::vector<std::shared_ptr<const model::ObservedSelection>> per_workload(n);
    for (std::size_t i = 0; i < n && i < observed.size(); ++i) per_workload[i] = observed[i];
    if (inputs.cache) inputs.cache->unify_pins(rules, node, explanations, per_workload, inputs.node_findings, search);
    else unify_pins_per_context(rules, node, explanations, per_workload, inputs.node_findings, search);
  }
  for (std::size_t i = 0; i < n; ++i) {
    rules::VerdictInputs in;
    in.facts = facts[i];
    in.node_findings = inputs.node_findings;
    in.observed = observed_at(i);
    in.selftest = inputs.selftest;
    in.workload_index = static_cast<int>(i);
    rules::decide_verdict(explanations[i], in);
  }
  return explanations;
}

std::vector<model::Finding> verdict_node_findings(const rules::RuleSet& rules, const model::Facts& node) {
  std::vector<model::Finding> findings = rules::evaluate_node(rules, node);
  std::erase_if(findings, [](const model::Finding& f) { return f.verdict == model::VerdictEffect::none; });
  rules::verify_node_findings(rules, node, findings, fix_search_options());
  return findings;
}

int verdict_exit_code(const std::vector<model::Explanation>& explanations) {
  bool fails = false, unknown = false, warn = false;
  for (const auto& e : explanations) {
    switch (model::exit_code(e.verdict.verdict)) {
    case 2: fails = true; break;
    case 3: unknown = true; break;
    case 1: warn = true; break;
    default: break;
    }
    for (const auto& f : e.findings) warn = warn || f.severity != model::Severity::info;
  }
  return fails ? 2 : unknown ? 3 : warn ? 1 : 0;
}

} // namespace app
