// Following a path as root without letting another user steer it (docs/reliability.md, "Outputs,
// network and trust"). The kernel's fs.protected_symlinks covers only sticky world-writable
// directories; a root service also writes into directories other users own (node_exporter's
// textfile directory, a features.d, a state directory someone pre-created). The rule applied here,
// to every component of a path: a symlink is followed only when it belongs to this user or root,
// or when nobody else could have put it there (its directory belongs to this user or root and is
// not writable by group or others). The walk holds a descriptor of each directory it enters
// (openat, O_NOFOLLOW), so what it checked is what the caller then writes into.
#pragma once

#include "util/fd.hpp"
#include "util/result.hpp"

#include <filesystem>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace util {

// This process's effective user or root: the owners whose files and links are trusted.
bool trusted_owner(uid_t uid);

// Where a walk ended: the directory that holds the final name, open with O_PATH, and that name.
struct WalkedPath {
  Fd dir;                         // the directory holding name (O_PATH | O_DIRECTORY)
  std::filesystem::path dir_path; // its path as resolved (for messages)
  std::string name;               // the final component; empty when the path names a directory itself
  bool via_link = false;          // name is the target of a symlink the path ended in
  bool kernel_link = false;       // name is a symlink into /proc (/dev/stdout): open it with the kernel's resolution
};

enum class Walk {
  // Outputs: directories may belong to anyone; symlinks are followed only under the rule above
  // (the final one too); a link into /proc is left for the kernel (kernel_link).
  output,
  // A directory this program trusts (the state directory): every component must belong to this
  // user or root and must not be writable by group or others (a sticky directory such as /tmp
  // is accepted on the way, not at the end); symlinks must belong to this user or root. The walk
  // enters the last component too (name is empty).
  private_directory,
};

// Walks path (made absolute against the working directory) one component at a time from /.
// Fails naming the component: a symlink or directory the rule refuses (ErrorKind::permission),
// a missing or non-directory component on the way (not_found / invalid), more than 40 links.
// A missing final component is not an error for Walk::output (the caller creates it).
Result<WalkedPath> walk_path(const std::filesystem::path& path, Walk mode);

// A private directory for this program's caches (the probe's file cache, the Python tier's
// bytecode): dir and its parent (~/.cache) are made 0700 when missing, as the XDG specification
// asks, but only inside a directory that is itself private (root never makes one in a user's
// directory); then dir is walked as Walk::private_directory. Whatever a cache holds is trusted on
// reading (compiled Python runs as this user), so nobody else may be able to write there.
Result<WalkedPath> private_cache_directory(const std::filesystem::path& dir);

// Succeeds when path (a file or directory the program is told to trust: a configuration, a rules
// or workloads directory) belongs to this user or root and is not writable by group or others.
// what names it in the refusal: "refusing config file /etc/x.yaml: it belongs to uid 1000, ...".
// A missing path is not_found.
Result<void> check_trusted_path(const std::filesystem::path& path, std::string_view what);

} // namespace util
