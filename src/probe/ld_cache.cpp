// Parser for glibc's ld.so.cache (layout in ld_cache.hpp). Every offset is bounds-checked
// against the file size before use: the cache is input, and a truncated one must be an error,
// not a crash.
#include "probe/ld_cache.hpp"

#include "probe/node_path.hpp"
#include "util/file.hpp"

#include <cstring>

namespace probe {

namespace {

constexpr std::string_view k_magic_new = "glibc-ld.so.cache";
constexpr std::string_view k_version_new = "1.1";
constexpr std::string_view k_magic_old = "ld.so-1.7.0";
constexpr std::size_t k_header_new = 48;
constexpr std::size_t k_entry_new = 24;
constexpr std::size_t k_header_old = 16; // magic[11] + pad + uint32 nlibs
constexpr std::size_t k_entry_old = 12;

template <typename T> T load(std::string_view bytes, std::size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

// A NUL-terminated string at offset, or nullopt when it runs past the end.
std::optional<std::string> string_at(std::string_view bytes, std::size_t offset) {
  if (offset >= bytes.size()) return std::nullopt;
  auto end = bytes.find('\0', offset);
  if (end == std::string_view::npos) return std::nullopt;
  return std::string(bytes.substr(offset, end - offset));
}

} // namespace

std::int32_t native_ld_cache_flags() {
#if defined(__aarch64__)
  return k_ld_flag_elf_libc6 | k_ld_flag_aarch64_lib64;
#else
  return k_ld_flag_elf_libc6 | k_ld_flag_x8664_lib64;
#endif
}

const LdCacheEntry* LdCache::find(std::string_view soname) const {
  for (const auto& entry : entries) {
    if (entry.soname == soname && entry.flags == native_ld_cache_flags()) return &entry;
  }
  return nullptr;
}

util::Result<LdCache> parse_ld_cache(std::string_view bytes, std::string_view origin) {
  auto error = [&](const std::string& why) {
    return util::Error{util::ErrorKind::parse, std::string(origin) + ": " + why};
  };
  std::size_t base = 0;
  if (bytes.substr(0, k_magic_old.size()) == k_magic_old) {
    if (bytes.size() < k_header_old) return error("truncated old-format header");
    auto nlibs = load<std::uint32_t>(bytes, 12);
    std::size_t end = k_header_old + std::size_t{nlibs} * k_entry_old;
    base = (end + 7) & ~std::size_t{7};
    if (base >= bytes.size() || bytes.substr(base, k_magic_new.size()) != k_magic_new) {
      return error("old-format (ld.so-1.7.0) cache without the glibc-ld.so.cache1.1 table is not supported");
    }
  }
  std::string_view cache = bytes.substr(base);
  if (cache.size() < k_header_new) return error("truncated header (" + std::to_string(cache.size()) + " bytes)");
  if (cache.substr(0, k_magic_new.size()) != k_magic_new) return error("not an ld.so.cache (bad magic)");
  if (cache.substr(k_magic_new.size(), k_version_new.size()) != k_version_new) {
    return error("unsupported cache version '" + std::string(cache.substr(k_magic_new.size(), 3)) + "'");
  }
  auto nlibs = load<std::uint32_t>(cache, 20);
  if (std::size_t{nlibs} > (cache.size() - k_header_new) / k_entry_new) {
    return error("truncated: " + std::to_string(nlibs) + " entries do not fit in " + std::to_string(cache.size()) + " bytes");
  }
  LdCache out;
  out.entries.reserve(nlibs);
  for (std::uint32_t i = 0; i < nlibs; ++i) {
    std::size_t at = k_header_new + std::size_t{i} * k_entry_new;
    LdCacheEntry entry;
    entry.flags = load<std::int32_t>(cache, at);
    auto key = string_at(cache, load<std::uint32_t>(cache, at + 4));
    auto value = string_at(cache, load<std::uint32_t>(cache, at + 8));
    if (!key || !value) return error("entry " + std::to_string(i) + " has a string offset outside the file");
    entry.soname = std::move(*key);
    entry.path = std::move(*value);
    entry.hwcap = load<std::uint64_t>(cache, at + 16);
    out.entries.push_back(std::move(entry));
  }
  return out;
}

util::Result<LdCache> read_ld_cache(const std::filesystem::path& root) {
  auto path = util::under_root(root, "/etc/ld.so.cache");
  auto bytes = NVTE_TRY(read_node_file(root, "/etc/ld.so.cache", 64u << 20));
  return parse_ld_cache(bytes, path.string());
}

std::shared_ptr<const LdCache> shared_ld_cache(const std::filesystem::path& root, util::Error* error) {
  using Read = util::Result<LdCache>;
  auto value = node_memo_value("ld_cache", root.string(), [&] { return std::make_shared<const Read>(read_ld_cache(root)); });
  auto read = std::static_pointer_cast<const Read>(value);
  if (!*read) {
    if (error) *error = read->error();
    return nullptr;
  }
  return std::shared_ptr<const LdCache>(read, &**read); // shares the memo's value
}

} // namespace probe
