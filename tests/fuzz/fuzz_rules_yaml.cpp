// Fuzz target: the rules YAML loader (RuleSet::load_text: YAML, schema, conditions, templates,
// test cases) and, for a database that loads, node evaluation, explain with a default workload,
// and the rule's own test cases.
#include "fuzz_common.hpp"
#include "rules/rules.hpp"
#include "workload/workload_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto loaded = rules::RuleSet::load_text(fuzz::as_text(data, size), "fuzz.yaml");
  for (const auto& d : loaded.diagnostics) (void)d.rendered();
  if (!loaded.rules) return 0;
  (void)loaded.rules->rule_summaries();
  (void)rules::evaluate_node(*loaded.rules, fuzz::small_node());
  model::Workload workload;
  if (workload::finish_workload(workload).ok()) (void)rules::explain(*loaded.rules, fuzz::small_node(), workload);
  for (const auto& test_case : loaded.rules->test_cases()) (void)rules::run_test_case(*loaded.rules, test_case);
  return 0;
}
