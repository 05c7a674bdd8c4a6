// Where a rules-file problem is: a Diagnostic's rendering (file:line:column, the source line and a
// caret under the span) and SourceFile, which maps offsets and libyaml marks in a file's raw text to
// lines and columns, including positions inside plain, quoted and block scalars.
#include "rules/loader_internal.hpp"
#include "rules/preparsed.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace rules {

std::string Diagnostic::rendered() const {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line) + ":" + std::to_string(std::max(column, 1));
  out += ": error: " + message + "\n";
  if (!source_line.empty() && line > 0) {
    out += "  " + source_line + "\n  ";
    for (int i = 1; i < column && static_cast<std::size_t>(i - 1) < source_line.size(); ++i)
      out += source_line[static_cast<std::size_t>(i - 1)] == '\t' ? '\t' : ' ';
    out += '^';
    for (int i = 1; i < length; ++i) out += '~';
    out += "\n";
  }
  if (!hint.empty()) out += "  hint: " + hint + "\n";
  return out;
}

std::string render(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const auto& d : diagnostics) out += d.rendered();
  return out;
}

namespace detail {

SourceFile::SourceFile(std::string display_name, std::string relative_name, std::string content)
    : name(std::move(display_name)), relative(std::move(relative_name)), text(std::move(content)) {
  line_starts.push_back(0);
  // find() is memchr: a byte-by-byte loop was 4 M of the 6 M instructions of reading the files.
  for (std::size_t i = text.find('\n'); i != std::string::npos; i = text.find('\n', i + 1)) line_starts.push_back(i + 1);
}

std::string SourceFile::line_text(int line) const {
  if (line < 1 || static_cast<std::size_t>(line) > line_starts.size()) return {};
  std::size_t begin = line_starts[static_cast<std::size_t>(line - 1)];
  std::size_t end = text.find('\n', begin);
  std::string s = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

Diagnostic SourceFile::at_offset(std::size_t offset, std::size_t length, std::string message, std::string hint) const {
  offset = std::min(offset, text.size());
  auto it = std::upper_bound(line_starts.begin(), line_starts.end(), offset);
  std::size_t line = static_cast<std::size_t>(it - line_starts.begin());
  std::size_t column = offset - line_starts[line - 1] + 1;
  Diagnostic d;
  d.file = name;
  d.line = static_cast<int>(line);
  d.column = static_cast<int>(column);
  d.source_line = line_text(d.line);
  if (d.source_line.size() > 400) d.source_line.clear(); // a caret under a huge line helps nobody
  std::size_t room = d.source_line.size() >= column ? d.source_line.size() - column + 1 : 1;
  d.length = static_cast<int>(std::clamp<std::size_t>(length, 1, std::max<std::size_t>(room, 1)));
  d.message = std::move(message);
  d.hint = std::move(hint);
  return d;
}

Diagnostic SourceFile::at_mark(int mark_line, int mark_column, std::string message, std::string hint) const {
  if (mark_line < 0) {
    Diagnostic d;
    d.file = name;
    d.message = std::move(message);
    d.hint = std::move(hint);
    return d;
  }
  return at_offset(mark_offset(mark_line, mark_column), 1, std::move(message), std::move(hint));
}

std::size_t SourceFile::mark_offset(int mark_line, int mark_column) const {
  if (mark_line < 0 || static_cast<std::size_t>(mark_line) >= line_starts.size()) return text.size();
  return std::min(line_starts[static_cast<std::size_t>(mark_line)] + static_cast<std::size_t>(std::max(mark_column, 0)), text.size());
}

std::size_t SourceFile::value_offset(std::size_t start, std::string_view value, std::size_t offset) const {
  std::size_t r = std::min(start, text.size());
  // Block scalars start after their header line; quoted ones after the quote.
  if (r < text.size() && (text[r] == '|' || text[r] == '>')) {
    auto newline = text.find('\n', r);
    r = newline == std::string::npos ? text.size() : newline + 1;
  } else if (r < text.size() && (text[r] == '"' || text[r] == '\'')) {
    ++r;
  }
  auto skippable = [](char c) { return std::isspace(static_cast<unsigned char>(c)) || c == '\\' || c == '"' || c == '\''; };
  auto find = [&](char c) {
    // The raw position of the value character c: equal, or a line break folded into a space.
    for (std::size_t probe = r; probe < text.size() && probe - r < 512; ++probe) {
      if (text[probe] == c || (c == ' ' && text[probe] == '\n')) return probe;
      if (!skippable(text[probe])) break;
    }
    return std::string::npos;
  };
  offset = std::min(offset, value.size());
  for (std::size_t k = 0; k < offset; ++k) {
    std::size_t at = find(value[k]);
    if (at == std::string::npos) return std::min(r, text.size());
    r = at + 1;
  }
  if (offset < value.size()) {
    std::size_t at = find(value[offset]);
    if (at != std::string::npos) r = at;
  }
  return std::min(r, text.size());
}

const PreparsedFile* preparsed_file(std::string_view text) {
  for (const auto& file : preparsed_files())
    if (file.text.size() == text.size() && file.text == text) return &file;
  return nullptr;
}

std::string_view preparsed_tree(std::string_view text) {
  const PreparsedFile* file = preparsed_file(text);
  return file ? file->tree : std::string_view{};
}

} // namespace detail

} // namespace rules
