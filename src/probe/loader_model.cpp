// The search order of loader_model.hpp over node paths. A candidate is accepted when it reads as
// an ELF object of this machine's class and architecture, which is the check glibc's open_verify
// makes before it settles on a file.
#include "probe/loader_model.hpp"

#include "probe/node_path.hpp"
#include "util/strings.hpp"

#include <sys/stat.h>

namespace probe {

namespace {

std::string dir_name(std::string_view path) {
  auto slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  return slash == 0 ? "/" : std::string(path.substr(0, slash));
}

// Why a candidate file is not taken, or "" when the loader would take it.
std::string reject_reason(const std::filesystem::path& root, const std::string& node_file) {
  auto resolved = resolve_node_path(root, node_file);
  if (!resolved) return resolved.error().message;
  if (node_file_type(root, resolved->real) != NodeFileType::regular) return node_file + ": not a regular file";
  auto dynamic = read_elf_dynamic(NodeFile{root, resolved->real});
  if (!dynamic) return dynamic.error().message;
  if (!dynamic->is_64bit || dynamic->machine != native_elf_machine()) return node_file + ": wrong ELF class or machine";
  return {};
}

} // namespace

LoaderView make_loader_view(const Host& host, const LdCache* cache) {
  LoaderView view;
  view.root = host.root;
  view.cache = cache;
  if (auto it = host.env.find("LD_LIBRARY_PATH"); it != host.env.end()) {
    // Empty entries mean the current directory to glibc; a probe cannot know the job's cwd.
    for (auto dir : util::split(it->second, ':')) {
      if (!dir.empty()) view.ld_library_path.emplace_back(dir);
    }
  }
  std::string triplet = multiarch_triplet();
  view.default_dirs = {"/lib/" + triplet, "/usr/lib/" + triplet, "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
  return view;
}

util::Result<Resolution> resolve_needed(const LoaderView& view, std::string_view name, const Requester& requester) {
  std::vector<std::string> tried;
  std::string who = requester.path.empty() ? "dlopen" : util::path_file_name(requester.path);
  // reason() says which search step found it; made only for the one that does (a torch tree asks
  // hundreds of directories for names most of them do not hold).
  auto try_dir = [&](const std::string& dir, const char* step, const auto& reason) -> std::optional<Resolution> {
    // Most candidates are not there (an RPATH of $ORIGIN, each LD_LIBRARY_PATH entry): the
    // directory's listing, read once per run, says so without resolving the path.
    if (NodeListing listing = node_list_directory(view.root, dir); listing.listed() && !listing.contains(name)) return std::nullopt;
    std::string candidate = normalize_node_path(std::filesystem::path(dir) / std::string(name)).string();
    std::string why = reject_reason(view.root, candidate);
    if (why.empty()) return Resolution{candidate, step, reason()};
    struct stat st {};
    if (::lstat(host_path(view.root, candidate).c_str(), &st) == 0) tried.push_back("skipped " + why);
    return std::nullopt;
  };

  if (name.find('/') != std::string_view::npos) {
    std::string candidate = normalize_node_path(std::string(name)).string();
    std::string why = reject_reason(view.root, candidate);
    if (why.empty()) return Resolution{candidate, "path", "opened by path"};
    return util::Error{util::ErrorKind::not_found, std::string(name) + ": " + why};
  }

  std::string origin = requester.path.empty() ? "/" : dir_name(requester.path);
  const ElfDynamic* dyn = requester.dynamic;
  if (dyn && dyn->runpath.empty()) {
    for (const auto& entry : dyn->rpath) {
      if (auto r = try_dir(expand_origin(entry, origin), "rpath", [&] { return "RPATH " + entry + " of " + who; })) return *r;
    }
  }
  for (const auto& dir : view.ld_library_path) {
    if (auto r = try_dir(dir, "ld_library_path", [&] { return "LD_LIBRARY_PATH entry " + dir; })) return *r;
  }
  if (dyn) {
    for (const auto& entry : dyn->runpath) {
      if (auto r = try_dir(expand_origin(entry, origin), "runpath", [&] { return "RUNPATH " + entry + " of " + who; })) return *r;
    }
  }
  if (view.cache) {
    if (const LdCacheEntry* entry = view.cache->find(name)) {
      std::string why = reject_reason(view.root, entry->path);
      if (why.empty()) return Resolution{entry->path, "ld_cache", "ld.so.cache entry " + entry->soname + " => " + entry->path};
      tried.push_back("skipped ld.so.cache entry: " + why);
    }
  }
  for (const auto& dir : view.default_dirs) {
    if (auto r = try_dir(dir, "default_dirs", [&] { return "default directory " + dir; })) return *r;
  }
  std::string message = std::string(name) + " not found for " + who + " (RPATH/LD_LIBRARY_PATH/RUNPATH/ld.so.cache/default directories)";
  if (!tried.empty()) message += "; " + util::join(tried, "; ");
  return util::Error{util::ErrorKind::not_found, message};
}

} // namespace probe
