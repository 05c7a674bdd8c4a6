#include "support/ld_cache_writer.hpp"

#include <cstring>
#include <sstream>

namespace test_support {

namespace {

template <typename T> void put(std::string& out, std::size_t at, T value) { std::memcpy(out.data() + at, &value, sizeof value); }

} // namespace

std::string build_ld_cache(const std::vector<CacheEntry>& entries) {
  constexpr std::size_t header = 48;
  constexpr std::size_t entry_size = 24;
  std::string out(header + entries.size() * entry_size, '\0');
  std::memcpy(out.data(), "glibc-ld.so.cache1.1", 20);
  std::string strings;
  std::size_t strings_at = out.size();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    std::size_t at = header + i * entry_size;
    auto key = static_cast<std::uint32_t>(strings_at + strings.size());
    strings += entries[i].soname + '\0';
    auto value = static_cast<std::uint32_t>(strings_at + strings.size());
    strings += entries[i].path + '\0';
    put(out, at, entries[i].flags);
    put(out, at + 4, key);
    put(out, at + 8, value);
    put(out, at + 12, std::uint32_t{0});
    put(out, at + 16, std::uint64_t{0});
  }
  put(out, 20, static_cast<std::uint32_t>(entries.size()));
  put(out, 24, static_cast<std::uint32_t>(strings.size()));
  out[28] = 2; // cache_file_new_flags_endian_little
  return out + strings;
}

std::vector<CacheEntry> parse_cache_listing(const std::string& text) {
  std::vector<CacheEntry> entries;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    CacheEntry e;
    std::string flags;
    if (!(fields >> e.soname >> e.path)) continue;
    if (fields >> flags) e.flags = static_cast<std::int32_t>(std::stol(flags, nullptr, 0));
    entries.push_back(e);
  }
  return entries;
}

} // namespace test_support
