// JSON forms of the output model's parts, shared by the check and explain renderers.
#pragma once

#include "model/explanation.hpp"
#include "model/knowledge.hpp"

#include <nlohmann/json.hpp>

namespace report {

using Json = nlohmann::ordered_json;

Json finding_to_json(const model::Finding& finding);
Json explanation_to_json(const model::Explanation& explanation);
// The `knowledge` block of check and explain JSON: the newest releases and the architectures the
// rules model, and each fact beyond them (empty texts are null).
Json knowledge_to_json(const model::Knowledge& knowledge);
// The facts as the nested object of the Facts snapshot (without the schema wrapper).
Json facts_to_json(const model::Facts& facts);

} // namespace report
