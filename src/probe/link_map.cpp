#include "probe/link_map.hpp"

#include "probe/node_path.hpp"

#include <algorithm>
#include <deque>
#include <set>

namespace probe {

namespace {

std::string file_name(std::string_view path) {
  auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

} // namespace

std::optional<std::size_t> LinkMap::loaded(std::string_view name) const {
  for (std::size_t i = 0; i < m_objects.size(); ++i) {
    const auto& o = m_objects[i];
    if (o.soname == name || o.path == name) return i;
    if (std::find(o.names.begin(), o.names.end(), name) != o.names.end()) return i;
  }
  return std::nullopt;
}

const LinkedObject* LinkMap::find(std::string_view name) const {
  auto i = loaded(name);
  return i ? &m_objects[*i] : nullptr;
}

util::Result<std::size_t> LinkMap::load(const std::string& node_path, const std::string& name) {
  auto resolved = resolve_node_path(m_view.root, node_path);
  std::string real = resolved ? resolved->real.string() : node_path;
  // The same file under another name is one object (glibc compares the file's identity).
  for (std::size_t i = 0; i < m_objects.size(); ++i) {
    if (m_objects[i].real == real) {
      m_objects[i].names.push_back(name);
      return i;
    }
  }
  std::filesystem::path host = host_path(m_view.root, real);
  auto dynamic = read_elf_dynamic(host);
  if (!dynamic) return dynamic.error();
  auto symbols = read_elf_symbols(host);
  if (!symbols) return symbols.error();
  LinkedObject o;
  o.path = node_path;
  o.real = real;
  o.soname = dynamic->soname.empty() ? file_name(node_path) : dynamic->soname;
  o.names = {name};
  o.dynamic = std::move(dynamic).value();
  o.symbols = std::move(symbols).value();
  m_objects.push_back(std::move(o));
  return m_objects.size() - 1;
}

LinkResult LinkMap::open(const std::string& node_path, bool global, bool check) {
  LinkResult result;
  std::size_t first_new = m_objects.size();
  std::size_t root;
  if (auto already = loaded(node_path)) {
    root = *already;
  } else {
    auto r = load(node_path, node_path);
    if (!r) {
      result.error = r.error().message;
      return result;
    }
    root = *r;
  }
  result.opened = true;

  // The root's NEEDED tree, breadth first: its local scope.
  std::vector<std::size_t>& scope = result.scope;
  std::set<std::size_t> in_scope;
  std::deque<std::size_t> queue{root};
  scope.push_back(root);
  in_scope.insert(root);
  while (!queue.empty()) {
    std::size_t at = queue.front();
    queue.pop_front();
    // A copy: load() may grow m_objects and move the requester.
    const LinkedObject requester = m_objects[at];
    for (const auto& needed : requester.dynamic.needed) {
      std::optional<std::size_t> dep = loaded(needed);
      if (!dep) {
        auto found = resolve_needed(m_view, needed, Requester{requester.path, &requester.dynamic});
        if (!found) {
          result.missing.push_back({needed, file_name(requester.path), found.error().message});
          continue;
        }
        auto r = load(found->path, needed);
        if (!r) {
          result.missing.push_back({needed, file_name(requester.path), r.error().message});
          continue;
        }
        dep = *r;
      }
      if (in_scope.insert(*dep).second) {
        scope.push_back(*dep);
        queue.push_back(*dep);
      }
    }
  }
  if (global) {
    for (std::size_t i : scope)
      if (std::find(m_global.begin(), m_global.end(), i) == m_global.end()) m_global.push_back(i);
  }
  if (!check) return result;

  // The lookup scope of the new objects: the global scope, then the local one.
  std::vector<const ElfSymbols*> lookup;
  std::set<std::size_t> seen;
  for (auto list : {&m_global, &scope}) {
    for (std::size_t i : *list)
      if (seen.insert(i).second) lookup.push_back(m_objects[i].symbols.get());
  }
  std::vector<std::size_t> fresh;
  for (std::size_t i : scope)
    if (i >= first_new) fresh.push_back(i);
  if (fresh.empty()) fresh.push_back(root);
  for (std::size_t i : fresh) {
    const LinkedObject& o = m_objects[i];
    std::string who = file_name(o.path);
    for (const auto& u : o.symbols->undefined()) {
      std::uint32_t hash = gnu_hash(u.name);
      bool found = std::any_of(lookup.begin(), lookup.end(), [&](const ElfSymbols* s) { return s->defines(u.name, hash, u.version); });
      if (found) continue;
      result.unresolved.push_back({std::string(u.name), demangle_symbol(u.name), std::string(u.version), std::string(u.version_file), who});
    }
    for (const auto& need : o.symbols->version_needs()) {
      if (need.weak) continue;
      const LinkedObject* provider = find(need.file);
      if (!provider || provider->symbols->defines_version(need.version)) continue;
      result.missing_versions.push_back(std::string(need.version) + " of " + std::string(need.file) + " (required by " + who + ")");
    }
  }
  return result;
}

} // namespace probe
