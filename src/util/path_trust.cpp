// The trusted walk of a path (path_trust.hpp). The key idea: resolve symlinks here, one component
// at a time with openat(O_PATH | O_NOFOLLOW) and readlinkat, instead of letting open(2) follow
// them, so each link can be judged by who owns it and who can write its directory before it is
// followed, and so the directory finally written into is the one that was checked (the descriptor
// is kept; nothing is looked up by path again).
#include "util/path_trust.hpp"

#include "util/file.hpp"

#include <cerrno>
#include <cstdio>
#include <deque>
#include <fcntl.h>
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

std::string uid_text(uid_t uid) { return "uid " + std::to_string(uid); }

bool writable_by_others(const struct stat& st) { return !trusted_owner(st.st_uid) || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0; }

std::deque<std::string> components(const fs::path& path) {
  std::deque<std::string> out;
  const std::string& text = path.native();
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t slash = text.find('/', start);
    if (slash == std::string::npos) slash = text.size();
    if (slash > start) out.emplace_back(text.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

Error permission(std::string message) { return Error{ErrorKind::permission, std::move(message)}; }

// Whether the symlink `name` in dir may be followed (see the header's rule).
Result<void> check_link(const struct stat& link, const struct stat& dir, const fs::path& dir_path, const std::string& name, Walk mode) {
  const fs::path link_path = dir_path / name;
  if (trusted_owner(link.st_uid)) return {};
  if (mode == Walk::output && !writable_by_others(dir)) return {};
  std::string why = mode == Walk::private_directory
                        ? "; a directory this program trusts must not be reached through another user's link"
                        : " and its directory " + dir_path.string() + " can be written by others (owner " + uid_text(dir.st_uid) +
                              ", mode " + mode_text(dir.st_mode) + "); remove the link or write elsewhere";
  return permission("refusing to follow symlink " + link_path.string() + ": it belongs to " + uid_text(link.st_uid) + why);
}

// The private-directory rule for one directory on the way (last: the directory itself).
Result<void> check_private_component(const struct stat& st, const fs::path& dir_path, const fs::path& whole, bool last) {
  const std::string refusing = "refusing directory " + whole.string() + ": ";
  if (!trusted_owner(st.st_uid)) {
    std::string owner =
        "belongs to " + uid_text(st.st_uid) + ", not to this user (" + uid_text(::geteuid()) + ") or root; another user could ";
    if (last) return permission(refusing + "it " + owner + "plant links in it");
    return permission(refusing + "its component " + dir_path.string() + " " + owner + "replace what follows it");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) == 0) return {};
  if (last)
    return permission(refusing + "mode " + mode_text(st.st_mode) + " lets other users write to it (chmod go-w " + whole.string() + ")");
  // A sticky directory (/tmp): others may add entries but not rename or remove this user's or
  // root's, and the next component is checked for its owner.
  if ((st.st_mode & S_ISVTX) != 0) return {};
  return permission(refusing + "its component " + dir_path.string() + " has mode " + mode_text(st.st_mode) +
                    ": other users can write to it and replace what follows it (chmod go-w " + dir_path.string() + ")");
}

Result<Fd> open_root() {
  Fd fd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return file_error("cannot open", "/", errno);
  return fd;
}

} // namespace

bool trusted_owner(uid_t uid) { return uid == 0 || uid == ::geteuid(); }

Result<WalkedPath> walk_path(const fs::path& given, Walk mode) {
  std::error_code ec;
  const fs::path path = given.is_absolute() ? given : fs::absolute(given, ec);
  if (ec) return Error{ErrorKind::io, "cannot resolve " + given.string() + ": " + ec.message()};
  std::deque<std::string> todo = components(path);
  // "cannot resolve /a/b/c: /a/b: No such file or directory": the path asked for, then the part at fault.
  auto resolve_error = [&](const fs::path& part, int err) {
    if (part == path || part == given) return file_error("cannot resolve", given, err);
    return file_error("cannot resolve " + given.string() + ":", part, err);
  };
  WalkedPath w;
  w.dir = NVTE_TRY(open_root());
  w.dir_path = "/";
  int links = 0;
  auto check_entered = [&](bool last) -> Result<void> {
    if (mode != Walk::private_directory) return {};
    struct stat st {};
    if (::fstat(w.dir.get(), &st) != 0) return file_error("cannot stat", w.dir_path, errno);
    return check_private_component(st, w.dir_path, given, last);
  };
  if (todo.empty() || mode == Walk::private_directory) NVTE_TRY_VOID(check_entered(todo.empty()));
  while (!todo.empty()) {
    std::string name = std::move(todo.front());
    todo.pop_front();
    const bool last = todo.empty();
    if (name == ".") {
      if (last) NVTE_TRY_VOID(check_entered(true));
      continue;
    }
    if (name == "..") {
      Fd up(::openat(w.dir.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (!up) return resolve_error(w.dir_path / "..", errno);
      w.dir = std::move(up);
      w.dir_path = w.dir_path.parent_path();
      NVTE_TRY_VOID(check_entered(last));
      continue;
    }
    struct stat st {};
    if (::fstatat(w.dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      int err = errno;
      if (err == ENOENT && last && mode == Walk::output) {
        w.name = std::move(name);
        return w;
      }
      return resolve_error(w.dir_path / name, err);
    }
    if (S_ISLNK(st.st_mode)) {
      struct stat dir {};
      if (::fstat(w.dir.get(), &dir) != 0) return file_error("cannot stat", w.dir_path, errno);
      NVTE_TRY_VOID(check_link(st, dir, w.dir_path, name, mode));
      if (++links > k_max_symlinks) return resolve_error(path, ELOOP);
      std::string target(4096, '\0');
      ssize_t n = ::readlinkat(w.dir.get(), name.c_str(), target.data(), target.size());
      if (n < 0) return file_error("cannot read symlink", w.dir_path / name, errno);
      target.resize(static_cast<std::size_t>(n));
      if (last && mode == Walk::output &&
          (target.starts_with("/proc/") || w.dir_path == "/proc" || w.dir_path.string().starts_with("/proc/"))) {
        // /dev/stdout -> /proc/self/fd/1: a "magic" link to an open file of this process, whose
        // text ("pipe:[42]") is no path; only the kernel can follow it, and nobody else owns it.
        w.name = std::move(name);
        w.kernel_link = true;
        return w;
      }
      if (last) w.via_link = true;
      auto parts = components(target);
      todo.insert(todo.begin(), parts.begin(), parts.end());
      if (!target.empty() && target.front() == '/') {
        w.dir = NVTE_TRY(open_root());
        w.dir_path = "/";
        NVTE_TRY_VOID(check_entered(todo.empty()));
      } else if (parts.empty() && last) {
        NVTE_TRY_VOID(check_entered(true));
      }
      continue;
    }
    if (last && mode == Walk::output) {
      w.name = std::move(name);
      return w;
    }
    if (!S_ISDIR(st.st_mode))
      return Error{ErrorKind::invalid, "cannot resolve " + given.string() + ": " + (w.dir_path / name).string() + " is not a directory"};
    Fd next(::openat(w.dir.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) return resolve_error(w.dir_path / name, errno);
    w.dir = std::move(next);
    w.dir_path /= name;
    NVTE_TRY_VOID(check_entered(last));
  }
  return w;
}

Result<void> check_trusted_path(const fs::path& path, std::string_view what) {
  WalkedPath w = NVTE_TRY(walk_path(path, Walk::output));
  struct stat st {};
  int rc = w.name.empty() ? ::fstat(w.dir.get(), &st) : ::fstatat(w.dir.get(), w.name.c_str(), &st, 0);
  if (rc != 0) return file_error("cannot use " + std::string(what), path, errno);
  const std::string subject = "refusing " + std::string(what) + " " + path.string();
  if (!trusted_owner(st.st_uid))
    return permission(subject + ": it belongs to " + uid_text(st.st_uid) + ", not to this user (" + uid_text(::geteuid()) +
                      ") or root, who could change what this program does (chown it to root)");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return permission(subject + ": mode " + mode_text(st.st_mode) + " lets other users change it (chmod go-w " + path.string() + ")");
  return {};
}

Result<WalkedPath> private_cache_directory(const fs::path& dir) {
  auto make_private = [](const fs::path& d) {
    struct stat st {};
    if (::lstat(d.c_str(), &st) == 0 || errno != ENOENT || !d.has_parent_path()) return;
    if (walk_path(d.parent_path(), Walk::private_directory)) (void)::mkdir(d.c_str(), 0700);
  };
  if (dir.has_parent_path()) make_private(dir.parent_path());
  make_private(dir);
  return walk_path(dir, Walk::private_directory);
}

} // namespace util
