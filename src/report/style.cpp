#include "report/style.hpp"

#include "util/strings.hpp"

namespace report {

std::string Style::wrap(std::string_view code, std::string_view s) const {
  if (!m_color) return std::string(s);
  return "\033[" + std::string(code) + "m" + std::string(s) + "\033[0m";
}

std::string Style::mark(model::Severity severity) const {
  switch (severity) {
  case model::Severity::error: return red("✗");
  case model::Severity::warning: return yellow("!");
  case model::Severity::info: return cyan("i");
  }
  return "?";
}

std::string render_fix(const model::Fix& fix, const Style& style, std::size_t indent) {
  std::string pad(indent, ' ');
  if (fix.command.empty()) return pad + "fix: " + wrap_text(fix.description, indent + 5) + "\n";
  std::string out = pad + "fix: " + style.bold(fix.command) + "\n";
  if (!fix.description.empty()) out += pad + "     " + wrap_text(fix.description, indent + 5) + "\n";
  return out;
}

std::string wrap_text(std::string_view text, std::size_t indent, std::size_t width) {
  // Rule messages are YAML block scalars with hard line breaks: a single newline is a space, a
  // blank line starts a new paragraph.
  std::string out;
  std::string pad(indent, ' ');
  std::string flowing(util::trim(text));
  std::vector<std::string> paragraphs(1);
  for (std::size_t i = 0; i < flowing.size(); ++i) {
    if (flowing[i] == '\n') {
      if (i + 1 < flowing.size() && flowing[i + 1] == '\n') {
        while (i + 1 < flowing.size() && flowing[i + 1] == '\n') ++i;
        paragraphs.emplace_back();
      } else {
        paragraphs.back() += ' ';
      }
    } else {
      paragraphs.back() += flowing[i];
    }
  }
  bool first_line = true;
  for (const auto& paragraph : paragraphs) {
    std::size_t column = indent;
    if (!first_line) out += "\n" + pad;
    first_line = false;
    bool first_word = true;
    for (auto word : util::split(paragraph, ' ')) {
      if (word.empty()) continue;
      if (!first_word && column + 1 + word.size() > width) {
        out += "\n" + pad;
        column = indent;
        first_word = true;
      }
      if (!first_word) {
        out += ' ';
        ++column;
      }
      out += word;
      column += word.size();
      first_word = false;
    }
  }
  return out;
}

} // namespace report
