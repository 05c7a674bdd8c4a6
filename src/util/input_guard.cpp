// The JSON scan is a small lexer: outside strings, '[' and '{' open a level and ']' and '}' close
// one; inside strings, a backslash skips the next byte. It does not validate (the parser does
// that next); it only has to see every bracket a parser would see, so the depth it measures is
// never below the parser's. read_lines reads in 64 KiB chunks and hands each line over from the
// chunk itself where it can, copying only a line that straddles two chunks.
#include "util/input_guard.hpp"

#include "util/fd.hpp"
#include "util/file.hpp"
#include "util/yaml_tree.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

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

Result<void> read_lines(const std::filesystem::path& path, const std::function<Result<void>(std::string_view line)>& on_line,
                        const LineLimits& limits) {
  const bool standard_input = path == "-";
  const std::string origin = standard_input ? "standard input" : path.string();
  Fd owned;
  int fd = STDIN_FILENO;
  if (!standard_input) {
    // Blocking: a FIFO from a shell's <(...) has its writer on the way.
    owned.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (!owned) return Error{errno_kind(errno), "cannot open " + origin + ": " + errno_text(errno)};
    fd = owned.get();
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) return Error{errno_kind(errno), "cannot stat " + origin + ": " + errno_text(errno)};
  if (S_ISDIR(info.st_mode) || S_ISSOCK(info.st_mode))
    return Error{ErrorKind::invalid, origin + ": not a regular file (" + (S_ISDIR(info.st_mode) ? "a directory" : "a socket") + ")"};
  auto too_large = [&](const std::string& where, std::string_view what, std::size_t limit) {
    return Error{ErrorKind::invalid, origin + where + ": " + std::string(what) + "larger than " + std::to_string(limit) + " bytes (limit " +
                                         std::to_string(limit) + ")"};
  };
  std::string pending; // a line begun in an earlier chunk
  std::size_t total = 0, line = 0;
  std::vector<char> buffer(std::size_t{1} << 16);
  for (;;) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error{errno_kind(errno), "cannot read " + origin + ": " + errno_text(errno)};
    }
    if (n == 0) break;
    total += static_cast<std::size_t>(n);
    if (total > limits.max_bytes) return too_large("", "", limits.max_bytes);
    const char* at = buffer.data();
    const char* end = at + n;
    while (at < end) {
      const char* newline = static_cast<const char*>(std::memchr(at, '\n', static_cast<std::size_t>(end - at)));
      std::string_view piece(at, static_cast<std::size_t>((newline ? newline : end) - at));
      if (pending.size() + piece.size() > limits.max_line_bytes)
        return too_large(":" + std::to_string(line + 1), "a line ", limits.max_line_bytes);
      if (!newline) {
        pending.append(piece);
        break;
      }
      ++line;
      if (pending.empty()) {
        NVTE_TRY_VOID(on_line(piece));
      } else {
        pending.append(piece);
        NVTE_TRY_VOID(on_line(pending));
        pending.clear();
      }
      at = newline + 1;
    }
  }
  if (!pending.empty()) NVTE_TRY_VOID(on_line(pending));
  return {};
}

std::string past_cap(std::string_view what, std::size_t limit, std::string_view cap) {
  const std::string n = std::to_string(limit);
  return "more than " + n + " " + std::string(what) + " (limit " + n + ", the " + std::string(cap) + ")";
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
