// The shell reader's first layer: the tokens of a launch script (words kept as segments of
// literal text, ${parameter}, $((arithmetic)) and $(command), each marked quoted or not, so that
// expansion can split exactly where the shell would; operators; newlines). The lexer joins
// continued lines, skips comments and collects heredoc bodies. Internal to shell_words.cpp.
#pragma once

#include "util/result.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace workload::shell {

struct Segment {
  enum class Kind { text, param, arith, command };
  Kind kind = Kind::text;
  std::string text; // literal text; a parameter's name or ${...} inside; an expression; a command
  bool quoted = false;
};

struct RawWord {
  std::vector<Segment> segments;
  int line = 0;
  bool is_array = false; // NAME=( ... ) or NAME+=( ... )
  std::string array_name;
  bool array_append = false;
  std::vector<RawWord> elements; // the array's words

  // The word's text when it is plain unquoted literal text (keywords, operators of [[ ]]).
  std::optional<std::string> plain() const {
    std::string out;
    for (const auto& s : segments) {
      if (s.kind != Segment::Kind::text || s.quoted) return std::nullopt;
      out += s.text;
    }
    return out;
  }
};

struct Token {
  enum class Type { word, op, newline, end };
  Type type = Type::end;
  RawWord word;
  std::string op;
  int line = 0;
};

struct Heredoc {
  std::string body;
  int line = 0; // the first body line
};

// A shell variable name: a letter or _, then letters, digits or _.
bool is_name_start(char c);
bool is_name_char(char c);
bool valid_name(std::string_view s);

// Turns a script's text into tokens, one at a time; errors are "source:line: reason".
class Lexer {
public:
  Lexer(std::string_view text, std::string_view source, int first_line);

  util::Result<Token> next();

  // The heredoc bodies read at the last newline, in order.
  std::vector<Heredoc> take_heredocs();
  int line() const;

  util::Error error(const std::string& message) const;

private:
  void skip_blanks();

  std::string read_operator();

  // Text up to the closer that matches opener, honouring nesting and quotes; m_pos is just after
  // the opener and ends just after the closer.
  util::Result<std::string> balanced(char opener, char closer);

  // After '$' (m_pos at the character following it).
  util::Result<void> read_dollar(RawWord& word, std::string& literal, bool quoted);

  util::Result<RawWord> read_word();

  util::Result<void> read_heredocs();

  std::string_view m_text;
  std::string_view m_source;
  std::size_t m_pos = 0;
  int m_line = 1;
  std::vector<std::pair<std::string, bool>> m_pending; // delimiter, <<- (strip tabs)
  std::vector<Heredoc> m_ready;
};

} // namespace workload::shell
