// A read-only YAML tree built with libyaml's event parser, for the rules loader (and, through
// check_yaml in input_guard.hpp, the gate every yaml-cpp reader passes first). It offers the
// small part of yaml-cpp's Node interface the loader uses (IsMap/IsSequence/IsScalar/IsNull,
// Scalar, Mark, iteration with .first/.second for mappings) so loader.cpp reads the same with
// either; the point is speed: yaml-cpp's scanner spent ~70% of `check` (callgrind, 300 M
// instructions for the 250 KB database), libyaml's C scanner a small fraction of that.
// Marks are 0-based line/column like yaml-cpp's. Nodes point into their YamlDocument and are
// valid while it lives. The parse applies the input limits (input_guard.hpp) while it builds.
#pragma once

#include "util/input_guard.hpp"

#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace util {

struct YamlMark {
  int line = 0;   // 0-based
  int column = 0; // 0-based
};

struct YamlData;
struct YamlEntry;

class YamlNode {
public:
  YamlNode(); // a null node
  explicit YamlNode(const YamlData* data) : m_data(data) {}

  // yaml-cpp's names, so that loader.cpp reads the same with either tree.
  // NOLINTBEGIN(readability-identifier-naming)
  bool IsNull() const;
  bool IsScalar() const;
  bool IsSequence() const;
  bool IsMap() const;
  // The scalar's text; "" for anything else (as yaml-cpp).
  const std::string& Scalar() const;
  YamlMark Mark() const;
  // NOLINTEND(readability-identifier-naming)

  // Sequence items (as nodes), or mapping entries (with .first = key, .second = value).
  const YamlEntry* begin() const;
  const YamlEntry* end() const;
  std::size_t size() const;

private:
  friend class YamlDocument; // to_binary numbers the nodes
  const YamlData* m_data;
};

// What iterating a node yields: the item itself for a sequence, key/value for a mapping.
struct YamlEntry : YamlNode {
  YamlEntry(YamlNode self, YamlNode key, YamlNode value) : YamlNode(self), first(key), second(value) {}
  YamlNode first;
  YamlNode second;
};

enum class YamlType { null, scalar, sequence, map };

struct YamlData {
  YamlType type = YamlType::null;
  std::string scalar;
  YamlMark mark;
  std::vector<YamlEntry> children;
};

struct YamlError {
  std::string message; // libyaml's problem (and context), e.g. "mapping values are not allowed in this context"
  YamlMark mark;
  // An input limit was hit (message "nested deeper than 64 levels (limit 64)"): the text may be
  // well-formed YAML, so callers do not call it malformed.
  bool limit = false;
};

// The one document of a YAML text. Plain scalars ~, null, Null, NULL and empty are null nodes
// (YAML 1.2 core schema, as yaml-cpp); quoted ones are strings. Aliases share their anchor's node.
class YamlDocument {
public:
  // nullopt and error set when the text is not well-formed YAML or breaks a limit: nesting deeper
  // than limits.max_depth, more than limits.max_nodes nodes with every alias expanded, an alias
  // inside the node it names (a cycle), a second document (yaml-cpp's Load drops it silently).
  static std::optional<YamlDocument> parse(std::string_view text, YamlError& error, const InputLimits& limits = {});
  YamlNode root() const { return YamlNode(m_root); }

  // The tree in a compact binary form (every node's type, mark, scalar and children; an alias is
  // the index of the node it names), for texts known at build time: from_binary gives back an
  // equal tree (the same marks, scalars and shared nodes) without parsing the YAML again.
  std::string to_binary() const;
  // nullopt when data is not what to_binary wrote (truncated, an index out of range).
  static std::optional<YamlDocument> from_binary(std::string_view data);

  YamlDocument() = default;
  YamlDocument(YamlDocument&&) = default;
  YamlDocument& operator=(YamlDocument&&) = default;

private:
  std::deque<YamlData> m_nodes; // stable addresses
  const YamlData* m_root = nullptr;
};

} // namespace util
