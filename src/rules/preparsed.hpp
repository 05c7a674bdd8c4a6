// The shipped rules files parsed and compiled at build time (preparse_main.cpp writes
// preparsed_rules.cpp in the build tree from rules/): each file's text, its YAML tree in
// util::YamlDocument's binary form and its compiled form (compiled_form.hpp). The loader takes
// the compiled form of a file whose name and text are byte for byte one of these (when it does
// not compile test cases), else the tree of a file whose text is, and parses any other text (user
// rules, an updated bundle, an edited file) as before. Internal.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace rules::detail {

struct PreparsedFile {
  std::string_view relative; // its name relative to rules/
  std::string_view text;     // the file as it was at build time
  std::string_view tree; // YamlDocument::to_binary() of its parse
  // What compiling it on its own gives (compiled_form.hpp), for loads with TestCases::count;
  // empty when it does not compile without a diagnostic.
  std::string_view compiled;
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
