// Paths on the node as seen from a Host whose filesystem root may be a fixture tree. Probes speak
// in node paths ("/usr/lib/x86_64-linux-gnu/libcudnn.so.9"), and only these helpers turn them into
// host paths. Symlinks are followed the way the node's kernel would: an absolute target is read
// under the root, never on the machine running the doctor.
#pragma once

#include "util/result.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace probe {

// Debian's multiarch directory name for the machine the doctor was built for
// ("x86_64-linux-gnu", "aarch64-linux-gnu"): /usr/lib/<triplet> is where the node's libraries are.
std::string multiarch_triplet();

// The host path of a node path (root "/" returns the path unchanged).
std::filesystem::path host_path(const std::filesystem::path& root, const std::filesystem::path& node_path);

struct ResolvedPath {
  std::filesystem::path real;                // the node path with every symlink resolved
  std::vector<std::filesystem::path> chain;  // each symlink followed, in order (node paths)
};

// Resolves every symlink of node_path under root. Fails with not_found when a component (or a
// link's target: a broken symlink) is missing, with invalid on a symlink loop (more than 40 links).
util::Result<ResolvedPath> resolve_node_path(const std::filesystem::path& root, const std::filesystem::path& node_path);

enum class NodeFileType { none, regular, directory, other };

// What node_path is after following symlinks (none when it or its target is missing).
NodeFileType node_file_type(const std::filesystem::path& root, const std::filesystem::path& node_path);

// A node directory's names, sorted. The run's memo shares one listing with every caller: the
// copy scans ask for /usr/lib/x86_64-linux-gnu (thousands of names) once per library, and a
// copy each time was a tenth of the probe's instructions.
class NodeListing {
public:
  NodeListing() : m_names(std::make_shared<const std::vector<std::string>>()) {}
  explicit NodeListing(std::vector<std::string> names) : m_names(std::make_shared<const std::vector<std::string>>(std::move(names))) {}
  std::vector<std::string>::const_iterator begin() const { return m_names->begin(); }
  std::vector<std::string>::const_iterator end() const { return m_names->end(); }
  std::size_t size() const { return m_names->size(); }
  bool empty() const { return m_names->empty(); }
  const std::vector<std::string>& names() const { return *m_names; }

private:
  std::shared_ptr<const std::vector<std::string>> m_names;
};

// Names in a node directory, sorted; empty when it is missing or unreadable.
NodeListing node_list_directory(const std::filesystem::path& root, const std::filesystem::path& node_dir);

// While a NodeFsMemo lives, resolve_node_path, node_file_type and node_list_directory answer
// repeated questions from memory. One probe run asks for the same directories and paths many
// times (every library's copy scan lists every search directory; every copy's path is resolved
// by the scan, the loader model and the consumers), and the node does not change in the
// milliseconds a run takes. Single-threaded use (the probes run in sequence); an inner memo
// while one is active changes nothing, and the outermost one's end forgets everything.
class NodeFsMemo {
public:
  NodeFsMemo();
  ~NodeFsMemo();
  NodeFsMemo(const NodeFsMemo&) = delete;
  NodeFsMemo& operator=(const NodeFsMemo&) = delete;

private:
  bool m_owner = false;
};

// The node directories this run could not list or look into (permission denied), sorted; what
// they hold is unknown, not absent. Empty without an active NodeFsMemo.
std::vector<std::string> node_denied_directories();

// A per-run slot for other readers of node files (an ELF file's dynamic section: the copy scan,
// the loader model and the consumers each read libtorch_cuda.so's): the slot of (kind, key)
// while a NodeFsMemo is active, empty until filled; nullptr when none is active.
std::shared_ptr<void>* node_memo_slot(std::string_view kind, const std::string& key);

// Lexically normalised absolute node path ("/a/b/../c/" -> "/a/c"); a relative one is made
// absolute against "/".
std::filesystem::path normalize_node_path(const std::filesystem::path& node_path);

} // namespace probe
