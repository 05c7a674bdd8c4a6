#include "util/strings.hpp"

#include "util/edit_distance.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <ctime>

namespace util {

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n\f\v";
  auto begin = s.find_first_not_of(ws);
  if (begin == std::string_view::npos) return {};
  auto end = s.find_last_not_of(ws);
  return s.substr(begin, end - begin + 1);
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    auto pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.starts_with(prefix); }
bool ends_with(std::string_view s, std::string_view suffix) { return s.ends_with(suffix); }

std::string path_file_name(std::string_view path) {
  auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c); });
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::optional<long long> parse_int(std::string_view s) {
  if (s.empty()) return std::nullopt;
  long long value = 0;
  const char* begin = s.data();
  if (*begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<double> parse_double(std::string_view s) {
  if (s.empty()) return std::nullopt;
  double value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  while (i < text.size()) {
    unsigned char lead = byte(i);
    if (lead < 0x80) {
      out += static_cast<char>(lead);
      ++i;
      continue;
    }
    // Length and the allowed range of the second byte (which excludes overlong forms,
    // surrogates and code points above U+10FFFF), per Unicode table 3-7.
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) length = 2;
    else if (lead == 0xE0) length = 3, low = 0xA0;
    else if (lead == 0xED) length = 3, high = 0x9F;
    else if (lead >= 0xE1 && lead <= 0xEF) length = 3;
    else if (lead == 0xF0) length = 4, low = 0x90;
    else if (lead == 0xF4) length = 4, high = 0x8F;
    else if (lead >= 0xF1 && lead <= 0xF3) length = 4;
    std::size_t good = length ? 1 : 0;
    while (good && good < length && i + good < text.size()) {
      unsigned char c = byte(i + good);
      bool ok = good == 1 ? (c >= low && c <= high) : (c >= 0x80 && c <= 0xBF);
      if (!ok) break;
      ++good;
    }
    if (length && good == length) {
      out.append(text.substr(i, length));
    } else {
      out += "\xEF\xBF\xBD";
    }
    i += std::max<std::size_t>(good, 1);
  }
  return out;
}

std::string shell_quote(std::string_view word) {
  if (!word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
      })) {
    return std::string(word);
  }
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  out += "'";
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) { return edit_distance(a, b, a.size() + b.size()); }

std::size_t edit_distance(std::string_view a, std::string_view b, std::size_t limit) {
  if (a.size() < b.size()) std::swap(a, b); // the distance is symmetric; the row runs over the shorter
  limit = std::min(limit, a.size());        // no distance exceeds the longer length
  const std::size_t over = limit + 1;
  if (a.size() - b.size() > limit) return over;
  if (b.empty()) return a.size();
  // row[j]: the distance of a's first i and b's first j characters, capped at `over`. A cell with
  // |i - j| > limit is at least that far, so each row computes only the band around its diagonal,
  // and stops the whole table once no cell of a row is within the limit.
  std::vector<std::size_t> row(b.size() + 1, over);
  for (std::size_t j = 0; j <= std::min(b.size(), limit); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t lo = i > limit ? i - limit : 1;
    std::size_t hi = std::min(b.size(), i + limit);
    std::size_t diagonal = row[lo - 1];
    row[lo - 1] = lo == 1 ? std::min(i, over) : over;
    std::size_t lowest = row[lo - 1];
    for (std::size_t j = lo; j <= hi; ++j) {
      std::size_t above = row[j];
      row[j] = std::min({above + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1), over});
      diagonal = above;
      lowest = std::min(lowest, row[j]);
    }
    if (lowest > limit) return over;
  }
  return row[b.size()];
}

namespace {

bool is_own_sgr(std::string_view text, std::size_t at) {
  for (std::string_view code : {"\x1b[0m", "\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[36m"}) {
    if (text.substr(at, code.size()) == code) return true;
  }
  return false;
}

void append_hex(std::string& out, std::string_view prefix, unsigned value) {
  static constexpr char k_digits[] = "0123456789abcdef";
  out += prefix;
  out += k_digits[(value >> 4) & 0xf];
  out += k_digits[value & 0xf];
}

} // namespace

std::string terminal_safe(std::string_view text, Sgr sgr) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c == 0x1b && sgr == Sgr::keep && is_own_sgr(text, i)) {
      out += text[i];
      continue;
    }
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      append_hex(out, "\\x", c);
      continue;
    }
    // C1 controls as UTF-8: C2 80 .. C2 9F (some terminals act on them like ESC sequences).
    if (c == 0xc2 && i + 1 < text.size()) {
      auto next = static_cast<unsigned char>(text[i + 1]);
      if (next >= 0x80 && next <= 0x9f) {
        append_hex(out, "\\u00", next);
        ++i;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

std::string one_line(std::string_view text) {
  if (text.find_first_of("\r\n") == std::string_view::npos) return std::string(text);
  std::string out;
  for (char c : text) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else out += c;
  }
  return out;
}

std::string rfc3339(std::int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm utc{};
  ::gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

} // namespace util
