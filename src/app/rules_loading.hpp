// Loading the rules database for a command: a database with any problem is not used; the
// first problem becomes the one-line reason of exit 3 (`rules lint` shows them all). The rules'
// `tests:` cases are counted, not compiled (no command but lint runs them; rules::TestCases).
#pragma once

#include "app/options.hpp"
#include "rules/rules.hpp"

namespace app {

rules::RuleSet load_rules(const Options& options);

} // namespace app
