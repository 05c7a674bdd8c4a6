// Files: whole-file reads, atomic writes and small directory helpers. Every error names the path.
#pragma once

#include "util/fd.hpp"
#include "util/result.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace util {

// How many symbolic links one path resolution follows before ELOOP: the kernel's MAXSYMLINKS
// (glibc's <sys/param.h> says 20, an older limit), for the walks that resolve links themselves.
inline constexpr int k_max_symlinks = 40;

// The file's whole content; at most max_bytes (a guard against huge files). Only a regular file is
// read: a directory, FIFO, socket or character or block device (/dev/zero, /dev/console, a tty a
// report name links to) is invalid "PATH: not a regular file (a character device)", and opening
// one never blocks.
Result<std::string> read_file(const std::filesystem::path& path, std::size_t max_bytes = 64u << 20);
// The first bytes of a file, up to max_bytes and without an error for a longer file: for formats
// whose part of interest comes first (the headers of a wheel's METADATA, before a long README).
Result<std::string> read_file_head(const std::filesystem::path& path, std::size_t max_bytes);

// Succeeds when the open fd is a regular file; otherwise invalid "PATH: not a regular file (a FIFO)".
Result<void> require_regular_file(int fd, const std::filesystem::path& path);
// "a regular file", "a directory", "a character device", ... for a st_mode.
std::string file_type_text(unsigned mode);
// Reads the open fd to its end, naming path in errors: past max_bytes an error (error) or the
// first max_bytes (truncate).
enum class Overflow { error, truncate };
Result<std::string> read_open_file(int fd, const std::filesystem::path& path, std::size_t max_bytes, Overflow overflow);

// The one way this program writes an output file (src/util/output_file.cpp; docs/reliability.md).
// What is at path decides how (lstat first):
//  - nothing, or a regular file: content goes to a temporary ".<name>.tmp.XXXXXX" in the same
//    directory, fsync, rename(2) over path, fsync of the directory: readers see the old file or
//    the new one, never a half-written one, also after a power loss. SIGTERM, SIGINT and SIGHUP
//    wait until the rename is done (the write finishes, then the signal acts); the temporary is
//    removed on every failure, and temporaries of earlier killed writers (older than a minute)
//    are swept. Sync::no skips both fsyncs: still atomic for readers, but a crash may leave an
//    empty file; for data that is rewritten often and cheap to lose (a timestamp).
//  - a character device or a FIFO (/dev/null, a named pipe): written through, opened O_WRONLY;
//    the node itself is never replaced.
//  - a symlink: resolved deliberately. A link into /proc (/dev/stdout -> /proc/self/fd/1) or to
//    a device or FIFO is written through; a link to a regular file gets the atomic write on the
//    file it names (the link stays); a dangling link is refused.
//  - a directory, socket or block device: refused (invalid).
enum class Sync { yes, no };
Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view content, unsigned mode = 0644, Sync sync = Sync::yes);

// Truncates and writes the file where it is (created 0644 when absent): for a file that cannot be
// replaced by a rename, such as a bind-mounted /dev/termination-log. Not atomic.
Result<void> write_file_in_place(const std::filesystem::path& path, std::string_view content);

// Removes the temporaries ".<name>.tmp.*" in dir (of writers of <name> killed mid-write) whose
// mtime is older than min_age; with name empty, every ".*.tmp.*". Returns how many it removed.
std::size_t sweep_temporaries(const std::filesystem::path& dir, std::string_view name,
                              std::chrono::seconds min_age = std::chrono::seconds(60));

// Succeeds when dir is a directory that only this user (or root) can change: owned by the
// effective uid or by root, and not writable by group or others. A state directory that another
// user can write lets that user plant symlinks the next root run follows (docs/reliability.md).
// A missing dir is not_found; every refusal names the path, owner and mode.
Result<void> check_private_directory(const std::filesystem::path& dir);

// Opens (creating with mode 0644) a lock file: O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, and only a
// regular file. A symlink or another kind of file at path is refused (invalid).
Result<Fd> open_lock_file(const std::filesystem::path& path);

// Directory entries' names (not paths), sorted; an unreadable directory is an error.
Result<std::vector<std::string>> list_directory(const std::filesystem::path& dir);

// What readdir(3) says an entry is, without a stat: most filesystems fill d_type, some leave it
// unknown (then the caller stats).
enum class EntryType : unsigned char { unknown, regular, directory, symlink, other };
struct DirEntry {
  std::string name;
  EntryType type = EntryType::unknown;
};
// The entries of dir with their d_type, sorted by name; an unreadable directory is an error.
// A recursive walk that asks only the links and the unknown entries for more saves one lstat per
// file (the CUDA toolkit's 5,000 entries).
Result<std::vector<DirEntry>> list_directory_entries(const std::filesystem::path& dir);

// Joins root and an absolute path inside the node ("/usr/lib" under "/tmp/fake" is
// "/tmp/fake/usr/lib"). With root "/" the path is returned as it is.
std::filesystem::path under_root(const std::filesystem::path& root, const std::filesystem::path& path);

// What is at path, for a message: "a directory", "a regular file", "a character device", "a
// block device", "a FIFO", "a socket", "a symlink to a character device", "a dangling symlink";
// "" when nothing is there, and "unknown (permission denied)" where stat(2) cannot look.
std::string file_kind(const std::filesystem::path& path);

// Describes errno for a message: "permission denied" etc.
std::string errno_text(int err);
ErrorKind errno_kind(int err);
// "<what> <path>: <errno text>" with the kind of errno_kind.
Error file_error(std::string_view what, const std::filesystem::path& path, int err);

} // namespace util
