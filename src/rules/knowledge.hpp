// The edge of the knowledge: which of a node's facts lie beyond what the rules database models
// (model::Knowledge). The rules' `selection:` block names the newest TE release the selection was
// checked against (TE's conformance data) and the GPU architectures it was checked on; the
// catalog names the newest cuDNN and flash-attn releases the doctor knows. A fact beyond these
// still gets verdicts, extrapolated from the newest knowledge; this makes that visible.
#pragma once

#include "model/facts.hpp"
#include "model/finding.hpp"
#include "model/knowledge.hpp"
#include "rules/rules.hpp"

#include <optional>

namespace rules {

// What the rules know and which of the facts lie beyond it. Versions compare on their first
// three components: a patch release of the newest known one (9.27.0.51 after 9.27.0.42) is
// known, a newer patch level (9.27.1) is not. With te.version absent, the TE release the
// selection assumes (default_te_version) is named in assumed_te and is never extrapolated.
model::Knowledge knowledge_horizon(const RuleSet& rules, const model::Facts& facts);

// The warning that says so (id knowledge-extrapolated, area knowledge); nullopt when nothing
// is extrapolated.
std::optional<model::Finding> knowledge_finding(const model::Knowledge& knowledge);

} // namespace rules
