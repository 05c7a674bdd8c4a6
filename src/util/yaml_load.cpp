#include "util/yaml_load.hpp"

#include <string>
#include <vector>

namespace util {

namespace {

YamlError violation(const YAML::Node& at, std::string what) {
  YamlError e;
  e.message = std::move(what);
  e.mark = YamlMark{at.Mark().line, at.Mark().column};
  e.limit = true;
  return e;
}

// A collection's children in order: a map's keys and values, a sequence's items.
std::vector<YAML::Node> children_of(const YAML::Node& node) {
  std::vector<YAML::Node> children;
  if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      children.push_back(it->first);
      children.push_back(it->second);
    }
  } else if (node.IsSequence()) {
    for (auto it = node.begin(); it != node.end(); ++it) children.push_back(*it);
  }
  return children;
}

} // namespace

std::optional<YamlError> yaml_cpp_tree_violation(const YAML::Node& root, const InputLimits& limits) {
  struct Open {
    YAML::Node node;
    std::vector<YAML::Node> children;
    std::size_t next = 0;
  };
  std::vector<Open> open;
  std::size_t visited = 1;
  if (root.IsMap() || root.IsSequence()) open.push_back({root, children_of(root), 0});
  while (!open.empty()) {
    if (open.back().next == open.back().children.size()) {
      open.pop_back();
      continue;
    }
    YAML::Node child = open.back().children[open.back().next++];
    if (++visited > limits.max_nodes)
      return violation(child, "more than " + std::to_string(limits.max_nodes) + " nodes with aliases expanded (limit " +
                                  std::to_string(limits.max_nodes) + ")");
    if (!child.IsMap() && !child.IsSequence()) continue;
    if (open.size() + 1 > limits.max_depth) {
      // Only a cycle or real nesting gets this deep; which one is said (the path is short).
      for (const auto& o : open)
        if (o.node.is(child))
          return violation(child, "an alias inside the node it names, a cycle, as yaml-cpp reads the text (limit: none)");
      return violation(child, "nested deeper than " + std::to_string(limits.max_depth) + " levels (limit " +
                                  std::to_string(limits.max_depth) + ")");
    }
    open.push_back({child, children_of(child), 0});
  }
  return std::nullopt;
}

Result<void> check_yaml_cpp_tree(const YAML::Node& root, std::string_view origin, const InputLimits& limits) {
  auto v = yaml_cpp_tree_violation(root, limits);
  if (!v) return {};
  std::string where(origin);
  if (v->mark.line >= 0) where += ":" + std::to_string(v->mark.line + 1);
  return Error{ErrorKind::parse, where + ": " + v->message};
}

Error yaml_cpp_error(std::string_view origin, const YAML::Exception& e) {
  std::string where(origin);
  if (!e.mark.is_null()) where += ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
  return Error{ErrorKind::parse, where + ": " + e.msg};
}

Result<YAML::Node> load_yaml(std::string_view text, std::string_view origin, const InputLimits& limits) {
  NVTE_TRY_VOID(check_yaml(text, origin, limits));
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return yaml_cpp_error(origin, e);
  }
  NVTE_TRY_VOID(check_yaml_cpp_tree(root, origin, limits));
  return root;
}

} // namespace util
