#include "selftest/bytecode_cache.hpp"

#include "util/file.hpp"
#include "util/logging.hpp"

#include <sys/stat.h>
#include <system_error>
#include <vector>

namespace selftest {

namespace {

struct Tally {
  std::uintmax_t bytes = 0;
  std::size_t entries = 0;
  std::optional<std::string> over; // which limit, once one is passed
};

void measure(const std::filesystem::path& dir, std::size_t depth, const BytecodeCacheLimits& limits, Tally& tally) {
  if (depth > limits.max_depth) {
    tally.over = "directories nested more than " + std::to_string(limits.max_depth) + " levels deep";
    return;
  }
  auto entries = util::list_directory_entries(dir);
  if (!entries) return; // unreadable: Python cannot have written much there either
  for (const auto& e : *entries) {
    if (tally.over) return;
    if (++tally.entries > limits.max_entries) {
      tally.over = "more than " + std::to_string(limits.max_entries) + " entries";
      return;
    }
    const std::filesystem::path path = dir / e.name;
    util::EntryType type = e.type;
    struct stat st {};
    if (type == util::EntryType::unknown || type == util::EntryType::regular) {
      if (::lstat(path.c_str(), &st) != 0) continue;
      type = S_ISDIR(st.st_mode) ? util::EntryType::directory : S_ISREG(st.st_mode) ? util::EntryType::regular : util::EntryType::other;
    }
    if (type == util::EntryType::directory) {
      measure(path, depth + 1, limits, tally);
    } else if (type == util::EntryType::regular) {
      tally.bytes += static_cast<std::uintmax_t>(st.st_size);
      if (tally.bytes > limits.max_bytes) tally.over = "more than " + std::to_string(limits.max_bytes) + " bytes";
    }
  }
}

} // namespace

std::optional<std::string> bound_bytecode_cache(const std::filesystem::path& dir, const BytecodeCacheLimits& limits) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  Tally tally;
  measure(dir, 0, limits, tally);
  if (!tally.over) return std::nullopt;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec); // removes links, never what they point to
  if (ec) {
    util::log::debug("self-test: the Python bytecode cache " + dir.string() + " holds " + *tally.over +
                     " and could not be removed: " + ec.message());
    return std::nullopt;
  }
  return "the Python bytecode cache " + dir.string() + " held " + *tally.over + "; removed (the next Python tier fills it again)";
}

} // namespace selftest
