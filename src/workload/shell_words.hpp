// The words a shell script writes down, without running it. Launch scripts keep a program's
// arguments in variables, arrays, strings and heredocs, spread over continued lines; this reads
// the part of POSIX sh / bash that decides those words: assignments (strings, arrays, +=,
// export/declare/local), parameter expansion (${VAR:-default}, ${ARR[@]}, ${#VAR}, ${VAR,,}),
// $((arithmetic)), quoting and word splitting, if/elif/else on test expressions ([ ], [[ ]],
// test, true, false), && and ||, and heredocs (read as scripts of their own). It runs no
// command: a $(command) or `command` is a value it cannot know, and so is a variable set neither
// by the script nor in the environment it is given; loops, case branches and function bodies may
// or may not run, and their words say so.
#pragma once

#include "util/result.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace workload {

// A part of a word whose value the reader cannot know, with the reason ("$SEQ_LEN is set
// neither in train.sh nor in the environment"). An empty range marks where an unknown value
// expanded to nothing.
struct ScriptUnknown {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::string why;
};

struct ScriptWord {
  std::string text;
  int line = 0;                      // 1-based line of the script where the word was written
  std::vector<ScriptUnknown> unknown; // empty when every character of text is known
};

// The pieces of a text between blanks, as [begin, end) offsets: sorted, a blank between two.
using TextPieces = std::vector<std::pair<std::size_t, std::size_t>>;
TextPieces pieces_between(std::string_view text, std::string_view blanks);

// The pieces [first, last) an unknown range [begin, end) touches: those it overlaps, or for an
// empty range the one whose ends hold it. By binary search: a long value split into many pieces
// has as many unknown ranges, and asking each range about each piece took seconds (a fuzzer's
// timeout, 2026-11-29).
std::pair<std::size_t, std::size_t> pieces_touched(const TextPieces& pieces, std::size_t begin, std::size_t end);

// Values of variables the script reads but does not set (the environment it would run in).
using ScriptEnvironment = std::function<std::optional<std::string>(std::string_view name)>;

// Every word the script passes or stores, in the order it writes them: each command's words
// after expansion, each array element, each value assigned to a variable (one word, which may
// hold many arguments), each heredoc's words. Fails with "source:line: reason" on what it cannot
// read (an unterminated quote, `if` without `fi`, a ${...} form it does not know).
util::Result<std::vector<ScriptWord>> script_words(std::string_view text, std::string_view source, const ScriptEnvironment& environment);

} // namespace workload
