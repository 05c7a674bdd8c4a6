// A cache of values derived from files, kept across runs in one file, keyed by what identifies a
// file's content without reading it: the file's path and its identity (device, inode, size,
// mtime, ctime). The cache is a hint, never trusted: a value is returned only when the identity
// the caller took from the file it opened (fstat) equals the one stored with it; anything else
// is a miss and the caller computes the value again. A cache file that is missing, unreadable,
// corrupt, too large, of another format or owned by another user is ignored (one debug line),
// never an error. The directory must be private (util::walk_path, Walk::private_directory: every
// component this user's or root's and writable by nobody else), so nobody can plant a symlink
// there and a root process never writes into a directory a user can write; saving is atomic
// (a temporary and rename(2)). Thread-safe: the probe's threads share one.
#pragma once

#include "util/result.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

struct stat;

namespace util {

struct FileIdentity {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  bool operator==(const FileIdentity&) const = default;
};

FileIdentity file_identity(const struct stat& st);
// "<dev> <ino> <size> <mtime_ns> <ctime_ns>": an identity as text, for keys stored whole (the
// kernel cache's, the Python tier's kept answer, a cache file's tag). ctime too: a file rewritten
// in place with its size and mtime restored (cp -p, rsync) still changes it.
std::string identity_text(const FileIdentity& id);
// The identity of an open file; fails when fstat does.
Result<FileIdentity> file_identity(int fd);

// The user's cache directory: $XDG_CACHE_HOME when it is an absolute path, else $HOME/.cache;
// nullopt when neither is usable (HOME unset, relative or "/").
std::optional<std::filesystem::path> user_cache_directory();

// Strings packed into one ("<length>:<bytes>" each) and back; unpack fails (nullopt) on anything
// pack did not make.
std::string pack_strings(std::span<const std::string> parts);
std::optional<std::vector<std::string>> unpack_strings(std::string_view packed);

class FileCache {
public:
  struct Limits {
    std::size_t max_file_bytes = 8u << 20;    // a larger cache file is ignored, and never written
    std::size_t max_entries = 20000;          // entries unused by this run go first
    std::size_t max_value_bytes = 256u << 10; // a larger value is not stored
    // A file modified this recently is not cached: a later change within the same mtime tick
    // would keep its identity ("racily clean", as git calls it).
    std::int64_t racy_seconds = 2;
  };

  // A cache that stores nothing (--no-cache, no usable directory).
  FileCache() = default;
  // The cache file name in dir, made (0700) with its parent when missing. tag names the format
  // of the values (the program's version): a file with another tag is ignored and rewritten.
  // Never fails: without a usable directory or file the cache starts empty (and, without a
  // directory, is never saved); why is logged at debug level.
  static std::shared_ptr<FileCache> open(const std::filesystem::path& dir, std::string_view name, std::string_view tag);
  static std::shared_ptr<FileCache> open(const std::filesystem::path& dir, std::string_view name, std::string_view tag, Limits limits);

  // The value stored for (kind, key) when it was stored with identity id.
  std::optional<std::string> find(std::string_view kind, std::string_view key, const FileIdentity& id);
  // Stores value for (kind, key) with identity id (replacing what was there), unless the file is
  // racily new or the value too large.
  void put(std::string_view kind, std::string_view key, const FileIdentity& id, std::string value);
  // Writes the cache back when this run changed it; a failure is logged (debug) and dropped.
  void save();

  bool enabled() const { return !m_dir.empty(); }
  std::size_t hits() const;
  std::size_t misses() const;

private:
  struct Entry {
    FileIdentity id;
    std::string value;
    bool used = false; // found or stored by this run
  };
  static std::string slot(std::string_view kind, std::string_view key);
  void parse(std::string_view text, const std::filesystem::path& file);

  mutable std::mutex m_mutex;
  std::filesystem::path m_dir; // empty: never saved
  std::string m_name, m_tag;
  Limits m_limits;
  std::unordered_map<std::string, Entry> m_entries; // kind '\0' key -> entry
  bool m_dirty = false;
  std::size_t m_hits = 0, m_misses = 0;
};

} // namespace util
