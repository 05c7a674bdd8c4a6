// The shipped rules database (NVTE_RULES_DIR, defined by the test target), loaded once per test
// binary; a database that does not load throws with its diagnostics.
#pragma once

#include "rules/rules.hpp"

#include <stdexcept>

namespace test_support {

inline const rules::RuleSet& shipped_rules() {
  static const rules::RuleSet set = [] {
    auto loaded = rules::RuleSet::load({NVTE_RULES_DIR}, rules::TestCases::count);
    if (!loaded.rules) throw std::runtime_error(rules::render(loaded.diagnostics));
    return std::move(*loaded.rules);
  }();
  return set;
}

} // namespace test_support
