// Node-path resolution: a component-by-component walk that reads each symlink with readlink(2) on
// the host path and re-roots absolute targets under Host::root, counting links to catch loops.
#include "probe/node_path.hpp"

#include "util/file.hpp"
#include "util/file_in_root.hpp"

#include <algorithm>
#include <cerrno>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>
#include <sys/stat.h>
#include <unistd.h>

namespace probe {

namespace {

constexpr int k_max_links = 40; // the kernel's MAXSYMLINKS

// The components of a path pushed onto a stack (the first component on top), after what is on it
// already: a symlink's target goes before the rest of the walk. Empty components (a doubled or
// trailing slash, the root) are dropped.
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

struct Entry {
  int lstat_errno = 0;
  bool is_link = false;
  int readlink_errno = 0;
  std::string target;
};

struct Memo {
  std::unordered_map<std::string, Entry> entries; // host path -> lstat/readlink
  using Key = std::string;                        // root, '\0', node path
  std::unordered_map<Key, util::Result<ResolvedPath>> resolved;
  std::unordered_map<Key, NodeFileType> types;
  std::unordered_map<Key, NodeListing> listings;
  std::shared_ptr<NodeFsMemo::Shared> values; // node_memo_value's, shared with helper threads
  std::set<std::string> denied;               // node directories whose listing or lookup failed with EACCES/EPERM
};
// Per thread: a probe that runs on a thread of its own (the native probe's link of torch, which
// overlaps the libraries probe) makes its own memo; nothing is shared, so nothing is locked.
thread_local std::unique_ptr<Memo> g_memo;

// lstat(2) and, for a symlink, readlink(2) of one host path: the step of every walk.
Entry read_entry(const std::string& on_host) {
  Entry e;
  struct stat st {};
  if (::lstat(on_host.c_str(), &st) != 0) {
    e.lstat_errno = errno;
    return e;
  }
  e.is_link = S_ISLNK(st.st_mode);
  if (!e.is_link) return e;
  std::string target(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 4096), '\0');
  ssize_t n = ::readlink(on_host.c_str(), target.data(), target.size());
  if (n < 0) {
    e.readlink_errno = errno;
    return e;
  }
  target.resize(static_cast<std::size_t>(n));
  e.target = std::move(target);
  return e;
}

// Walks share their prefixes (/usr, /usr/local, /usr/local/cuda-13.0, ...): with a memo active
// each host path is read once per run.
const Entry& lookup(const std::string& on_host) {
  thread_local Entry scratch;
  if (!g_memo) return scratch = read_entry(on_host);
  auto [it, inserted] = g_memo->entries.try_emplace(on_host);
  if (inserted) it->second = read_entry(on_host);
  return it->second;
}

bool is_normal_absolute(const std::string& s);

Memo::Key memo_key(const std::filesystem::path& root, const std::filesystem::path& node_path) {
  Memo::Key key = root.native();
  key += '\0';
  // Most paths are normal already: no std::filesystem::path copy (and its component list) then.
  if (is_normal_absolute(node_path.native())) key += node_path.native();
  else key += normalize_node_path(node_path).native();
  return key;
}

util::Result<ResolvedPath> resolve_uncached(const std::filesystem::path& root, const std::filesystem::path& node_path);

// The memo's answer for (root, node path) in table, computing it the first time; without an
// active memo, just the computation.
template <typename Value, typename Compute>
Value remembered(std::unordered_map<Memo::Key, Value> Memo::*table, const std::filesystem::path& root,
                 const std::filesystem::path& node_path, Compute compute) {
  if (!g_memo) return compute(root, node_path);
  auto key = memo_key(root, node_path);
  auto& entries = (*g_memo).*table;
  if (auto it = entries.find(key); it != entries.end()) return it->second;
  auto value = compute(root, node_path);
  entries.emplace(std::move(key), value);
  return value;
}

} // namespace

struct NodeFsMemo::Shared {
  std::mutex mutex;
  // kind, key -> the value once made; a thread that asks while another makes it waits for it
  // (the python probe and the libraries probe's thread both ask for the interpreter scan first).
  std::map<std::pair<std::string, std::string>, std::shared_future<std::shared_ptr<const void>>> values;
  std::shared_ptr<util::FileCache> file_cache; // set before the threads that share it start
};

NodeFsMemo::NodeFsMemo() : NodeFsMemo(std::make_shared<Shared>()) {}

NodeFsMemo::NodeFsMemo(std::shared_ptr<Shared> values) {
  if (g_memo) return;
  g_memo = std::make_unique<Memo>();
  g_memo->values = values ? std::move(values) : std::make_shared<Shared>();
  m_owner = true;
}

std::shared_ptr<NodeFsMemo::Shared> NodeFsMemo::share() { return g_memo ? g_memo->values : nullptr; }

NodeFsMemo::~NodeFsMemo() {
  if (m_owner) g_memo.reset();
}

util::FileCache* node_file_cache() { return g_memo && g_memo->values->file_cache ? g_memo->values->file_cache.get() : nullptr; }

void node_set_file_cache(std::shared_ptr<util::FileCache> cache) {
  if (g_memo) g_memo->values->file_cache = std::move(cache);
}

std::vector<std::string> node_denied_directories() {
  if (!g_memo) return {};
  return {g_memo->denied.begin(), g_memo->denied.end()};
}

void node_add_denied_directories(const std::vector<std::string>& dirs) {
  if (g_memo) g_memo->denied.insert(dirs.begin(), dirs.end());
}

NodeListing::NodeListing(std::vector<std::string> names) {
  Data data;
  data.types.assign(names.size(), util::EntryType::unknown);
  data.names = std::move(names);
  data.listed = true;
  m_data = std::make_shared<const Data>(std::move(data));
}

NodeListing::NodeListing(std::vector<util::DirEntry> entries) {
  Data data;
  data.names.reserve(entries.size());
  data.types.reserve(entries.size());
  for (auto& e : entries) {
    data.names.push_back(std::move(e.name));
    data.types.push_back(e.type);
  }
  data.listed = true;
  m_data = std::make_shared<const Data>(std::move(data));
}

bool NodeListing::contains(std::string_view name) const {
  return m_data->listed &&
         std::binary_search(m_data->names.begin(), m_data->names.end(), name, [](std::string_view a, std::string_view b) { return a < b; });
}

std::shared_ptr<const void> node_memo_find(std::string_view kind, const std::string& key) {
  if (!g_memo) return nullptr;
  NodeFsMemo::Shared& shared = *g_memo->values;
  std::shared_future<std::shared_ptr<const void>> slot;
  {
    std::lock_guard lock(shared.mutex);
    auto it = shared.values.find({std::string(kind), key});
    if (it == shared.values.end()) return nullptr;
    slot = it->second;
  }
  return slot.get();
}

std::shared_ptr<const void> node_memo_value(std::string_view kind, const std::string& key,
                                            const std::function<std::shared_ptr<const void>()>& make) {
  if (!g_memo) return make();
  NodeFsMemo::Shared& shared = *g_memo->values;
  std::promise<std::shared_ptr<const void>> promise;
  std::shared_future<std::shared_ptr<const void>> made_elsewhere;
  {
    std::lock_guard lock(shared.mutex);
    auto [it, inserted] = shared.values.try_emplace({std::string(kind), key});
    if (inserted) it->second = promise.get_future().share();
    else made_elsewhere = it->second;
  }
  if (made_elsewhere.valid()) return made_elsewhere.get(); // made, or being made by another thread
  // make runs unlocked; what it throws reaches every thread that waits for this slot too.
  try {
    auto value = make();
    promise.set_value(value);
    return value;
  } catch (...) {
    promise.set_exception(std::current_exception());
    throw;
  }
}

std::filesystem::path host_path(const std::filesystem::path& root, const std::filesystem::path& node_path) {
  return util::under_root(root, normalize_node_path(node_path));
}

bool is_live_root(const std::filesystem::path& root) { return root.empty() || root == "/"; }

// With root "/" the path is a host path as given (a test's relative path stays relative).
std::filesystem::path NodeFile::host() const { return is_live_root(root) ? path : host_path(root, path); }

util::Result<util::Fd> open_node_file(const NodeFile& file) {
  if (is_live_root(file.root)) return util::open_regular_file(file.path);
  return util::open_file_in_root(file.root, normalize_node_path(file.path));
}

util::Result<std::string> read_node_file(const std::filesystem::path& root, const std::filesystem::path& node_path, std::size_t max_bytes) {
  return util::read_file_in_root(root, normalize_node_path(node_path), max_bytes);
}

util::Result<std::string> read_node_file_head(const std::filesystem::path& root, const std::filesystem::path& node_path,
                                              std::size_t max_bytes) {
  return util::read_file_head_in_root(root, normalize_node_path(node_path), max_bytes);
}

namespace {

// Already absolute and normal: no empty, "." or ".." component and no trailing slash. The common
// case, and lexically_normal() is the probe's most expensive string operation.
bool is_normal_absolute(const std::string& s) {
  if (s.empty() || s[0] != '/') return false;
  if (s.size() == 1) return true;
  if (s.back() == '/') return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '/') continue;
    std::size_t end = s.find('/', i + 1);
    std::string_view part(s.data() + i + 1, (end == std::string::npos ? s.size() : end) - i - 1);
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

} // namespace

std::filesystem::path normalize_node_path(const std::filesystem::path& node_path) {
  if (is_normal_absolute(node_path.native())) return node_path;
  std::filesystem::path p = node_path.is_absolute() ? node_path : std::filesystem::path("/") / node_path;
  p = p.lexically_normal();
  std::string s = p.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

util::Result<ResolvedPath> resolve_node_path(const std::filesystem::path& root, const std::filesystem::path& node_path) {
  return remembered(&Memo::resolved, root, node_path, resolve_uncached);
}

namespace {

// On plain strings (the walk is the probe's most frequent path operation): resolved is always a
// normal absolute path, "/" or "/a/b".
util::Result<ResolvedPath> resolve_uncached(const std::filesystem::path& root, const std::filesystem::path& node_path) {
  ResolvedPath out;
  std::string resolved = "/";
  std::vector<std::string> todo; // a stack: the next component last
  push_components(normalize_node_path(node_path).native(), todo);
  const bool host_root = root.empty() || root == "/";
  int links = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.back());
    todo.pop_back();
    if (part == ".") continue;
    if (part == "..") {
      auto slash = resolved.rfind('/');
      resolved.resize(slash == 0 ? 1 : slash);
      continue;
    }
    std::string candidate = resolved.size() == 1 ? "/" + part : resolved + "/" + part;
    const Entry& entry = lookup(host_root ? candidate : util::under_root(root, candidate).native());
    if (entry.lstat_errno != 0) {
      // A directory without search permission hides what is in it: remembered, not "missing".
      if (g_memo && (entry.lstat_errno == EACCES || entry.lstat_errno == EPERM)) g_memo->denied.insert(resolved);
      std::string what = out.chain.empty() ? "" : " (broken symlink " + out.chain.back().string() + ")";
      return util::Error{util::errno_kind(entry.lstat_errno), candidate + ": " + util::errno_text(entry.lstat_errno) + what};
    }
    if (!entry.is_link) {
      resolved = std::move(candidate);
      continue;
    }
    if (++links > k_max_links) {
      return util::Error{util::ErrorKind::invalid,
                         normalize_node_path(node_path).string() + ": symlink loop (more than 40 links) at " + candidate};
    }
    out.chain.emplace_back(candidate);
    if (entry.readlink_errno != 0)
      return util::Error{util::errno_kind(entry.readlink_errno), candidate + ": readlink: " + util::errno_text(entry.readlink_errno)};
    const std::string& target = entry.target;
    push_components(target, todo);
    if (!target.empty() && target[0] == '/') resolved = "/";
  }
  out.real = normalize_node_path(resolved);
  return out;
}

NodeFileType file_type_uncached(const std::filesystem::path& root, const std::filesystem::path& node_path) {
  auto resolved = resolve_node_path(root, node_path);
  if (!resolved) return NodeFileType::none;
  struct stat st {};
  if (::stat(util::under_root(root, resolved->real).c_str(), &st) != 0) return NodeFileType::none;
  if (S_ISREG(st.st_mode)) return NodeFileType::regular;
  if (S_ISDIR(st.st_mode)) return NodeFileType::directory;
  return NodeFileType::other;
}

NodeListing list_real(const std::filesystem::path& root, const std::filesystem::path& real) {
  struct Listed {
    NodeListing listing;
    bool denied = false;
  };
  auto list = [&] {
    auto entries = util::list_directory_entries(util::under_root(root, real));
    Listed out;
    out.denied = !entries && entries.error().kind == util::ErrorKind::permission;
    if (entries) out.listing = NodeListing(std::move(entries).value());
    return out;
  };
  if (!g_memo) return list().listing;
  // Read once for all the threads that share the memo's values (the copy scan's thread and the
  // python probe both list the search directories, thousands of names each); each thread still
  // remembers it in its own table and records a refusal in its own list.
  auto value = node_memo_value("listing", memo_key(root, real), [&] { return std::make_shared<const Listed>(list()); });
  const auto& listed = *std::static_pointer_cast<const Listed>(value);
  if (listed.denied) g_memo->denied.insert(real.string());
  return listed.listing;
}

NodeListing list_uncached(const std::filesystem::path& root, const std::filesystem::path& node_dir) {
  auto resolved = resolve_node_path(root, node_dir);
  if (!resolved) return {};
  return list_real(root, resolved->real);
}

} // namespace

NodeFileType node_file_type(const std::filesystem::path& root, const std::filesystem::path& node_path) {
  return remembered(&Memo::types, root, node_path, file_type_uncached);
}

NodeListing node_list_directory(const std::filesystem::path& root, const std::filesystem::path& node_dir) {
  if (!g_memo) return list_uncached(root, node_dir);
  auto key = memo_key(root, node_dir);
  if (auto it = g_memo->listings.find(key); it != g_memo->listings.end()) return it->second;
  // Remembered by the real directory too: on a merged-/usr system /lib/x86_64-linux-gnu and
  // /usr/lib/x86_64-linux-gnu (thousands of names, both search directories), /bin and /usr/bin
  // (both on PATH) are one directory, listed once.
  NodeListing listing;
  if (auto resolved = resolve_node_path(root, node_dir)) {
    auto real_key = memo_key(root, resolved->real);
    if (auto it = g_memo->listings.find(real_key); it != g_memo->listings.end()) {
      listing = it->second;
    } else {
      listing = list_uncached(root, node_dir);
      g_memo->listings.emplace(std::move(real_key), listing);
    }
  }
  g_memo->listings.emplace(std::move(key), listing);
  return listing;
}

NodeListing node_list_real_directory(const std::filesystem::path& root, const std::filesystem::path& real_dir) {
  if (!g_memo) return list_real(root, real_dir);
  auto key = memo_key(root, real_dir);
  if (auto it = g_memo->listings.find(key); it != g_memo->listings.end()) return it->second;
  NodeListing listing = list_real(root, real_dir);
  g_memo->listings.emplace(std::move(key), listing);
  return listing;
}

std::string multiarch_triplet() {
#if defined(__aarch64__)
  return "aarch64-linux-gnu";
#else
  return "x86_64-linux-gnu";
#endif
}

} // namespace probe
