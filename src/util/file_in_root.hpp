// Files of a directory tree read as if the tree were "/": the way this program opens a file of a
// tree it examines (a container image, a saved node tree, a --node-root), so that the tree's own
// symlinks cannot make it read a file of the machine it runs on, and no file of the tree makes a
// read block (docs/reliability.md, "Untrusted trees").
//
// The key idea: the kernel resolves the path with openat2(2) and RESOLVE_IN_ROOT, which treats
// root as "/" for every absolute symlink and every "..", and RESOLVE_NO_MAGICLINKS (no
// /proc/PID/fd jumps). Where the kernel lacks openat2 (before Linux 5.6) or a seccomp filter hides
// it, the same answer comes from a walk in user space: one openat(O_PATH | O_NOFOLLOW) per
// component from a descriptor of root, a symlink's target read with readlinkat and walked again
// from root (absolute) or from its directory (relative), ".." never above root, at most 40 links.
#pragma once

#include "util/fd.hpp"
#include "util/result.hpp"

#include <cstddef>
#include <filesystem>
#include <string>

namespace util {

// Opens a regular file of the live system for reading, following symlinks unless follow is no
// (then a symlink is invalid "PATH: not a regular file (a symlink)"). Nothing but a regular file
// is ever opened: the path is looked up with O_PATH first, which opens no device (opening
// /dev/watchdog arms it, a tape rewinds), and only a regular file found there is then opened to
// read, through that very descriptor.
enum class Follow { yes, no };
Result<Fd> open_regular_file(const std::filesystem::path& path, Follow follow = Follow::yes);

// How open_file_in_root resolves: openat2 where the kernel has it, else the walk (automatic), or
// the walk always (tests of the fallback).
enum class RootResolver { automatic, userspace };

// Opens path, an absolute path as seen inside root, for reading. Only a regular file is opened (a
// directory, FIFO, socket or device is invalid "HOST-PATH: not a regular file (a FIFO)"), and
// opening never blocks. Fails with not_found when a component is missing, invalid on a symlink
// loop or a magic link. Root "/" opens path as the live system resolves it.
Result<Fd> open_file_in_root(const std::filesystem::path& root, const std::filesystem::path& path,
                             RootResolver resolver = RootResolver::automatic);

// The content of that file: at most max_bytes, an error past it (read_file_in_root) or the first
// max_bytes (read_file_head_in_root).
Result<std::string> read_file_in_root(const std::filesystem::path& root, const std::filesystem::path& path,
                                      std::size_t max_bytes = 64u << 20);
Result<std::string> read_file_head_in_root(const std::filesystem::path& root, const std::filesystem::path& path, std::size_t max_bytes);

} // namespace util
