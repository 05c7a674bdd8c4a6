// Node-path resolution: a component-by-component walk that reads each symlink with readlink(2) on
// the host path and re-roots absolute targets under Host::root, counting links to catch loops.
#include "probe/node_path.hpp"

#include "util/file.hpp"

#include <cerrno>
#include <deque>
#include <sys/stat.h>
#include <unistd.h>

namespace probe {

namespace {

constexpr int k_max_links = 40; // the kernel's MAXSYMLINKS

std::deque<std::string> components(const std::filesystem::path& p) {
  std::deque<std::string> out;
  for (const auto& part : p) {
    std::string s = part.string();
    if (s.empty() || s == "/") continue;
    out.push_back(std::move(s));
  }
  return out;
}

} // namespace

std::filesystem::path host_path(const std::filesystem::path& root, const std::filesystem::path& node_path) {
  return util::under_root(root, normalize_node_path(node_path));
}

std::filesystem::path normalize_node_path(const std::filesystem::path& node_path) {
  std::filesystem::path p = node_path.is_absolute() ? node_path : std::filesystem::path("/") / node_path;
  p = p.lexically_normal();
  std::string s = p.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

util::Result<ResolvedPath> resolve_node_path(const std::filesystem::path& root, const std::filesystem::path& node_path) {
  ResolvedPath out;
  std::filesystem::path resolved = "/";
  std::deque<std::string> todo = components(normalize_node_path(node_path));
  int links = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.front());
    todo.pop_front();
    if (part == ".") continue;
    if (part == "..") {
      resolved = resolved.has_relative_path() ? resolved.parent_path() : resolved;
      continue;
    }
    std::filesystem::path candidate = resolved / part;
    std::filesystem::path on_host = util::under_root(root, candidate);
    struct stat st {};
    if (::lstat(on_host.c_str(), &st) != 0) {
      int err = errno;
      std::string what = out.chain.empty() ? "" : " (broken symlink " + out.chain.back().string() + ")";
      return util::Error{util::errno_kind(err), candidate.string() + ": " + util::errno_text(err) + what};
    }
    if (!S_ISLNK(st.st_mode)) {
      resolved = candidate;
      continue;
    }
    if (++links > k_max_links) {
      return util::Error{util::ErrorKind::invalid, normalize_node_path(node_path).string() +
                                                       ": symlink loop (more than 40 links) at " + candidate.string()};
    }
    out.chain.push_back(candidate);
    std::string target(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 4096), '\0');
    ssize_t n = ::readlink(on_host.c_str(), target.data(), target.size());
    if (n < 0) return util::Error{util::errno_kind(errno), candidate.string() + ": readlink: " + util::errno_text(errno)};
    target.resize(static_cast<std::size_t>(n));
    std::deque<std::string> next = components(target);
    next.insert(next.end(), todo.begin(), todo.end());
    todo = std::move(next);
    if (!target.empty() && target[0] == '/') resolved = "/";
  }
  out.real = normalize_node_path(resolved);
  return out;
}

NodeFileType node_file_type(const std::filesystem::path& root, const std::filesystem::path& node_path) {
  auto resolved = resolve_node_path(root, node_path);
  if (!resolved) return NodeFileType::none;
  struct stat st {};
  if (::stat(util::under_root(root, resolved->real).c_str(), &st) != 0) return NodeFileType::none;
  if (S_ISREG(st.st_mode)) return NodeFileType::regular;
  if (S_ISDIR(st.st_mode)) return NodeFileType::directory;
  return NodeFileType::other;
}

std::vector<std::string> node_list_directory(const std::filesystem::path& root, const std::filesystem::path& node_dir) {
  auto resolved = resolve_node_path(root, node_dir);
  if (!resolved) return {};
  auto names = util::list_directory(util::under_root(root, resolved->real));
  return names ? std::move(names).value() : std::vector<std::string>{};
}

} // namespace probe
