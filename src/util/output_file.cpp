// The safe output layer: every file this program writes goes through write_file_atomic, and the
// run lock through open_lock_file. The key idea: look at what is at the path (lstat) before
// writing, because rename(2) replaces whatever has that name. A regular file is replaced
// atomically; a device, a FIFO or a /proc link (the idioms `-o /dev/null`, `-o /dev/stdout`) is
// written through, never replaced; a symlink is resolved on purpose, not by accident of rename.
// Signals that end a run politely (SIGTERM from systemd, SIGINT, SIGHUP) are held back from the
// first byte of the temporary to the rename, so a stop finishes the write; what SIGKILL or a
// power cut leaves behind is swept by the next writer of the same name.
#include "util/file.hpp"

#include "util/defer.hpp"

#include <cerrno>
#include <csignal>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

namespace util {

namespace fs = std::filesystem;

namespace {

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

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

// Opens an existing node and writes content to it; flags add O_APPEND for a /proc link.
Result<void> write_through(const fs::path& path, std::string_view content, int flags) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | flags));
  if (!fd) return file_error("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return file_error("cannot stat", path, errno);
  if (S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode))
    return make_error(ErrorKind::invalid, "refusing to write to " + path.string() + ": it is " + kind_text(st.st_mode));
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

Result<void> replace_regular(const fs::path& path, std::string_view content, unsigned mode, Sync sync) {
  auto dir = path.parent_path();
  if (dir.empty()) dir = ".";
  sweep_temporaries(dir, path.filename().string());
  // Built in steps: GCC 12 at -O3 reports a false -Wrestrict for the one-expression form.
  std::string name = ".";
  name += path.filename().string();
  name += ".tmp.XXXXXX";
  std::string tmpl = (dir / name).string();
  // Held before the temporary exists: a stop between mkstemp and rename would orphan it.
  HoldStopSignals hold;
  Fd fd(::mkostemp(tmpl.data(), O_CLOEXEC));
  if (!fd) return file_error("cannot create a temporary file in", dir, errno);
  bool committed = false;
  Defer cleanup([&] {
    if (!committed) ::unlink(tmpl.c_str());
  });
  NVTE_TRY_VOID(write_all(fd.get(), content, path));
  if (::fchmod(fd.get(), mode) != 0) return file_error("cannot chmod", tmpl, errno);
  if (sync == Sync::yes && ::fsync(fd.get()) != 0) return file_error("cannot fsync", path, errno);
  if (::close(fd.release()) != 0) return file_error("cannot close", path, errno);
  if (::rename(tmpl.c_str(), path.c_str()) != 0) return file_error("cannot rename onto", path, errno);
  committed = true;
  if (sync == Sync::yes) {
    // The rename is durable only once the directory is: without this a power cut can lose it.
    Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir_fd) (void)::fsync(dir_fd.get());
  }
  return {};
}

} // namespace

Result<void> write_file_atomic(const fs::path& path, std::string_view content, unsigned mode, Sync sync) {
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0) {
    if (errno != ENOENT) return file_error("cannot stat", path, errno);
    return replace_regular(path, content, mode, sync);
  }
  if (S_ISREG(link.st_mode)) return replace_regular(path, content, mode, sync);
  if (S_ISCHR(link.st_mode) || S_ISFIFO(link.st_mode)) return write_through(path, content, O_TRUNC);
  if (!S_ISLNK(link.st_mode))
    return make_error(ErrorKind::invalid, "refusing to write to " + path.string() + ": it is " + kind_text(link.st_mode));

  struct stat target {};
  if (::stat(path.c_str(), &target) != 0) {
    int err = errno;
    if (err == ENOENT)
      return make_error(ErrorKind::invalid, "refusing to write to " + path.string() +
                                                ": it is a symlink to a missing file (write to the target, or remove the link)");
    return file_error("cannot stat", path, err);
  }
  if (S_ISCHR(target.st_mode) || S_ISFIFO(target.st_mode)) return write_through(path, content, O_TRUNC);
  if (!S_ISREG(target.st_mode))
    return make_error(ErrorKind::invalid, "refusing to write to " + path.string() + ": it links to " + kind_text(target.st_mode));
  std::error_code ec;
  fs::path resolved = fs::canonical(path, ec);
  if (ec) return make_error(ErrorKind::io, "cannot resolve " + path.string() + ": " + ec.message());
  // /dev/stdout and /proc/self/fd/N name an open file of this process (a shell redirection):
  // appended to, as the shell's `>` or `>>` left it, never replaced behind the shell's back.
  if (path.string().starts_with("/proc/") || resolved.string().starts_with("/proc/") ||
      fs::read_symlink(path, ec).string().starts_with("/proc/"))
    return write_through(path, content, O_APPEND);
  return replace_regular(resolved, content, mode, sync);
}

std::size_t sweep_temporaries(const fs::path& dir, std::string_view name, std::chrono::seconds min_age) {
  DIR* raw = ::opendir(dir.c_str());
  if (!raw) return 0;
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

Result<void> check_private_directory(const fs::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return file_error("cannot use directory", dir, errno);
  if (!S_ISDIR(st.st_mode)) return make_error(ErrorKind::invalid, dir.string() + ": not a directory");
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0)
    return make_error(ErrorKind::permission, "refusing directory " + dir.string() + ": it belongs to uid " +
                                                 std::to_string(st.st_uid) + ", not to this user (uid " +
                                                 std::to_string(me) + ") or root; another user could plant links in it");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return make_error(ErrorKind::permission, "refusing directory " + dir.string() + ": mode " + mode_text(st.st_mode) +
                                                 " lets other users write to it (chmod go-w " + dir.string() + ")");
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

namespace util {

Result<void> write_file_in_place(const fs::path& path, std::string_view content) {
  // O_TRUNC on the file itself: a bind-mounted file (Kubernetes' /dev/termination-log) cannot be
  // replaced by a rename, and a reader that sees a half-written message loses nothing it needs.
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644));
  if (!fd) return file_error("cannot open", path, errno);
  NVTE_TRY_VOID(write_all(fd.get(), content, path));
  if (::close(fd.release()) != 0) return file_error("cannot close", path, errno);
  return {};
}

} // namespace util
