// JSON forms of the output model's parts, shared by the check and explain renderers.
#pragma once

#include "model/explanation.hpp"

#include <nlohmann/json.hpp>

namespace report {

using Json = nlohmann::ordered_json;

Json finding_to_json(const model::Finding& finding);
Json explanation_to_json(const model::Explanation& explanation);
// The facts as the nested object of the Facts snapshot (without the schema wrapper).
Json facts_to_json(const model::Facts& facts);

} // namespace report
