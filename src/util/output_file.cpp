// The safe output layer: every file this program writes goes through write_file_atomic (or, for
// a file that must stay where it is, write_file_in_place), and the run lock through
// open_lock_file. The key idea: look at what is at the path before writing, because rename(2)
// replaces whatever has that name and open(2) follows whatever link is there. The path is walked
// by util::walk_path (path_trust.hpp): a symlink is followed only when it belongs to this user or
// root or its directory is not writable by others, and the write happens through the descriptor
// of the directory that was checked. A regular file is replaced atomically; a device, a FIFO or a
// /proc link (the idioms `-o /dev/null`, `-o /dev/stdout`) is written through, never replaced,
// and opened O_NONBLOCK, so that a FIFO nobody reads is an error instead of a wait. Signals that
// end a run politely (SIGTERM from systemd, SIGINT, SIGHUP) are held back from the first byte of
// the temporary to the rename, so a stop finishes the write; what SIGKILL or a power cut leaves
// behind is swept by the next writer of the same name.
#include "util/file.hpp"

#include "util/defer.hpp"
#include "util/path_trust.hpp"

#include <cerrno>
#include <csignal>
#include <ctime>
#include <dirent.h>
#include <cstdlib>
#include <fcntl.h>
#include <optional>
#include <pthread.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

namespace util {

namespace fs = std::filesystem;

namespace {

std::string kind_text(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISLNK(mode)) return "a symlink";
  return "not a regular file";
}

Result<void> write_all(int fd, std::string_view content, const fs::path& path) {
  std::size_t written = 0;
  while (written < content.size()) {
    ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return file_error("cannot write", path, errno);
    }
    written += static_cast<std::size_t>(n);
  }
  return {};
}

Error refusal(const fs::path& path, std::string_view why) {
  return make_error(ErrorKind::invalid, "refusing to write to " + path.string() + ": " + std::string(why));
}

Result<void> blocking(int fd, const fs::path& path) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) return file_error("cannot write", path, errno);
  return {};
}

// Opens name in dir without waiting for a FIFO's reader and writes content to it. flags add
// O_APPEND (a /proc link, as a shell's redirection left it) or O_NOFOLLOW (a node the walk saw).
// What the open finds must be a character device or FIFO, or, through a /proc link, anything but
// a directory, socket or block device.
Result<void> write_through(const WalkedPath& at, const fs::path& path, std::string_view content, int flags) {
  Fd fd(::openat(at.dir.get(), at.name.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | flags));
  if (!fd) {
    int err = errno;
    if (err == ENXIO) {
      struct stat st {};
      if (::fstatat(at.dir.get(), at.name.c_str(), &st, 0) == 0 && S_ISFIFO(st.st_mode))
        return make_error(ErrorKind::io, "cannot write to " + path.string() + ": it is a FIFO that no process is reading");
    }
    return file_error("cannot open", path, err);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return file_error("cannot stat", path, errno);
  if (S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode)) return refusal(path, "it is " + kind_text(st.st_mode));
  if (!at.kernel_link && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
    return make_error(ErrorKind::io, "cannot write to " + path.string() + ": it changed while being opened");
  NVTE_TRY_VOID(blocking(fd.get(), path));
  NVTE_TRY_VOID(write_all(fd.get(), content, path));
  if (::close(fd.release()) != 0) return file_error("cannot close", path, errno);
  return {};
}

// Holds back the signals that stop a run politely for the life of the object (this thread).
class HoldStopSignals {
public:
  HoldStopSignals() {
    sigset_t stop;
    sigemptyset(&stop);
    for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop, s);
    m_held = ::pthread_sigmask(SIG_BLOCK, &stop, &m_before) == 0;
  }
  HoldStopSignals(const HoldStopSignals&) = delete;
  HoldStopSignals& operator=(const HoldStopSignals&) = delete;
  ~HoldStopSignals() {
    if (m_held) ::pthread_sigmask(SIG_SETMASK, &m_before, nullptr);
  }

private:
  sigset_t m_before{};
  bool m_held = false;
};

std::size_t sweep_at(int dir_fd, std::string_view name, std::chrono::seconds min_age) {
  Fd readable(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!readable) return 0;
  DIR* raw = ::fdopendir(readable.get());
  if (!raw) return 0;
  (void)readable.release();
  Defer close_dir([raw] { ::closedir(raw); });
  std::string prefix = "." + std::string(name) + (name.empty() ? "" : ".tmp.");
  const std::time_t now = std::time(nullptr);
  std::size_t removed = 0;
  while (dirent* entry = ::readdir(raw)) {
    std::string_view entry_name = entry->d_name;
    if (!entry_name.starts_with(prefix) || entry_name.size() == prefix.size()) continue;
    if (name.empty() && entry_name.find(".tmp.") == std::string_view::npos) continue;
    struct stat st {};
    if (::fstatat(::dirfd(raw), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    if (now - st.st_mtime < min_age.count()) continue; // a live writer's, most likely
    if (::unlinkat(::dirfd(raw), entry->d_name, 0) == 0) ++removed;
  }
  return removed;
}

// ".<name>.tmp.XXXXXX" created O_EXCL in the walked directory (mkostemp has no *at form).
Result<std::pair<Fd, std::string>> create_temporary(const WalkedPath& at) {
  static constexpr char k_letters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  for (int attempt = 0; attempt < 100; ++attempt) {
    unsigned char random[6];
    if (::getrandom(random, sizeof random, 0) != static_cast<ssize_t>(sizeof random)) {
      for (auto& r : random) r = static_cast<unsigned char>(std::rand());
    }
    std::string name = "." + at.name + ".tmp.";
    for (unsigned char r : random) name += k_letters[r % (sizeof k_letters - 1)];
    Fd fd(::openat(at.dir.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600));
    if (fd) return std::pair<Fd, std::string>(std::move(fd), std::move(name));
    if (errno != EEXIST) return file_error("cannot create a temporary file in", at.dir_path, errno);
  }
  return file_error("cannot create a temporary file in", at.dir_path, EEXIST);
}

Result<void> replace_regular(const WalkedPath& at, const fs::path& path, std::string_view content, unsigned mode, Sync sync) {
  sweep_at(at.dir.get(), at.name, std::chrono::seconds(60));
  // Held before the temporary exists: a stop between its creation and the rename would orphan it.
  HoldStopSignals hold;
  auto created = NVTE_TRY(create_temporary(at));
  Fd fd = std::move(created.first);
  const std::string temporary = std::move(created.second); // a plain variable: clang 14 cannot capture a structured binding
  bool committed = false;
  Defer cleanup([&] {
    if (!committed) ::unlinkat(at.dir.get(), temporary.c_str(), 0);
  });
  NVTE_TRY_VOID(write_all(fd.get(), content, path));
  if (::fchmod(fd.get(), mode) != 0) return file_error("cannot chmod", at.dir_path / temporary, errno);
  if (sync == Sync::yes && ::fsync(fd.get()) != 0) return file_error("cannot fsync", path, errno);
  if (::close(fd.release()) != 0) return file_error("cannot close", path, errno);
  if (::renameat(at.dir.get(), temporary.c_str(), at.dir.get(), at.name.c_str()) != 0) return file_error("cannot rename onto", path, errno);
  committed = true;
  if (sync == Sync::yes) {
    // The rename is durable only once the directory is: without this a power cut can lose it.
    Fd dir_fd(::openat(at.dir.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir_fd) (void)::fsync(dir_fd.get());
  }
  return {};
}

// What is at the end of the walk, for both writers: its lstat, or nullopt when nothing is there.
// A dangling link, a directory, socket or block device is refused.
Result<std::optional<struct stat>> final_node(const WalkedPath& at, const fs::path& path) {
  if (at.name.empty()) return refusal(path, "it is a directory");
  struct stat st {};
  if (::fstatat(at.dir.get(), at.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    int err = errno;
    if (err != ENOENT) return file_error("cannot stat", path, err);
    if (at.via_link) return refusal(path, "it is a symlink to a missing file (write to the target, or remove the link)");
    return std::optional<struct stat>();
  }
  if (S_ISREG(st.st_mode) || S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return std::optional<struct stat>(st);
  return refusal(path, std::string(at.via_link ? "it links to " : "it is ") + kind_text(st.st_mode));
}

} // namespace

Result<void> write_file_atomic(const fs::path& path, std::string_view content, unsigned mode, Sync sync) {
  WalkedPath at = NVTE_TRY(walk_path(path, Walk::output));
  // /dev/stdout and /proc/self/fd/N name an open file of this process (a shell redirection):
  // appended to, as the shell's `>` or `>>` left it, never replaced behind the shell's back.
  if (at.kernel_link) return write_through(at, path, content, O_APPEND);
  auto node = NVTE_TRY(final_node(at, path));
  if (node && (S_ISCHR(node->st_mode) || S_ISFIFO(node->st_mode))) return write_through(at, path, content, O_NOFOLLOW);
  return replace_regular(at, path, content, mode, sync);
}

Result<void> write_file_in_place(const fs::path& path, std::string_view content) {
  // The file itself, truncated: a bind-mounted file (Kubernetes' /dev/termination-log) cannot be
  // replaced by a rename, and a reader that sees a half-written message loses nothing it needs.
  WalkedPath at = NVTE_TRY(walk_path(path, Walk::output));
  if (at.kernel_link) return write_through(at, path, content, O_APPEND);
  auto node = NVTE_TRY(final_node(at, path));
  if (node && (S_ISCHR(node->st_mode) || S_ISFIFO(node->st_mode))) return write_through(at, path, content, O_NOFOLLOW);
  Fd fd(::openat(at.dir.get(), at.name.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK | (node ? 0 : O_CREAT | O_EXCL),
                 0644));
  if (!fd) return file_error("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return file_error("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) return make_error(ErrorKind::io, "cannot write to " + path.string() + ": it changed while being opened");
  NVTE_TRY_VOID(blocking(fd.get(), path));
  if (::ftruncate(fd.get(), 0) != 0) return file_error("cannot truncate", path, errno);
  NVTE_TRY_VOID(write_all(fd.get(), content, path));
  if (::close(fd.release()) != 0) return file_error("cannot close", path, errno);
  return {};
}

std::size_t sweep_temporaries(const fs::path& dir, std::string_view name, std::chrono::seconds min_age) {
  Fd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return 0;
  return sweep_at(fd.get(), name, min_age);
}

Result<void> check_private_directory(const fs::path& dir) {
  NVTE_TRY_VOID(walk_path(dir, Walk::private_directory));
  return {};
}

Result<Fd> open_lock_file(const fs::path& path) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0644));
  if (!fd) {
    int err = errno;
    if (err == ELOOP)
      return make_error(ErrorKind::invalid, "refusing lock file " + path.string() + ": it is a symlink (remove it)");
    return file_error("cannot open lock file", path, err);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return file_error("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode))
    return make_error(ErrorKind::invalid, "refusing lock file " + path.string() + ": it is " + kind_text(st.st_mode));
  if (::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK) != 0) return file_error("cannot open lock file", path, errno);
  return fd;
}

} // namespace util
