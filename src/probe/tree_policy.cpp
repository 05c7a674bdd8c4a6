// The rule for untrusted trees (tree_policy.hpp): whether a tree is live, and whether a file of
// it may be loaded. stat(2) only: nothing is opened to decide.
#include "probe/tree_policy.hpp"

#include "probe/node_path.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

namespace probe {

namespace {

// Why the owner and mode of path (what st says it is) let a user other than root change it.
std::optional<std::string> others_may_write(const struct stat& st) {
  if (st.st_uid != 0) return "owned by uid " + std::to_string(st.st_uid);
  // A sticky directory writable by all (/tmp) lets others add names, not replace root's: the
  // entry below it is checked for its own owner.
  bool sticky_dir = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) != 0;
  if ((st.st_mode & S_IWOTH) != 0 && !sticky_dir) return std::string("writable by all users");
  if ((st.st_mode & S_IWGRP) != 0 && st.st_gid != 0 && !sticky_dir) return "writable by group " + std::to_string(st.st_gid);
  return std::nullopt;
}

// The file or directory at path and every directory above it; a missing part (a directory the
// loader would search but that is not there) is skipped: its parent decides who could create it.
std::optional<std::string> path_others_may_change(std::filesystem::path path, bool is_file) {
  path = path.lexically_normal();
  for (bool first = true;; first = false) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
      if (auto why = others_may_write(st)) return first && is_file ? *why : "directory " + path.string() + " is " + *why;
    }
    if (path == path.root_path() || !path.has_relative_path()) break;
    path = path.parent_path();
  }
  return std::nullopt;
}

} // namespace

TreeKind tree_kind(const Host& host) {
  if (!is_live_root(host.root) || host.image_environment) return TreeKind::examined;
  return TreeKind::live;
}

std::optional<std::string> ownership_refusal(const std::filesystem::path& host_file, uid_t euid) {
  if (euid != 0) return std::nullopt;
  return path_others_may_change(std::filesystem::absolute(host_file), true);
}

std::optional<std::string> loader_path_refusal(uid_t euid) {
  if (euid != 0) return std::nullopt;
  const char* value = std::getenv("LD_LIBRARY_PATH");
  if (!value) return std::nullopt;
  for (auto dir : util::split(value, ':')) {
    // An empty or relative entry is the working directory to the loader.
    std::filesystem::path path = dir.empty() ? std::filesystem::current_path() : std::filesystem::absolute(std::string(dir));
    if (auto why = path_others_may_change(path, false))
      return "LD_LIBRARY_PATH names " + std::string(dir) + ", and " + *why + ": the loader would take dependencies from there";
  }
  return std::nullopt;
}

std::optional<std::string> load_refusal(const Host& host, const std::string& real_node_path) {
  if (!host.allow_vendor_calls) return std::string("version unknown without loading it (vendor calls disabled)");
  if (tree_kind(host) == TreeKind::examined && !host.load_fixture_libraries) {
    if (!is_live_root(host.root))
      return "version unknown without loading it (a file of the examined tree " + host.root.string() + " is read, never loaded)";
    return std::string("version unknown without loading it (the image's environment names it: an image's files are read, never loaded)");
  }
  const uid_t euid = ::geteuid();
  auto why = ownership_refusal(host_path(host.root, real_node_path), euid);
  if (!why) why = loader_path_refusal(euid);
  if (why) return "version unknown: not loaded (" + *why + ")";
  return std::nullopt;
}

} // namespace probe
