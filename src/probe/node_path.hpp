// Paths on the node as seen from a Host whose filesystem root may be a fixture tree. Probes speak
// in node paths ("/usr/lib/x86_64-linux-gnu/libcudnn.so.9"), and only these helpers turn them into
// host paths. Symlinks are followed the way the node's kernel would: an absolute target is read
// under the root, never on the machine running the doctor. Every probe opens a node file to read
// through open_node_file / read_node_file (util::open_file_in_root: resolved inside the tree by
// the kernel, a regular file only), the reading half of the rule for untrusted trees
// (tree_policy.hpp).
#pragma once

#include "util/fd.hpp"
#include "util/file_cache.hpp"
#include "util/file.hpp"
#include "util/result.hpp"

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace probe {

// Debian's multiarch directory name for the machine the doctor was built for
// ("x86_64-linux-gnu", "aarch64-linux-gnu"): /usr/lib/<triplet> is where the node's libraries are.
std::string multiarch_triplet();

// Whether a tree's root is this machine's own "/" (or empty, which means the same).
bool is_live_root(const std::filesystem::path& root);

// The host path of a node path (root "/" returns the path unchanged).
std::filesystem::path host_path(const std::filesystem::path& root, const std::filesystem::path& node_path);

// A file of a node as the readers of files take it: the tree's root and the node path in it. A
// plain host path (a test's file, a file of the live node) converts to one with root "/".
struct NodeFile {
  NodeFile(const std::filesystem::path& host_file) : path(host_file) {} // NOLINT: a host path is a file of "/"
  NodeFile(const std::string& host_file) : path(host_file) {}           // NOLINT
  NodeFile(const char* host_file) : path(host_file) {}                  // NOLINT
  NodeFile(std::filesystem::path tree, std::filesystem::path node_path) : root(std::move(tree)), path(std::move(node_path)) {}
  std::filesystem::path root = "/";
  std::filesystem::path path;
  std::filesystem::path host() const; // where it lies on this machine (for messages and memo keys)
};

// Opens a node file for reading, resolved inside its tree (util::open_file_in_root): the tree's
// links never lead out of it, and only a regular file is opened.
util::Result<util::Fd> open_node_file(const NodeFile& file);
// Its content, at most max_bytes: an error past it (read_node_file), or the first max_bytes
// (read_node_file_head).
util::Result<std::string> read_node_file(const std::filesystem::path& root, const std::filesystem::path& node_path, std::size_t max_bytes);
util::Result<std::string> read_node_file_head(const std::filesystem::path& root, const std::filesystem::path& node_path,
                                              std::size_t max_bytes);

struct ResolvedPath {
  std::filesystem::path real;               // the node path with every symlink resolved
  std::vector<std::filesystem::path> chain; // each symlink followed, in order (node paths)
};

// Resolves every symlink of node_path under root. Fails with not_found when a component (or a
// link's target: a broken symlink) is missing, with invalid on a symlink loop (more than 40 links).
util::Result<ResolvedPath> resolve_node_path(const std::filesystem::path& root, const std::filesystem::path& node_path);

enum class NodeFileType { none, regular, directory, other };

// What node_path is after following symlinks (none when it or its target is missing).
NodeFileType node_file_type(const std::filesystem::path& root, const std::filesystem::path& node_path);

// A node directory's names, sorted, with what readdir said each is (util::EntryType; unknown
// where the filesystem does not say, or when only names were given). The run's memo shares one
// listing with every caller: the copy scans ask for /usr/lib/x86_64-linux-gnu (thousands of
// names) once per library, and a copy each time was a tenth of the probe's instructions.
class NodeListing {
public:
  NodeListing() : m_data(std::make_shared<const Data>()) {}
  explicit NodeListing(std::vector<std::string> names);
  explicit NodeListing(std::vector<util::DirEntry> entries);
  std::vector<std::string>::const_iterator begin() const { return m_data->names.begin(); }
  std::vector<std::string>::const_iterator end() const { return m_data->names.end(); }
  std::size_t size() const { return m_data->names.size(); }
  bool empty() const { return m_data->names.empty(); }
  const std::vector<std::string>& names() const { return m_data->names; }
  // The type of names()[i] as the directory entry gave it.
  util::EntryType type(std::size_t i) const { return m_data->types[i]; }
  // Whether the directory was read: an empty listing of a missing or unreadable directory says
  // nothing about a name in it (a directory with search but no read permission hides its names).
  bool listed() const { return m_data->listed; }
  // Whether the directory, read, holds name.
  bool contains(std::string_view name) const;

private:
  struct Data {
    std::vector<std::string> names;
    std::vector<util::EntryType> types; // parallel to names
    bool listed = false;
  };
  std::shared_ptr<const Data> m_data;
};

// Names in a node directory, sorted; empty when it is missing or unreadable.
NodeListing node_list_directory(const std::filesystem::path& root, const std::filesystem::path& node_dir);
// The same for a directory the caller knows to be real (resolve_node_path's `real`, or a
// directory entry of a real directory): its path is not resolved again, so a recursive walk costs
// what it lists, not its depth times every level above.
NodeListing node_list_real_directory(const std::filesystem::path& root, const std::filesystem::path& real_dir);

// While a NodeFsMemo lives, resolve_node_path, node_file_type and node_list_directory answer
// repeated questions from memory. One probe run asks for the same directories and paths many
// times (every library's copy scan lists every search directory; every copy's path is resolved
// by the scan, the loader model and the consumers), and the node does not change in the
// milliseconds a run takes. One memo per thread (a probe on a thread of its own makes its own);
// an inner memo while one is active changes nothing, and the outermost one's end forgets
// everything.
class NodeFsMemo {
public:
  NodeFsMemo();
  // A memo for a thread that works for the run of another (the native probe's link of torch): its
  // own listings and paths, but the node_memo_value()s of the memo active on the thread that
  // asked (this is made on), so that an ELF file both read is mapped and parsed once.
  struct Shared;
  static std::shared_ptr<Shared> share(); // of this thread's active memo; nullptr without one
  explicit NodeFsMemo(std::shared_ptr<Shared> values);
  ~NodeFsMemo();
  NodeFsMemo(const NodeFsMemo&) = delete;
  NodeFsMemo& operator=(const NodeFsMemo&) = delete;

private:
  bool m_owner = false;
};

// The cache across runs (util/file_cache.hpp) of the memo active on this thread, shared with the
// threads that share its values; nullptr without one. probe_node sets Host::file_cache on its memo.
util::FileCache* node_file_cache();
void node_set_file_cache(std::shared_ptr<util::FileCache> cache);

// The node directories this run could not list or look into (permission denied), sorted; what
// they hold is unknown, not absent. Empty without an active NodeFsMemo.
std::vector<std::string> node_denied_directories();
// Adds what another thread's memo found denied (node_denied_directories there) to this thread's.
void node_add_denied_directories(const std::vector<std::string>& dirs);

// A per-run value for other readers of node files (an ELF file's dynamic section: the copy scan,
// the loader model and the consumers each read libtorch_cuda.so's): the value of (kind, key),
// made by make the first time any thread sharing the memo asks (NodeFsMemo::share); without an
// active memo, make's value. make runs without a lock held, once: a thread that asks while
// another makes it waits for that value (or its exception). So a make must not ask, through
// another thread, for a value whose make asks for its own (the kinds today: the interpreter scan,
// which may read ELF files, METADATA and directory listings, and those leaves, which ask for
// nothing).
std::shared_ptr<const void> node_memo_value(std::string_view kind, const std::string& key,
                                            const std::function<std::shared_ptr<const void>()>& make);
// The value of (kind, key) when some thread sharing the memo made it already; nullptr otherwise
// (and without an active memo).
std::shared_ptr<const void> node_memo_find(std::string_view kind, const std::string& key);

// Lexically normalised absolute node path ("/a/b/../c/" -> "/a/c"); a relative one is made
// absolute against "/".
std::filesystem::path normalize_node_path(const std::filesystem::path& node_path);

} // namespace probe
