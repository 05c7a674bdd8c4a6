// yaml-cpp behind the hardened input layer: the one way a reader that works on a yaml-cpp tree
// gets one. The text is checked with libyaml first (check_yaml: depth, aliases, node budget, one
// document), yaml-cpp builds its tree, and then the tree yaml-cpp built is held to the same limits.
// Two parsers can read the same text differently: for libyaml a lone carriage return ends a line,
// for yaml-cpp it does not, so an alias that libyaml saw after its anchor's node had closed is,
// for yaml-cpp, inside it: a cycle that sent every recursive walk into a stack overflow (60 bytes,
// the fuzz campaign of 2026-11-29). What is walked is therefore checked as it will be walked.
#pragma once

#include "util/input_guard.hpp"
#include "util/yaml_tree.hpp"

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string_view>

namespace util {

// check_yaml, YAML::Load, then check_yaml_cpp_tree. Errors are "ORIGIN:LINE: WHAT (limit N)" as
// everywhere in the input layer; yaml-cpp's own parse errors "ORIGIN:LINE:COLUMN: message".
Result<YAML::Node> load_yaml(std::string_view text, std::string_view origin, const InputLimits& limits = {});

// A yaml-cpp exception (from Load or from reading the tree later) as a parse error:
// "ORIGIN:LINE:COLUMN: message", or "ORIGIN: message" where yaml-cpp has no position.
Error yaml_cpp_error(std::string_view origin, const YAML::Exception& e);

// The tree yaml-cpp built, walked without recursion: at most limits.max_depth open collections
// (a cycle is named as one) and limits.max_nodes nodes with aliases expanded. The first
// violation with the node's mark (limit set), or nothing.
std::optional<YamlError> yaml_cpp_tree_violation(const YAML::Node& root, const InputLimits& limits = {});
// The same as an input-layer error: "ORIGIN:LINE: WHAT (limit N)".
Result<void> check_yaml_cpp_tree(const YAML::Node& root, std::string_view origin, const InputLimits& limits = {});

} // namespace util
