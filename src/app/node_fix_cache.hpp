// check's node fix searches across runs. On a GPU node with TE the fix search for the node's
// findings is most of what check adds to the probe (about 4 ms on the H200 node), and it is a
// function of the facts and the rules alone: a prolog or timer that checks an unchanged node asks
// the same question every time. The answer is kept in the cache directory with its whole question
// (the facts, without the probe's timings, and the rules' digest; the binary's identity is the
// cache file's tag) and reused only when that question is the same, byte for byte.
#pragma once

#include "app/options.hpp"
#include "model/facts.hpp"
#include "model/finding.hpp"
#include "rules/fix_search.hpp"
#include "rules/rules.hpp"

#include <vector>

namespace app {

// rules::verify_node_findings, answered from the cache when this node's facts and these rules were
// searched before (--no-cache: always searched). findings are evaluate_node's for these facts.
void verify_node_findings_cached(const Options& options, const rules::RuleSet& rules, const model::Facts& facts,
                                 std::vector<model::Finding>& findings, const rules::SearchOptions& search);

// The encoding of the node findings' fixes, and back; decode fails (false, findings unchanged)
// unless the text holds fixes for exactly these findings (ids, in order). Public for the tests.
std::string encode_node_fixes(const std::vector<model::Finding>& findings);
bool decode_node_fixes(std::string_view text, std::vector<model::Finding>& findings);

} // namespace app
