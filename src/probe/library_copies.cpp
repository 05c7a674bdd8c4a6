// Copy discovery: list each search directory once, keep the names that belong to the library,
// resolve them under the node root and merge by real path.
#include "probe/library_copies.hpp"

#include "probe/node_path.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <set>

namespace probe {

namespace {

void add(std::vector<SearchDir>& dirs, std::set<std::string>& seen, const std::string& dir, const std::string& source) {
  std::string normalized = normalize_node_path(dir).string();
  if (seen.insert(normalized).second) dirs.push_back({normalized, source});
}

std::vector<std::string> cuda_roots(const Host& host) {
  std::vector<std::string> roots;
  for (const auto& name : node_list_directory(host.root, "/usr/local")) {
    if (name == "cuda" || util::starts_with(name, "cuda-")) roots.push_back("/usr/local/" + name);
  }
  return roots;
}

} // namespace

std::vector<SearchDir> library_search_dirs(const Host& host, const std::vector<Interpreter>& interpreters) {
  std::vector<SearchDir> dirs;
  std::set<std::string> seen;
  for (const auto& it : interpreters) {
    for (const auto& site : it.package_dirs()) {
      std::string nvidia = site + "/nvidia";
      for (const auto& name : node_list_directory(host.root, nvidia)) {
        add(dirs, seen, nvidia + "/" + name + "/lib", "site_packages");
      }
      add(dirs, seen, site + "/torch/lib", "site_packages");
    }
  }
  std::vector<std::string> conda_prefixes;
  if (auto it = host.env.find("CONDA_PREFIX"); it != host.env.end() && !it->second.empty()) conda_prefixes.push_back(it->second);
  for (const auto& it : interpreters) {
    if (it.env_kind == "conda") conda_prefixes.push_back(it.prefix);
  }
  for (const auto& prefix : conda_prefixes) add(dirs, seen, prefix + "/lib", "conda");
  auto roots = cuda_roots(host);
  for (const auto& root : roots) {
    add(dirs, seen, root + "/compat", "compat");
    add(dirs, seen, root + "/compat/lib", "compat"); // NGC containers
  }
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (auto it = host.env.find(var); it != host.env.end() && !it->second.empty()) {
      add(dirs, seen, it->second + "/lib64", "cuda_home");
      add(dirs, seen, it->second + "/lib", "cuda_home");
    }
  }
  for (const auto& root : roots) {
    add(dirs, seen, root + "/lib64", "cuda_home");
    add(dirs, seen, root + "/lib", "cuda_home");
    for (const auto& target : node_list_directory(host.root, root + "/targets")) {
      add(dirs, seen, root + "/targets/" + target + "/lib", "cuda_home");
    }
  }
  if (auto it = host.env.find("LD_LIBRARY_PATH"); it != host.env.end()) {
    for (auto dir : util::split(it->second, ':')) {
      if (!dir.empty() && dir.front() == '/') add(dirs, seen, std::string(dir), "ld_library_path");
    }
  }
  for (const char* dir : {"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/x86_64-linux-gnu",
                          "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"}) {
    add(dirs, seen, dir, "system");
  }
  return dirs;
}

CopyScan find_copies(const std::filesystem::path& root, const LibrarySpec& spec, const std::vector<SearchDir>& dirs,
                     const LdCache* cache) {
  CopyScan scan;
  std::map<std::string, std::size_t> by_real;
  std::set<std::string> problems;
  auto consider = [&](const std::string& node_file, const std::string& source) {
    auto resolved = resolve_node_path(root, node_file);
    if (!resolved) {
      problems.insert(resolved.error().message);
      return;
    }
    std::string real = resolved->real.string();
    if (auto it = by_real.find(real); it != by_real.end()) {
      auto& seen = scan.copies[it->second].seen_as;
      if (std::find(seen.begin(), seen.end(), node_file) == seen.end()) seen.push_back(node_file);
      return;
    }
    if (node_file_type(root, real) != NodeFileType::regular) return;
    auto dynamic = read_elf_dynamic(NodeFile{root, real});
    if (!dynamic) {
      problems.insert(node_file + ": " + dynamic.error().message + " (not a loadable copy)");
      return;
    }
    LibraryCopy copy;
    copy.real_path = real;
    copy.seen_as.push_back(node_file);
    copy.source = source;
    copy.soname = dynamic->soname;
    by_real.emplace(real, scan.copies.size());
    scan.copies.push_back(std::move(copy));
  };
  for (const auto& dir : dirs) {
    for (const auto& name : node_list_directory(root, dir.dir)) {
      if (is_library_file(spec, name)) consider(dir.dir + "/" + name, dir.source);
    }
  }
  if (cache) {
    for (const auto& entry : cache->entries) {
      if (entry.flags != native_ld_cache_flags()) continue;
      if (is_library_file(spec, entry.soname)) consider(normalize_node_path(entry.path).string(), "ld_cache");
    }
  }
  scan.problems.assign(problems.begin(), problems.end());
  return scan;
}

} // namespace probe
