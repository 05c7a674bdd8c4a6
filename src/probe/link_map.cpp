#include "probe/link_map.hpp"

#include "probe/node_path.hpp"
#include "util/hash.hpp"
#include "util/logging.hpp"
#include "util/parallel.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <set>

namespace probe {

std::optional<std::size_t> LinkMap::loaded(std::string_view name) const {
  // Keys were inserted in load order, the first object with a name keeping it: the first match
  // of a walk over the objects.
  if (auto it = m_by_name.find(name); it != m_by_name.end()) return it->second;
  return std::nullopt;
}

const LinkedObject* LinkMap::find(std::string_view name) const {
  auto i = loaded(name);
  return i ? &m_objects[*i] : nullptr;
}

void LinkMap::add_name(std::size_t index, const std::string& name) { m_by_name.try_emplace(name, index); }

util::Result<std::size_t> LinkMap::load(const std::string& node_path, const std::string& name) {
  auto resolved = resolve_node_path(m_view.root, node_path);
  std::string real = resolved ? resolved->real.string() : node_path;
  // The same file under another name is one object (glibc compares the file's identity).
  if (auto it = m_by_real.find(real); it != m_by_real.end()) {
    m_objects[it->second].names.push_back(name);
    add_name(it->second, name);
    return it->second;
  }
  const NodeFile file{m_view.root, real};
  auto dynamic = read_elf_dynamic(file);
  if (!dynamic) return dynamic.error();
  LinkedObject o;
  // A summary in the cache was stored after the symbols were read from this very file (its
  // identity), so they would read again: mapping them waits for a check that needs them.
  if (auto summary = cached_elf_link_summary(file)) {
    o.summary = std::move(*summary);
  } else {
    auto symbols = read_elf_symbols(file);
    if (!symbols) return symbols.error();
    o.symbols = std::move(symbols).value();
    o.summary = elf_link_summary(file, *o.symbols);
  }
  o.path = node_path;
  o.real = real;
  o.soname = dynamic->soname.empty() ? util::path_file_name(node_path) : dynamic->soname;
  o.names = {name};
  o.dynamic = std::move(dynamic).value();
  std::size_t index = m_objects.size();
  m_by_real.emplace(real, index);
  add_name(index, o.soname);
  add_name(index, o.path);
  add_name(index, name);
  m_objects.push_back(std::move(o));
  return index;
}

bool LinkMap::read_symbols(const std::vector<std::size_t>& objects, LinkResult& result, bool& changed) {
  bool read = true;
  for (std::size_t i : objects) {
    LinkedObject& o = m_objects[i];
    if (o.symbols) continue;
    auto symbols = read_elf_symbols(NodeFile{m_view.root, o.real});
    if (!symbols) {
      result.missing.push_back({util::path_file_name(o.path), util::path_file_name(m_objects[result.scope.front()].path),
                                "changed during the run: " + symbols.error().message});
      read = false;
      continue;
    }
    o.symbols = std::move(symbols).value();
    if (!(o.symbols->identity() == o.summary.identity)) changed = true;
  }
  return read;
}

bool LinkMap::resolves(const ElfUndefinedSymbol& u, const Scope& scope,
                       const std::vector<std::pair<const char*, std::size_t>>& version_files, std::vector<std::size_t>& likely) const {
  auto in_scope_defines = [&](std::size_t i) { return scope.in_lookup[i] && m_objects[i].symbols->defines(u.name, u.hash, u.version); };
  // A versioned reference names its definer's file (the requester's DT_VERNEED entry: the same
  // string, so the same pointer, for all its references to that file).
  if (!u.version_file.empty()) {
    for (const auto& [file, i] : version_files)
      if (file == u.version_file.data() && in_scope_defines(i)) return true;
  }
  // The requester's NEEDED objects in the order they last served it: a library's references go
  // mostly to one or two of them (libtorch_cuda's to libtorch_cpu and libc10).
  for (auto at = likely.begin(); at != likely.end(); ++at) {
    if (!in_scope_defines(*at)) continue;
    std::rotate(likely.begin(), at, at + 1);
    return true;
  }
  for (std::size_t i : scope.lookup)
    if (in_scope_defines(i)) return true;
  return false;
}

LinkResult LinkMap::open(const std::string& node_path, bool global, bool check) {
  util::log::Laps laps("link " + util::path_file_name(node_path)); // -vv: the loader's part, then the lookups'
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
    // Copies: load() may grow m_objects and move the requester.
    const std::string requester_path = m_objects[at].path;
    const ElfDynamic requester_dynamic = m_objects[at].dynamic;
    for (const auto& needed : requester_dynamic.needed) {
      std::optional<std::size_t> dep = loaded(needed);
      if (!dep) {
        auto found = resolve_needed(m_view, needed, Requester{requester_path, &requester_dynamic});
        if (!found) {
          result.missing.push_back({needed, util::path_file_name(requester_path), found.error().message});
          continue;
        }
        auto r = load(found->path, needed);
        if (!r) {
          result.missing.push_back({needed, util::path_file_name(requester_path), r.error().message});
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
  Scope lookup;
  lookup.in_lookup.assign(m_objects.size(), 0);
  for (auto list : {&m_global, &scope}) {
    for (std::size_t i : *list) {
      if (lookup.in_lookup[i]) continue;
      lookup.in_lookup[i] = 1;
      lookup.lookup.push_back(i);
    }
  }
  std::vector<std::size_t> fresh;
  for (std::size_t i : scope)
    if (i >= first_new) fresh.push_back(i);
  if (fresh.empty()) fresh.push_back(root);
  laps.lap("loaded " + std::to_string(fresh.size()) + " new of " + std::to_string(scope.size()) + " objects");
  // What the check below reads is fixed by now: the lookup scope's files, the new objects, and
  // the objects their NEEDED and version requirements name. Their identities key the answer in
  // the cache across runs; any file changed, added or replaced keys another entry.
  util::FileCache* cache = node_file_cache();
  std::string cache_key;
  if (cache) {
    cache_key = check_key(lookup.lookup, fresh);
    if (auto text = cache->find("link_check", cache_key, m_objects[root].summary.identity)) {
      if (decode_check(*text, result)) {
        laps.lap("check from the cache");
        return result;
      }
      result.unresolved.clear();
      result.missing_versions.clear();
    }
  }
  // The symbols the check reads: the lookup scope's (the new objects among them) and those of
  // the objects the new ones require versions of. Read here, on this thread, not by the lookups.
  std::vector<std::size_t> readers = lookup.lookup;
  for (std::size_t i : fresh) {
    for (const auto& need : m_objects[i].summary.version_needs)
      if (auto dep = loaded(need.file)) readers.push_back(*dep);
  }
  bool changed = false;
  if (!read_symbols(readers, result, changed)) return result;

  // The references of the new objects, in chunks that threads share (util/parallel.hpp): a torch
  // tree has tens of thousands, mostly in two or three of its objects. Each chunk keeps its own
  // unresolved list; they are joined in order, so the result does not depend on the schedule.
  // Everything the lookups read (the objects, their mappings, the scope) is fixed by now; an
  // object's undefined() list is collected by the one task that asks for it first, below.
  constexpr std::size_t k_chunk = 2048;
  constexpr std::size_t k_parallel_from = 4096; // fewer references: one thread is quicker
  std::size_t references = 0;
  util::parallel_for(fresh.size(), fresh.size() >= 4 ? std::min(util::available_cpus(), 8u) : 1u,
                     [&](std::size_t f) { (void)m_objects[fresh[f]].symbols->undefined(); });
  struct Chunk {
    std::size_t object; // index into fresh
    std::size_t begin, end;
    std::vector<std::size_t> unresolved; // indexes into the object's undefined()
  };
  std::vector<Chunk> chunks;
  for (std::size_t f = 0; f < fresh.size(); ++f) {
    std::size_t n = m_objects[fresh[f]].symbols->undefined().size();
    references += n;
    for (std::size_t b = 0; b < n; b += k_chunk) chunks.push_back({f, b, std::min(n, b + k_chunk), {}});
  }
  // Per object: the files its versions are required of, and its NEEDED objects (likely definers).
  std::vector<std::vector<std::pair<const char*, std::size_t>>> version_files(fresh.size());
  std::vector<std::vector<std::size_t>> needed_objects(fresh.size());
  for (std::size_t f = 0; f < fresh.size(); ++f) {
    const LinkedObject& o = m_objects[fresh[f]];
    for (const auto& needed : o.dynamic.needed)
      if (auto dep = loaded(needed)) needed_objects[f].push_back(*dep);
    for (const auto& need : o.symbols->version_needs()) {
      if (auto dep = loaded(need.file)) version_files[f].emplace_back(need.file.data(), *dep);
    }
  }
  laps.lap("collected " + std::to_string(references) + " references");
  unsigned threads = references >= k_parallel_from ? std::min(util::available_cpus(), 8u) : 1u;
  util::parallel_for(chunks.size(), threads, [&](std::size_t c) {
    Chunk& chunk = chunks[c];
    const auto& undefined = m_objects[fresh[chunk.object]].symbols->undefined();
    std::vector<std::size_t> likely = needed_objects[chunk.object];
    const auto& files = version_files[chunk.object];
    for (std::size_t k = chunk.begin; k < chunk.end; ++k)
      if (!resolves(undefined[k], lookup, files, likely)) chunk.unresolved.push_back(k);
  });
  laps.lap("looked up on " + std::to_string(threads) + " threads");
  for (const auto& chunk : chunks) {
    const LinkedObject& o = m_objects[fresh[chunk.object]];
    const auto& undefined = o.symbols->undefined();
    std::string who = util::path_file_name(o.path);
    for (std::size_t k : chunk.unresolved) {
      const auto& u = undefined[k];
      result.unresolved.push_back({std::string(u.name), demangle_symbol(u.name), std::string(u.version), std::string(u.version_file), who});
    }
  }
  for (std::size_t i : fresh) {
    const LinkedObject& o = m_objects[i];
    std::string who = util::path_file_name(o.path);
    for (const auto& need : o.symbols->version_needs()) {
      if (need.weak) continue;
      const LinkedObject* provider = find(need.file);
      if (!provider || provider->symbols->defines_version(need.version)) continue;
      result.missing_versions.push_back(std::string(need.version) + " of " + std::string(need.file) + " (required by " + who + ")");
    }
  }
  if (cache && !changed) cache->put("link_check", cache_key, m_objects[root].summary.identity, encode_check(result));
  return result;
}

std::string LinkMap::check_key(const std::vector<std::size_t>& lookup, const std::vector<std::size_t>& fresh) const {
  // Each object's path and identity once, at its first mention; later mentions name it by the
  // number it got there. torch's objects require dozens of versions each of the same few files
  // (libc, libstdc++, cudart): describing the file again at each was 0.7 ms of a cached check of
  // torch's _C on the H200 node.
  std::string desc = "link_check 2\n";
  std::vector<std::size_t> number(m_objects.size(), 0); // 0: not described yet
  std::size_t described = 0;
  auto object = [&](std::size_t i) {
    if (number[i] != 0) {
      desc += '#';
      desc += std::to_string(number[i]);
      desc += '\n';
      return;
    }
    number[i] = ++described;
    const LinkedObject& o = m_objects[i];
    const util::FileIdentity& id = o.summary.identity;
    desc += o.real;
    desc += '\0';
    desc += o.path;
    for (auto n : {id.dev, id.ino, id.size, static_cast<std::uint64_t>(id.mtime_ns), static_cast<std::uint64_t>(id.ctime_ns)}) {
      desc += ' ';
      desc += std::to_string(n);
    }
    desc += '\n';
  };
  for (std::size_t i : lookup) object(i);
  desc += "fresh\n";
  for (std::size_t i : fresh) {
    object(i);
    const LinkedObject& o = m_objects[i];
    for (const auto& needed : o.dynamic.needed) {
      desc += " needs " + needed + ": ";
      if (auto dep = loaded(needed)) object(*dep);
      else desc += "-\n";
    }
    // The files its versions are required of, each once (the versions are the file's content).
    std::set<std::string_view> files;
    for (const auto& need : o.summary.version_needs) {
      if (!files.insert(need.file).second) continue;
      desc += " version " + need.file + ": ";
      if (auto dep = loaded(need.file)) object(*dep);
      else desc += "-\n";
    }
  }
  const std::string& root = m_objects[fresh.front()].real;
  return root + " " + util::hex_digest128(desc);
}

std::string LinkMap::encode_check(const LinkResult& r) {
  std::vector<std::string> parts{std::to_string(r.unresolved.size())};
  for (const auto& u : r.unresolved) parts.insert(parts.end(), {u.mangled, u.version, u.version_file, u.needed_by});
  parts.insert(parts.end(), r.missing_versions.begin(), r.missing_versions.end());
  return util::pack_strings(parts);
}

bool LinkMap::decode_check(std::string_view text, LinkResult& r) {
  auto parts = util::unpack_strings(text);
  if (!parts || parts->empty()) return false;
  std::size_t n = std::strtoul(parts->front().c_str(), nullptr, 10);
  if (n > (parts->size() - 1) / 4) return false;
  std::size_t at = 1;
  for (std::size_t k = 0; k < n; ++k, at += 4) {
    const auto& p = *parts;
    r.unresolved.push_back({p[at], demangle_symbol(p[at]), p[at + 1], p[at + 2], p[at + 3]});
  }
  r.missing_versions.assign(parts->begin() + static_cast<std::ptrdiff_t>(at), parts->end());
  return true;
}

} // namespace probe
