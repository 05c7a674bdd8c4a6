// Loading the rules database for a command: a database with any problem is not used; the
// first problem becomes the one-line reason of exit 3 (`rules lint` shows them all). The rules'
// `tests:` cases are counted, not compiled (no command but lint runs them; rules::TestCases).
#pragma once

#include "app/options.hpp"
#include "rules/fix_search.hpp"
#include "rules/rules.hpp"

namespace app {

rules::RuleSet load_rules(const Options& options);

// The fix search's settings for this node: the default budget and src/probe's load-order model
// (which copy TE and torch load after a wheel is added), wired here because rules may not know
// probe.
rules::SearchOptions fix_search_options();

} // namespace app
