// /etc/ld.so.cache, read the way glibc's dynamic loader reads it (no ldconfig is run). The format
// is glibc's "new" one (elf/cache.c, sysdeps/generic/dl-cache.h): a 48-byte header
// {magic "glibc-ld.so.cache", version "1.1", nlibs, len_strings, flags, extension_offset, ...}
// then nlibs 24-byte entries {int32 flags, uint32 key, uint32 value, uint32 osversion,
// uint64 hwcap} whose key (the SONAME) and value (the path) are offsets into the file measured
// from the start of that header. Files that still start with the old "ld.so-1.7.0" table carry
// the new table after it, 8-byte aligned; the old table alone is not supported.
#pragma once

#include "util/result.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace probe {

// Entry flags (dl-cache.h): FLAG_ELF_LIBC6 in the low byte, the ABI in the high byte.
inline constexpr std::int32_t k_ld_flag_elf_libc6 = 0x0003;
inline constexpr std::int32_t k_ld_flag_x8664_lib64 = 0x0300;
inline constexpr std::int32_t k_ld_flag_aarch64_lib64 = 0x0a00;

struct LdCacheEntry {
  std::string soname;   // the key: "libcudnn.so.9"
  std::string path;     // the node path it maps to
  std::int32_t flags = 0;
  std::uint64_t hwcap = 0;
};

class LdCache {
public:
  std::vector<LdCacheEntry> entries; // in file order (what `ldconfig -p` prints)

  // The first entry for soname that this machine's loader would accept (libc6 + native 64-bit
  // ABI), or nullptr.
  const LdCacheEntry* find(std::string_view soname) const;
};

// The flags the native loader accepts (x86-64: 0x0303).
std::int32_t native_ld_cache_flags();

// Parses a cache file's bytes; origin names the file in errors. Fails with parse on a bad magic,
// a truncated table, an out-of-range string offset, or the old-format-only layout.
util::Result<LdCache> parse_ld_cache(std::string_view bytes, std::string_view origin);

// Reads <root>/etc/ld.so.cache; not_found when the node has none.
util::Result<LdCache> read_ld_cache(const std::filesystem::path& root);
// The same, read once per probe run for every thread that shares its NodeFsMemo (the libraries
// probe's copy scan and the native probe's link of torch both start from it); null without a
// cache file (not_found) and on an error, which `error` then holds.
std::shared_ptr<const LdCache> shared_ld_cache(const std::filesystem::path& root, util::Error* error = nullptr);

} // namespace probe
