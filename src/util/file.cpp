#include "util/file.hpp"

#include "util/defer.hpp"
#include "util/fd.hpp"
#include "util/file_in_root.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace util {

std::string errno_text(int err) { return std::strerror(err); }

ErrorKind errno_kind(int err) {
  switch (err) {
  case ENOENT:
  case ENOTDIR: return ErrorKind::not_found;
  case EACCES:
  case EPERM: return ErrorKind::permission;
  default: return ErrorKind::io;
  }
}

Error file_error(std::string_view what, const std::filesystem::path& path, int err) {
  return Error{errno_kind(err), std::string(what) + " " + path.string() + ": " + errno_text(err)};
}

std::string file_type_text(unsigned mode) {
  switch (mode & S_IFMT) {
  case S_IFREG: return "a regular file";
  case S_IFDIR: return "a directory";
  case S_IFIFO: return "a FIFO";
  case S_IFSOCK: return "a socket";
  case S_IFCHR: return "a character device";
  case S_IFBLK: return "a block device";
  case S_IFLNK: return "a symlink";
  default: return "an unknown kind of file";
  }
}

Result<void> require_regular_file(int fd, const std::filesystem::path& path) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) return file_error("cannot stat", path, errno);
  if (!S_ISREG(info.st_mode))
    return Error{ErrorKind::invalid, path.string() + ": not a regular file (" + file_type_text(info.st_mode) + ")"};
  return {};
}

Result<std::string> read_open_file(int fd, const std::filesystem::path& path, std::size_t max_bytes, Overflow overflow) {
  std::string content;
  char buffer[16384];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return file_error("cannot read", path, errno);
    }
    if (n == 0) break;
    content.append(buffer, static_cast<std::size_t>(n));
    if (content.size() > max_bytes) {
      if (overflow == Overflow::truncate) {
        content.resize(max_bytes);
        break;
      }
      // As the input layer says it (read_input, read_lines): the cap and its value.
      return Error{ErrorKind::invalid,
                   path.string() + ": larger than " + std::to_string(max_bytes) + " bytes (limit " + std::to_string(max_bytes) + ")"};
    }
  }
  return content;
}

namespace {

Result<std::string> read_up_to(const std::filesystem::path& path, std::size_t max_bytes, Overflow overflow) {
  Fd fd = NVTE_TRY(open_regular_file(path));
  return read_open_file(fd.get(), path, max_bytes, overflow);
}

} // namespace

Result<std::string> read_file(const std::filesystem::path& path, std::size_t max_bytes) {
  return read_up_to(path, max_bytes, Overflow::error);
}

Result<std::string> read_file_head(const std::filesystem::path& path, std::size_t max_bytes) {
  return read_up_to(path, max_bytes, Overflow::truncate);
}

Result<std::vector<std::string>> list_directory(const std::filesystem::path& dir) {
  auto entries = list_directory_entries(dir);
  if (!entries) return entries.error();
  std::vector<std::string> names;
  names.reserve(entries->size());
  for (auto& e : *entries) names.push_back(std::move(e.name));
  return names;
}

Result<std::vector<DirEntry>> list_directory_entries(const std::filesystem::path& dir) {
  DIR* raw = ::opendir(dir.c_str());
  if (!raw) return file_error("cannot list", dir, errno);
  Defer close_dir([raw] { ::closedir(raw); });
  std::vector<DirEntry> entries;
  while (dirent* entry = ::readdir(raw)) {
    std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    EntryType type = EntryType::unknown;
    switch (entry->d_type) {
    case DT_REG: type = EntryType::regular; break;
    case DT_DIR: type = EntryType::directory; break;
    case DT_LNK: type = EntryType::symlink; break;
    case DT_UNKNOWN: break;
    default: type = EntryType::other; break;
    }
    entries.push_back(DirEntry{std::string(name), type});
  }
  std::sort(entries.begin(), entries.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return entries;
}

std::string file_kind(const std::filesystem::path& path) {
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0) return errno == ENOENT || errno == ENOTDIR ? "" : "unknown (" + errno_text(errno) + ")";
  struct stat target = link;
  std::string via;
  if (S_ISLNK(link.st_mode)) {
    if (::stat(path.c_str(), &target) != 0) return errno == ENOENT ? "a dangling symlink" : "a symlink (" + errno_text(errno) + ")";
    via = "a symlink to ";
  }
  std::string kind = S_ISDIR(target.st_mode)    ? "a directory"
                     : S_ISREG(target.st_mode)  ? "a regular file"
                     : S_ISCHR(target.st_mode)  ? "a character device"
                     : S_ISBLK(target.st_mode)  ? "a block device"
                     : S_ISFIFO(target.st_mode) ? "a FIFO"
                     : S_ISSOCK(target.st_mode) ? "a socket"
                                                : "an unknown kind of file";
  return via + kind;
}

std::filesystem::path under_root(const std::filesystem::path& root, const std::filesystem::path& path) {
  // root / path.relative_path() on strings: a probe of a tree asks this for every component of
  // every path it resolves, and std::filesystem splits both paths into components each time.
  const std::string& r = root.native();
  if (r.empty() || r == "/") return path;
  const std::string& p = path.native();
  std::size_t skip = 0;
  while (skip < p.size() && p[skip] == '/') ++skip;
  std::string out;
  out.reserve(r.size() + 1 + p.size() - skip);
  out = r;
  if (out.back() != '/') out += '/';
  out.append(p, skip, std::string::npos);
  return out;
}

} // namespace util
