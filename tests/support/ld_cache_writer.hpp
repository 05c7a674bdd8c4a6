// Writes an /etc/ld.so.cache in glibc's new format ("glibc-ld.so.cache1.1"), the layout that
// src/probe/ld_cache.hpp documents — so fixtures carry a readable text list of entries
// (etc/ld.so.cache.txt) instead of a binary file. Same bytes ldconfig would write for these
// entries except ordering and the hwcaps extension, which the loader model does not use.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace test_support {

struct CacheEntry {
  std::string soname;
  std::string path;
  std::int32_t flags = 0x0303; // libc6, x86-64
};

std::string build_ld_cache(const std::vector<CacheEntry>& entries);

// Lines "soname path [flags]" ('#' comments) -> entries.
std::vector<CacheEntry> parse_cache_listing(const std::string& text);

} // namespace test_support
