// Fuzz target: the hardened input layer itself (src/util/input_guard.hpp, yaml_tree.hpp). The
// first byte picks JSON (even) or YAML (odd); the rest is the text. Properties: a JSON text the
// scan accepts never parses into a tree deeper than the limit (the scan sees every bracket the
// parser sees), and a YAML tree that parses stays within the depth limit and, with every alias
// expanded, within the node budget; neither check throws.
#include "fuzz_common.hpp"
#include "util/input_guard.hpp"
#include "util/yaml_tree.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>

namespace {

constexpr std::size_t k_depth = 8; // small limits, so that inputs reach them often
constexpr std::size_t k_nodes = 2000;

std::size_t json_depth(const nlohmann::json& j) {
  std::size_t deepest = 0;
  if (j.is_structured())
    for (const auto& child : j) deepest = std::max(deepest, json_depth(child));
  return j.is_structured() ? deepest + 1 : 0;
}

// Depth and expanded size of a YAML tree; gives up (returns false) past the limits.
bool yaml_within(const util::YamlNode& node, std::size_t depth, std::size_t& nodes) {
  if (++nodes > k_nodes) return false;
  if (!node.IsMap() && !node.IsSequence()) return true;
  if (depth + 1 > k_depth) return false;
  for (const auto& entry : node) {
    if (node.IsMap()) {
      if (!yaml_within(entry.first, depth + 1, nodes) || !yaml_within(entry.second, depth + 1, nodes)) return false;
    } else if (!yaml_within(entry, depth + 1, nodes)) {
      return false;
    }
  }
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view text = fuzz::as_text(data + 1, size - 1);
  util::InputLimits limits;
  limits.max_depth = k_depth;
  limits.max_nodes = k_nodes;
  if (data[0] % 2 == 0) {
    if (!util::check_json(text, "fuzz.json", limits)) return 0;
    auto parsed = util::parse_json<nlohmann::json>(text, "fuzz.json", limits);
    if (parsed && json_depth(*parsed) > k_depth) std::abort();
  } else {
    util::YamlError error;
    auto doc = util::YamlDocument::parse(text, error, limits);
    std::size_t nodes = 0;
    if (doc && !yaml_within(doc->root(), 0, nodes)) std::abort();
    (void)util::check_yaml(text, "fuzz.yaml", limits);
  }
  return 0;
}
