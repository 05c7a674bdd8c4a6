// The JSON scan is a small lexer: outside strings, '[' and '{' open a level and ']' and '}' close
// one; inside strings, a backslash skips the next byte. It does not validate (the parser does
// that next); it only has to see every bracket a parser would see, so the depth it measures is
// never below the parser's.
#include "util/input_guard.hpp"

#include "util/file.hpp"
#include "util/yaml_tree.hpp"

#include <algorithm>
#include <cstring>

namespace util {

namespace {

Error limit_error(std::string_view origin, std::size_t line, const std::string& what) {
  return Error{ErrorKind::parse, std::string(origin) + ":" + std::to_string(line) + ": " + what};
}

} // namespace

Result<std::string> read_input(const std::filesystem::path& path, const InputLimits& limits) {
  auto text = read_file(path, limits.max_bytes);
  if (!text && text.error().message.ends_with(" bytes"))
    return Error{ErrorKind::invalid, text.error().message + " (limit " + std::to_string(limits.max_bytes) + ")"};
  return text;
}

std::size_t line_at_offset(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

Result<void> check_json(std::string_view text, std::string_view origin, const InputLimits& limits) {
  // Strings are skipped with memchr (a fleet reads hundreds of MB of reports through here); the
  // line of an error is counted only when there is one.
  const char* data = text.data();
  const std::size_t size = text.size();
  std::size_t depth = 0, nodes = 0;
  for (std::size_t i = 0; i < size; ++i) {
    switch (data[i]) {
    case '"':
      // The string ends at the next quote not escaped by an odd run of backslashes.
      for (;;) {
        const void* quote = std::memchr(data + i + 1, '"', size - i - 1);
        if (!quote) {
          i = size;
          break;
        }
        std::size_t at = static_cast<std::size_t>(static_cast<const char*>(quote) - data);
        std::size_t slashes = 0;
        while (at - slashes > i + 1 && data[at - slashes - 1] == '\\') ++slashes;
        i = at;
        if (slashes % 2 == 0) break;
      }
      break;
    case '[':
    case '{':
      if (++depth > limits.max_depth)
        return limit_error(origin, line_at_offset(text, i),
                           "nested deeper than " + std::to_string(limits.max_depth) + " levels (limit " + std::to_string(limits.max_depth) +
                               ")");
      [[fallthrough]];
    case ',':
      if (++nodes > limits.max_nodes)
        return limit_error(origin, line_at_offset(text, i),
                           "more than " + std::to_string(limits.max_nodes) + " values (limit " + std::to_string(limits.max_nodes) + ")");
      break;
    case ']':
    case '}':
      if (depth > 0) --depth;
      break;
    default: break;
    }
  }
  return {};
}

Result<void> check_yaml(std::string_view text, std::string_view origin, const InputLimits& limits) {
  YamlError error;
  if (YamlDocument::parse(text, error, limits)) return {};
  // Malformed YAML is refused here too: yaml-cpp accepts some text libyaml does not, and the
  // limits are only known to hold for the text libyaml read.
  return limit_error(origin, static_cast<std::size_t>(error.mark.line) + 1,
                     error.limit ? error.message : "malformed YAML: " + error.message);
}

} // namespace util
