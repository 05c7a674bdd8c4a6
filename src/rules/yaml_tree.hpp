// The rules loader's names for the libyaml tree of the hardened input layer (util/yaml_tree.hpp),
// so loader.cpp reads as it did when the tree lived here.
#pragma once

#include "util/yaml_tree.hpp"

namespace rules::detail {

using util::YamlDocument;
using util::YamlEntry;
using util::YamlError;
using util::YamlMark;
using util::YamlNode;

} // namespace rules::detail
