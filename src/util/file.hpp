// Files: whole-file reads, atomic writes and small directory helpers. Every error names the path.
#pragma once

#include "util/result.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace util {

// The file's whole content; at most max_bytes (a guard against /dev/zero and huge files).
Result<std::string> read_file(const std::filesystem::path& path, std::size_t max_bytes = 64u << 20);
// The first bytes of a file, up to max_bytes and without an error for a longer file: for formats
// whose part of interest comes first (the headers of a wheel's METADATA, before a long README).
Result<std::string> read_file_head(const std::filesystem::path& path, std::size_t max_bytes);

// Writes content to path through a temporary file in the same directory, fsync and rename(2):
// readers see the old file or the new one, never a half-written one. The temporary file is
// removed on every failure. Sync::no skips the fsync: still atomic for readers, but a crash may
// leave an empty file; for data that is rewritten often and cheap to lose (a timestamp).
enum class Sync { yes, no };
Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view content,
                               unsigned mode = 0644, Sync sync = Sync::yes);

// Directory entries' names (not paths), sorted; an unreadable directory is an error.
Result<std::vector<std::string>> list_directory(const std::filesystem::path& dir);

// Joins root and an absolute path inside the node ("/usr/lib" under "/tmp/fake" is
// "/tmp/fake/usr/lib"). With root "/" the path is returned as it is.
std::filesystem::path under_root(const std::filesystem::path& root, const std::filesystem::path& path);

// Describes errno for a message: "permission denied" etc.
std::string errno_text(int err);
ErrorKind errno_kind(int err);

} // namespace util
