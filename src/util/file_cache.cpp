// The cache file is text: a header line "nvte-file-cache 1 <tag>", then one line per entry,
// "<kind>\t<key>\t<dev>\t<ino>\t<size>\t<mtime_ns>\t<ctime_ns>\t<value>" with backslash, tab and
// newline escaped in kind, key and value, then "end <entries>". Any line that does not parse,
// a missing end line or a count that differs makes the whole file ignored: a torn or edited
// cache costs one run the work it would have saved, nothing else.
#include "util/file_cache.hpp"

#include "util/fd.hpp"
#include "util/file.hpp"
#include "util/logging.hpp"
#include "util/path_trust.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace util {

namespace {

constexpr std::string_view k_magic = "nvte-file-cache 1 ";

void escape_into(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
    case '\\': out += "\\\\"; break;
    case '\t': out += "\\t"; break;
    case '\n': out += "\\n"; break;
    default: out += c;
    }
  }
}

std::optional<std::string> unescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out += text[i];
      continue;
    }
    if (++i == text.size()) return std::nullopt;
    switch (text[i]) {
    case '\\': out += '\\'; break;
    case 't': out += '\t'; break;
    case 'n': out += '\n'; break;
    default: return std::nullopt;
    }
  }
  return out;
}

template <typename Int>
bool parse_int(std::string_view text, Int& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void debug(const std::filesystem::path& file, std::string_view why) { log::debug("file cache " + file.string() + ": " + std::string(why)); }

} // namespace

FileIdentity file_identity(const struct stat& st) {
  FileIdentity id;
  id.dev = static_cast<std::uint64_t>(st.st_dev);
  id.ino = static_cast<std::uint64_t>(st.st_ino);
  id.size = static_cast<std::uint64_t>(st.st_size);
  id.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  id.ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  return id;
}

std::string identity_text(const FileIdentity& id) {
  return std::to_string(id.dev) + " " + std::to_string(id.ino) + " " + std::to_string(id.size) + " " + std::to_string(id.mtime_ns) + " " +
         std::to_string(id.ctime_ns);
}

Result<FileIdentity> file_identity(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Error{errno_kind(errno), "fstat: " + errno_text(errno)};
  return file_identity(st);
}

std::optional<std::filesystem::path> user_cache_directory() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && xdg[0] == '/') return std::filesystem::path(xdg);
  // HOME=/ (a service or prolog without a home) would put a .cache at the filesystem's root.
  if (const char* home = std::getenv("HOME"); home && home[0] == '/' && std::string_view(home) != "/") {
    return std::filesystem::path(home) / ".cache";
  }
  return std::nullopt;
}

std::string pack_strings(std::span<const std::string> parts) {
  std::string out;
  for (const auto& p : parts) {
    out += std::to_string(p.size());
    out += ':';
    out += p;
  }
  return out;
}

std::optional<std::vector<std::string>> unpack_strings(std::string_view packed) {
  std::vector<std::string> out;
  while (!packed.empty()) {
    auto colon = packed.find(':');
    std::size_t n = 0;
    if (colon == std::string_view::npos || !parse_int(packed.substr(0, colon), n) || n > packed.size() - colon - 1) return std::nullopt;
    out.emplace_back(packed.substr(colon + 1, n));
    packed.remove_prefix(colon + 1 + n);
  }
  return out;
}

std::shared_ptr<FileCache> FileCache::open(const std::filesystem::path& dir, std::string_view name, std::string_view tag) {
  return open(dir, name, tag, Limits{});
}

std::shared_ptr<FileCache> FileCache::open(const std::filesystem::path& dir, std::string_view name, std::string_view tag, Limits limits) {
  auto cache = std::make_shared<FileCache>();
  cache->m_name = std::string(name);
  cache->m_tag = std::string(tag);
  cache->m_limits = limits;
  const std::filesystem::path file = dir / name;
  auto walked = private_cache_directory(dir);
  if (!walked) {
    debug(file, "not used: " + walked.error().message);
    return cache;
  }
  cache->m_dir = dir;
  Fd fd(::openat(walked->dir.get(), std::string(name).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd) {
    if (errno != ENOENT) debug(file, "ignored: " + errno_text(errno));
    return cache;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    debug(file, "ignored: not a regular file");
    return cache;
  }
  if (!trusted_owner(st.st_uid) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
    debug(file, "ignored: it belongs to uid " + std::to_string(st.st_uid) + " or others may write it");
    return cache;
  }
  if (static_cast<std::uint64_t>(st.st_size) > limits.max_file_bytes) {
    debug(file, "ignored: " + std::to_string(st.st_size) + " bytes, over the limit of " + std::to_string(limits.max_file_bytes));
    return cache;
  }
  auto text = read_open_file(fd.get(), file, limits.max_file_bytes, Overflow::error);
  if (!text) {
    debug(file, "ignored: " + text.error().message);
    return cache;
  }
  cache->parse(*text, file);
  return cache;
}

void FileCache::parse(std::string_view text, const std::filesystem::path& file) {
  auto fail = [&](std::string_view why) {
    m_entries.clear();
    m_dirty = true; // rewritten by this run
    debug(file, "ignored: " + std::string(why));
  };
  auto eol = text.find('\n');
  if (eol == std::string_view::npos || text.substr(0, eol) != std::string(k_magic) + m_tag)
    return fail("another format or program version");
  text.remove_prefix(eol + 1);
  std::size_t lines = 0;
  while (!text.empty()) {
    eol = text.find('\n');
    if (eol == std::string_view::npos) return fail("truncated");
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol + 1);
    if (line.starts_with("end ")) {
      std::size_t count = 0;
      if (!parse_int(line.substr(4), count) || count != lines || !text.empty()) return fail("bad end line");
      return;
    }
    std::string_view field[8];
    for (int i = 0; i < 7; ++i) {
      auto tab = line.find('\t');
      if (tab == std::string_view::npos) return fail("bad line " + std::to_string(lines + 2));
      field[i] = line.substr(0, tab);
      line.remove_prefix(tab + 1);
    }
    field[7] = line;
    auto kind = unescape(field[0]), key = unescape(field[1]), value = unescape(field[7]);
    Entry e;
    if (!kind || !key || !value || !parse_int(field[2], e.id.dev) || !parse_int(field[3], e.id.ino) || !parse_int(field[4], e.id.size) ||
        !parse_int(field[5], e.id.mtime_ns) || !parse_int(field[6], e.id.ctime_ns) || ++lines > m_limits.max_entries) {
      return fail("bad line " + std::to_string(lines + 1));
    }
    e.value = std::move(*value);
    m_entries[slot(*kind, *key)] = std::move(e);
  }
  fail("no end line");
}

std::string FileCache::slot(std::string_view kind, std::string_view key) {
  std::string s(kind);
  s += '\0';
  s += key;
  return s;
}

std::optional<std::string> FileCache::find(std::string_view kind, std::string_view key, const FileIdentity& id) {
  std::lock_guard lock(m_mutex);
  auto it = m_entries.find(slot(kind, key));
  if (it == m_entries.end() || !(it->second.id == id)) {
    ++m_misses;
    return std::nullopt;
  }
  ++m_hits;
  it->second.used = true;
  return it->second.value;
}

void FileCache::put(std::string_view kind, std::string_view key, const FileIdentity& id, std::string value) {
  if (value.size() > m_limits.max_value_bytes) return;
  if (id.mtime_ns > now_ns() - m_limits.racy_seconds * 1000000000) return;
  std::lock_guard lock(m_mutex);
  auto& e = m_entries[slot(kind, key)];
  if (e.used && e.id == id && e.value == value) return;
  e = Entry{id, std::move(value), true};
  m_dirty = true;
}

void FileCache::save() {
  std::string text;
  {
    std::lock_guard lock(m_mutex);
    if (log::enabled(log::Level::debug)) {
      debug(m_dir / m_name, std::to_string(m_hits) + " hits, " + std::to_string(m_misses) + " misses" +
                                (m_dir.empty() ? ", not used"
                                 : m_dirty     ? ", saved"
                                               : ", unchanged"));
    }
    if (!m_dirty || m_dir.empty()) return;
    // This run's entries first, then the others while the limits allow.
    std::vector<const std::pair<const std::string, Entry>*> order;
    order.reserve(m_entries.size());
    for (const auto& e : m_entries) order.push_back(&e);
    std::stable_partition(order.begin(), order.end(), [](const auto* e) { return e->second.used; });
    std::sort(order.begin(), order.begin() + std::count_if(order.begin(), order.end(), [](const auto* e) { return e->second.used; }),
              [](const auto* a, const auto* b) { return a->first < b->first; });
    text = std::string(k_magic) + m_tag + "\n";
    std::size_t count = 0;
    for (const auto* e : order) {
      std::string line;
      auto zero = e->first.find('\0');
      escape_into(line, std::string_view(e->first).substr(0, zero));
      line += '\t';
      escape_into(line, std::string_view(e->first).substr(zero + 1));
      const FileIdentity& id = e->second.id;
      for (const auto& n : {std::to_string(id.dev), std::to_string(id.ino), std::to_string(id.size), std::to_string(id.mtime_ns),
                            std::to_string(id.ctime_ns)}) {
        line += '\t';
        line += n;
      }
      line += '\t';
      escape_into(line, e->second.value);
      line += '\n';
      if (count == m_limits.max_entries || text.size() + line.size() + 32 > m_limits.max_file_bytes) break;
      text += line;
      ++count;
    }
    text += "end " + std::to_string(count) + "\n";
    m_dirty = false;
  }
  // The directory was walked as private when the cache was opened: nobody else can have put a
  // link in it since. No fsync: a cache lost in a crash is made again.
  if (auto written = write_file_atomic(m_dir / m_name, text, 0600, Sync::no); !written)
    debug(m_dir / m_name, "not saved: " + written.error().message);
}

std::size_t FileCache::hits() const {
  std::lock_guard lock(m_mutex);
  return m_hits;
}

std::size_t FileCache::misses() const {
  std::lock_guard lock(m_mutex);
  return m_misses;
}

} // namespace util
