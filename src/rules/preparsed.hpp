// The shipped rules files parsed at build time (preparse_main.cpp writes preparsed_rules.cpp in
// the build tree from rules/): each file's text and its YAML tree in util::YamlDocument's binary
// form. The loader takes the tree of a file whose text is byte for byte one of these, and parses
// any other text (user rules, an updated bundle, an edited file) as before. Internal.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace rules::detail {

struct PreparsedFile {
  std::string_view relative; // its name relative to rules/
  std::string_view text;     // the file as it was at build time
  std::string_view tree; // YamlDocument::to_binary() of its parse
};

// The database digest's FNV-1a seed: the standard offset basis (util::k_fnv_offset is another
// number, which the fingerprints made with it keep).
inline constexpr std::uint64_t k_digest_seed = 0xcbf29ce484222325ULL;

// Every shipped file that parsed at build time, sorted by relative name (as the loader sorts).
std::span<const PreparsedFile> preparsed_files();
// The database digest (database_digest) of exactly preparsed_files(), in their order; empty when
// a shipped file did not parse (then no load is the shipped set).
std::string_view preparsed_digest();

// The entry whose text equals text byte for byte, or nullptr.
const PreparsedFile* preparsed_file(std::string_view text);
// The binary tree of a text equal to one of preparsed_files()' texts; empty for any other text.
std::string_view preparsed_tree(std::string_view text);

} // namespace rules::detail
