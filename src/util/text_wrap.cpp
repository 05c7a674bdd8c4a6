// Breaking long lines at spaces, counting what a terminal shows: UTF-8 characters, not bytes,
// and no column for a colour sequence.
#include "util/text_wrap.hpp"

#include <algorithm>

namespace util {

namespace {

// Byte length of the escape sequence starting at text[i] ("\x1b[1;31m"), 0 when none starts there.
std::size_t escape_length(std::string_view text, std::size_t i) {
  if (text[i] != '\x1b' || i + 1 >= text.size() || text[i + 1] != '[') return 0;
  std::size_t j = i + 2;
  while (j < text.size() && !(text[j] >= 0x40 && text[j] <= 0x7e)) ++j;
  return j < text.size() ? j - i + 1 : 0;
}

std::string wrap_line(std::string_view line, std::size_t width) {
  std::size_t indent = line.find_first_not_of(' ');
  if (indent == std::string_view::npos) return std::string(line);
  std::size_t continuation = std::min(indent + 2, width / 2);
  std::string out;
  std::size_t start = 0;     // byte where the current output line's text starts
  std::size_t used = indent; // columns on the current output line
  std::size_t i = indent;
  std::size_t last_space = std::string_view::npos; // byte of the last space a break may replace
  while (i < line.size()) {
    if (auto esc = escape_length(line, i)) {
      i += esc;
      continue;
    }
    if (line[i] == ' ') last_space = i;
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) ++used;
    if (used > width && last_space != std::string_view::npos) {
      out.append(line.substr(start, last_space - start));
      out += '\n';
      out.append(continuation, ' ');
      start = last_space + 1;
      // The columns of the carried-over text: from the break to i.
      used = continuation;
      for (std::size_t k = start; k <= i && k < line.size(); ++k) {
        if (auto esc = escape_length(line, k)) {
          k += esc - 1;
          continue;
        }
        if ((static_cast<unsigned char>(line[k]) & 0xC0) != 0x80) ++used;
      }
      last_space = std::string_view::npos;
    }
    ++i;
  }
  out.append(line.substr(start));
  return out;
}

} // namespace

std::string wrap_text(std::string_view text, std::size_t width) {
  if (width == 0) return std::string(text);
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  while (!text.empty()) {
    auto nl = text.find('\n');
    auto line = text.substr(0, nl);
    out += wrap_line(line, width);
    if (nl == std::string_view::npos) break;
    out += '\n';
    text.remove_prefix(nl + 1);
  }
  return out;
}

} // namespace util
