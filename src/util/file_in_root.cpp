// Opening files to read: on the live system (open_regular_file) and inside a tree
// (open_file_in_root). Both look a path up with O_PATH, which opens nothing, check that it is a
// regular file, and only then open it for reading through /proc/self/fd/N: the inode that was
// checked is the one read, and a device, FIFO or socket is never opened at all.
#include "util/file_in_root.hpp"

#include "util/file.hpp"

#include <atomic>
#include <cerrno>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string_view>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

namespace util {

namespace {

// Opens for reading the file that the O_PATH descriptor refers to; st is its fstat, and a regular
// file. Through /proc/self/fd (the same inode, whatever the name means by now); without /proc, by
// name again with O_NOFOLLOW, accepted only when that is the same inode.
template <typename OpenByName>
Result<Fd> reopen_regular(const Fd& located, const struct stat& st, const std::filesystem::path& shown, OpenByName open_by_name) {
  std::string proc = "/proc/self/fd/" + std::to_string(located.get());
  Fd file(::open(proc.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!file && errno != ENOENT) return file_error("cannot open", shown, errno);
  if (!file) {
    file.reset(open_by_name());
    if (!file) return file_error("cannot open", shown, errno);
  }
  struct stat opened {};
  if (::fstat(file.get(), &opened) != 0) return file_error("cannot stat", shown, errno);
  if (opened.st_dev != st.st_dev || opened.st_ino != st.st_ino)
    return Error{ErrorKind::io, shown.string() + ": replaced while it was being opened"};
  return file;
}

Result<struct stat> stat_regular(const Fd& located, const std::filesystem::path& shown) {
  struct stat st {};
  if (::fstat(located.get(), &st) != 0) return file_error("cannot stat", shown, errno);
  if (!S_ISREG(st.st_mode)) return Error{ErrorKind::invalid, shown.string() + ": not a regular file (" + file_type_text(st.st_mode) + ")"};
  return st;
}

// The components of a path pushed onto a stack (the first component on top), after what is on it
// already: a symlink's target goes before the rest of the walk.
void push_components(std::string_view p, std::vector<std::string>& stack) {
  std::size_t end = p.size();
  while (end > 0) {
    std::size_t slash = p.rfind('/', end - 1);
    std::size_t begin = slash == std::string_view::npos ? 0 : slash + 1;
    if (end > begin) stack.emplace_back(p.substr(begin, end - begin));
    if (slash == std::string_view::npos) break;
    end = slash;
  }
}

// The walk in user space: what openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) does, one
// component at a time. A link is read, never followed by the kernel (O_NOFOLLOW), so a magic
// link of a /proc inside the tree is only its text ("pipe:[42]", "/dev/pts/0"), walked in root.
Result<Fd> walk_in_root(const Fd& root_fd, const std::string& path, const std::filesystem::path& shown) {
  std::vector<Fd> dirs; // the directories walked into below root, innermost last
  auto current = [&] { return dirs.empty() ? root_fd.get() : dirs.back().get(); };
  std::vector<std::string> todo;
  push_components(path, todo);
  int links = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.back());
    todo.pop_back();
    if (part == ".") continue;
    if (part == "..") {
      if (!dirs.empty()) dirs.pop_back(); // never above root
      continue;
    }
    Fd located(::openat(current(), part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!located) return file_error("cannot open", shown, errno);
    struct stat st {};
    if (::fstat(located.get(), &st) != 0) return file_error("cannot stat", shown, errno);
    if (S_ISLNK(st.st_mode)) {
      if (++links > k_max_symlinks) return file_error("cannot open", shown, ELOOP);
      std::string target(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 4095) + 1, '\0');
      ssize_t n = ::readlinkat(located.get(), "", target.data(), target.size());
      if (n < 0) return file_error("cannot read a link of", shown, errno);
      target.resize(static_cast<std::size_t>(n));
      if (target.empty()) return file_error("cannot open", shown, ENOENT);
      if (target.front() == '/') dirs.clear();
      push_components(target, todo);
      continue;
    }
    if (!todo.empty()) {
      if (!S_ISDIR(st.st_mode)) return file_error("cannot open", shown, ENOTDIR);
      dirs.push_back(std::move(located));
      continue;
    }
    NVTE_TRY(stat_regular(located, shown));
    int dir = current();
    return reopen_regular(located, st, shown,
                          [&] { return ::openat(dir, part.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK); });
  }
  return Error{ErrorKind::invalid, shown.string() + ": not a regular file (a directory)"};
}

// openat2(2) through syscall(2): glibc 2.36 has no wrapper. -1 with errno ENOSYS where the
// kernel has none.
int openat2_in_root(int root_fd, const char* path, std::uint64_t flags) {
#ifdef SYS_openat2
  open_how how{};
  how.flags = flags;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  for (int attempt = 0;; ++attempt) {
    long fd = ::syscall(SYS_openat2, root_fd, path, &how, sizeof how);
    // EAGAIN: a rename elsewhere raced a ".." step, and the kernel asks to try again.
    if (fd < 0 && (errno == EINTR || (errno == EAGAIN && attempt < 16))) continue;
    return static_cast<int>(fd);
  }
#else
  (void)root_fd;
  (void)path;
  (void)flags;
  errno = ENOSYS;
  return -1;
#endif
}

std::atomic<bool> g_no_openat2{false}; // ENOSYS once: the walk from then on

Result<std::string> read_in_root(const std::filesystem::path& root, const std::filesystem::path& path, std::size_t max_bytes,
                                 Overflow overflow) {
  Fd fd = NVTE_TRY(open_file_in_root(root, path));
  return read_open_file(fd.get(), under_root(root, path), max_bytes, overflow);
}

} // namespace

Result<Fd> open_regular_file(const std::filesystem::path& path, Follow follow) {
  Fd located(::open(path.c_str(), O_PATH | O_CLOEXEC | (follow == Follow::no ? O_NOFOLLOW : 0)));
  if (!located) return file_error("cannot open", path, errno);
  struct stat st = NVTE_TRY(stat_regular(located, path));
  return reopen_regular(located, st, path, [&] {
    return ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (follow == Follow::no ? O_NOFOLLOW : 0));
  });
}

Result<Fd> open_file_in_root(const std::filesystem::path& root, const std::filesystem::path& path, RootResolver resolver) {
  if (root.empty() || root == "/") return open_regular_file(path);
  const std::filesystem::path shown = under_root(root, path);
  Fd root_fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd) return file_error("cannot open the tree", root, errno);
  if (resolver == RootResolver::automatic && !g_no_openat2.load(std::memory_order_relaxed)) {
    Fd located(openat2_in_root(root_fd.get(), path.c_str(), O_PATH | O_CLOEXEC));
    if (located) {
      struct stat st = NVTE_TRY(stat_regular(located, shown));
      return reopen_regular(located, st, shown,
                            [&] { return openat2_in_root(root_fd.get(), path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK); });
    }
    // No openat2 (ENOSYS), or a seccomp filter that answers EPERM for what it does not know:
    // the walk gives the same answer (a real EPERM comes back from it again).
    if (errno == ENOSYS) g_no_openat2.store(true, std::memory_order_relaxed);
    else if (errno != EPERM) return file_error("cannot open", shown, errno);
  }
  return walk_in_root(root_fd, path.string(), shown);
}

Result<std::string> read_file_in_root(const std::filesystem::path& root, const std::filesystem::path& path, std::size_t max_bytes) {
  return read_in_root(root, path, max_bytes, Overflow::error);
}

Result<std::string> read_file_head_in_root(const std::filesystem::path& root, const std::filesystem::path& path, std::size_t max_bytes) {
  return read_in_root(root, path, max_bytes, Overflow::truncate);
}

} // namespace util
