// The shipped rules files parsed at build time (preparse_main.cpp writes preparsed_rules.cpp in
// the build tree from rules/): each file's text and its YAML tree in util::YamlDocument's binary
// form. The loader takes the tree of a file whose text is byte for byte one of these, and parses
// any other text (user rules, an updated bundle, an edited file) as before. Internal.
#pragma once

#include <span>
#include <string_view>

namespace rules::detail {

struct PreparsedFile {
  std::string_view text; // the file as it was at build time
  std::string_view tree; // YamlDocument::to_binary() of its parse
};

// Every shipped file that parsed at build time, in no particular order.
std::span<const PreparsedFile> preparsed_files();

// The binary tree of a text equal to one of preparsed_files()' texts; empty for any other text.
std::string_view preparsed_tree(std::string_view text);

} // namespace rules::detail
