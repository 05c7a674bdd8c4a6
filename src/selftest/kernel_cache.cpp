// A cache file is util::pack_strings of five parts: the format line "nvte-kernel-cache 1", the
// kind, the key's text, the payload and the payload's digest. Every part must be there and
// match: a torn write, an edit, a file of another format or another key is a miss.
#include "selftest/kernel_cache.hpp"

#include "util/file.hpp"
#include "util/file_cache.hpp"
#include "util/hash.hpp"
#include "util/path_trust.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace selftest {

namespace {

constexpr std::string_view k_format = "nvte-kernel-cache 1";

util::Error cache_error(util::ErrorKind kind, std::string message) { return util::Error{kind, std::move(message)}; }

double elapsed_seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Whether name is one of this cache's files: "<kind>-<16 hex>.bin".
bool cache_file_name(std::string_view name) {
  if (!name.ends_with(".bin") || name.size() < 22 || name.front() == '.') return false;
  auto stem = name.substr(0, name.size() - 4);
  auto dash = stem.rfind('-');
  return dash != std::string_view::npos && stem.size() - dash - 1 == 16 &&
         std::all_of(stem.begin() + static_cast<std::ptrdiff_t>(dash) + 1, stem.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

} // namespace

void CacheKey::add(std::string_view name, std::string_view value) {
  m_text += name;
  m_text += '=';
  // One line per input, whatever the value holds.
  for (char c : value) m_text += c == '\n' ? ' ' : c;
  m_text += '\n';
}

std::string CacheKey::file_name(std::string_view kind) const {
  return std::string(kind) + "-" + util::hex64(util::fnv1a64(m_text, util::fnv1a64(kind))) + ".bin";
}

std::string file_identity_text(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return path + " missing";
  return path + " " + util::identity_text(util::file_identity(st));
}

std::string libraries_identity(const std::vector<std::string>& paths, const std::vector<std::string>& sibling_prefixes) {
  std::vector<std::string> files;
  for (const auto& path : paths) {
    files.push_back(path);
    if (sibling_prefixes.empty()) continue;
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (dir.empty()) continue;
    auto names = util::list_directory(dir);
    if (!names) continue;
    for (const auto& name : *names)
      for (const auto& prefix : sibling_prefixes)
        if (name.starts_with(prefix)) files.push_back((dir / name).string());
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  std::string out;
  for (const auto& f : files) out += (out.empty() ? "" : "; ") + file_identity_text(f);
  return out;
}

std::string digest(std::string_view text) {
  return util::hex64(util::fnv1a64(text)) + util::hex64(util::fnv1a64(text, 0x9e3779b97f4a7c15ull));
}

KernelCache KernelCache::off(std::string why) {
  KernelCache cache;
  cache.m_why_off = std::move(why);
  return cache;
}

KernelCache KernelCache::open(const std::string& dir, Limits limits) {
  if (dir.empty()) return off("no cache directory (--no-cache, or no usable home)");
  auto walked = util::walk_path(dir, util::Walk::private_directory);
  if (!walked) return off(walked.error().message);
  KernelCache cache;
  cache.m_dir = std::move(walked->dir);
  cache.m_path = dir;
  cache.m_limits = limits;
  return cache;
}

util::Result<std::string> KernelCache::load(std::string_view kind, const CacheKey& key) const {
  if (!enabled()) return cache_error(util::ErrorKind::not_found, "the cache is off: " + m_why_off);
  if (!m_skip_loads.empty()) return cache_error(util::ErrorKind::not_found, m_skip_loads);
  const std::string name = key.file_name(kind);
  util::Fd fd(::openat(m_dir.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd) {
    int err = errno;
    if (err == ENOENT) return cache_error(util::ErrorKind::not_found, "no entry");
    if (err == ELOOP) return cache_error(util::ErrorKind::permission, name + " is a symbolic link");
    return cache_error(util::errno_kind(err), name + ": " + util::errno_text(err));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return cache_error(util::ErrorKind::invalid, name + " is not a regular file");
  if (!util::trusted_owner(st.st_uid))
    return cache_error(util::ErrorKind::permission, name + " belongs to uid " + std::to_string(st.st_uid));
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) return cache_error(util::ErrorKind::permission, name + ": other users may write it");
  if (static_cast<std::uint64_t>(st.st_size) > m_limits.max_file_bytes)
    return cache_error(util::ErrorKind::invalid,
                       name + ": " + std::to_string(st.st_size) + " bytes, over the limit of " + std::to_string(m_limits.max_file_bytes));
  auto text = util::read_open_file(fd.get(), m_path + "/" + name, m_limits.max_file_bytes, util::Overflow::error);
  if (!text) return cache_error(util::ErrorKind::invalid, text.error().message);
  auto parts = util::unpack_strings(*text);
  if (!parts || parts->size() != 5) return cache_error(util::ErrorKind::invalid, name + " is corrupt or truncated");
  auto& p = *parts;
  if (p[0] != k_format) return cache_error(util::ErrorKind::invalid, name + " is of another format");
  if (p[1] != kind || p[2] != key.text()) return cache_error(util::ErrorKind::invalid, name + " holds another key");
  if (p[4] != digest(p[3])) return cache_error(util::ErrorKind::invalid, name + ": the payload does not match its digest");
  return std::move(p[3]);
}

util::Result<void> KernelCache::store(std::string_view kind, const CacheKey& key, std::string_view payload) const {
  if (!enabled()) return cache_error(util::ErrorKind::not_found, "the cache is off: " + m_why_off);
  const std::string parts[] = {std::string(k_format), std::string(kind), key.text(), std::string(payload), digest(payload)};
  const std::string text = util::pack_strings(parts);
  if (text.size() > m_limits.max_file_bytes)
    return cache_error(util::ErrorKind::invalid,
                       std::to_string(text.size()) + " bytes, over the limit of " + std::to_string(m_limits.max_file_bytes));
  const std::string name = key.file_name(kind);
  static std::atomic<unsigned> counter{0};
  const std::string temporary = "." + name + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  util::Fd fd(::openat(m_dir.get(), temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return util::file_error("cannot create", m_path + "/" + temporary, errno);
  std::size_t written = 0;
  while (written < text.size()) {
    ssize_t n = ::write(fd.get(), text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      ::unlinkat(m_dir.get(), temporary.c_str(), 0);
      return util::file_error("cannot write", m_path + "/" + temporary, err);
    }
    written += static_cast<std::size_t>(n);
  }
  fd.reset();
  // rename(2) replaces whatever has the name, a symbolic link included, without following it.
  if (::renameat(m_dir.get(), temporary.c_str(), m_dir.get(), name.c_str()) != 0) {
    int err = errno;
    ::unlinkat(m_dir.get(), temporary.c_str(), 0);
    return util::file_error("cannot rename into", m_path + "/" + name, err);
  }
  prune();
  return {};
}

void KernelCache::prune() const {
  util::Fd listing(::openat(m_dir.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!listing) return;
  DIR* d = ::fdopendir(listing.get());
  if (!d) return;
  listing.release(); // closedir closes it
  struct Entry {
    std::string name;
    std::int64_t mtime_ns;
  };
  std::vector<Entry> files;
  const std::int64_t stale_before = // a temporary of a child killed mid-write
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count() - 600'000'000'000;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    std::int64_t mtime = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (name.starts_with(".") && name.find(".bin.tmp.") != std::string_view::npos && mtime < stale_before)
      ::unlinkat(::dirfd(d), e->d_name, 0);
    else if (cache_file_name(name) && S_ISREG(st.st_mode)) files.push_back({std::string(name), mtime});
  }
  if (files.size() > m_limits.max_files) {
    std::sort(files.begin(), files.end(), [](const Entry& a, const Entry& b) { return a.mtime_ns > b.mtime_ns; });
    for (std::size_t i = m_limits.max_files; i < files.size(); ++i) ::unlinkat(::dirfd(d), files[i].name.c_str(), 0);
  }
  ::closedir(d);
}

util::Result<KeptArtifact> keep_or_build(const KernelCache& cache, std::string_view kind, const CacheKey& key, const CacheSteps& steps) {
  KeptArtifact kept;
  auto start = std::chrono::steady_clock::now();
  if (auto payload = cache.load(kind, key)) {
    if (auto restored = steps.restore(*payload)) {
      kept.source = KeptArtifact::Source::loaded;
      kept.seconds = elapsed_seconds(start);
      return kept;
    } else {
      kept.why_compiled = "the cached copy was refused: " + restored.error().message;
    }
  } else {
    kept.why_compiled = payload.error().message;
  }
  start = std::chrono::steady_clock::now();
  if (auto built = steps.build(); !built) return built.error();
  kept.seconds = elapsed_seconds(start);
  if (!cache.enabled()) return kept;
  auto payload = steps.serialize();
  if (!payload) {
    kept.store_error = payload.error().message;
    return kept;
  }
  if (auto stored = cache.store(kind, key, *payload); !stored) kept.store_error = stored.error().message;
  else kept.stored = true;
  return kept;
}

} // namespace selftest
