// The rule for untrusted trees, in one place (docs/reliability.md, "Untrusted trees").
//
// A tree the doctor examines but does not run on — a --root or --node-root other than "/", a
// container image (its unpacked tree, or "/" read with the image's environment from
// --image-config), a saved node tree — is data. Its files are read, never executed and never
// loaded, not even into a child process: a library's constructors run as the caller, and the
// caller is root under the service, in a Slurm prolog and in the DaemonSet. Paths in it are
// resolved inside it (node_path.hpp: open_node_file, read_node_file). A version that only the
// library itself could tell is "version unknown without loading it" there.
//
// Only this machine's own "/", with this process's environment, is live. There the libraries
// probe may ask a library for its version in a bounded child — and, as root, only a file that no
// other user can change: owned by root, no group (other than root's) or other write bit on it or
// on a directory above it, and no such directory on this process's LD_LIBRARY_PATH, where the
// loader would look for the file's dependencies.
//
// Facts that did not come from a live probe (a --facts snapshot or report, a TE log, a probe of an
// examined tree) name paths of another node or tree: nothing they name is run or loaded. The
// self-test takes its Python interpreter from --python or a live probe, and its libraries' paths
// only from a live probe (app/selftest_command.cpp asks may_run_named_paths).
#pragma once

#include "probe/probe.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <sys/types.h>

namespace probe {

enum class TreeKind {
  live,     // this machine's "/" with this process's environment
  examined, // anything else: read, never run or loaded
};
TreeKind tree_kind(const Host& host);

// nullopt when the libraries probe may dlopen the node file real_node_path (resolved, of host's
// tree) in a child to ask its version; otherwise the text that says why not, for the copy's line
// ("version unknown without loading it (...)", "version unknown: not loaded (owned by uid 1000)").
std::optional<std::string> load_refusal(const Host& host, const std::string& real_node_path);

// For a process with effective uid euid: why host_file may not be loaded because a user other
// than root could change it or a directory above it ("owned by uid 1000", "directory /opt/x is
// writable by all users"); nullopt when it may. Only root is held to it: a library another user
// loads runs as that user.
std::optional<std::string> ownership_refusal(const std::filesystem::path& host_file, uid_t euid);

// For euid root: the first directory of this process's LD_LIBRARY_PATH that a user other than
// root could change, and why; nullopt when there is none. The loader looks there for every
// dependency of whatever is loaded, by this process or its children.
std::optional<std::string> loader_path_refusal(uid_t euid);

// Where a command's facts came from, which decides whether a path they name may be run or
// loaded on this machine.
enum class FactsOrigin {
  live,     // a probe of this machine's "/" with this process's environment
  examined, // a probe of an examined tree
  data,     // a file: --facts (a snapshot, a report)
};
// Whether the paths that facts of this origin name (python.executable, cudnn.path, te.path, ...)
// may be executed or loaded here: only a live probe's.
constexpr bool may_run_named_paths(FactsOrigin origin) { return origin == FactsOrigin::live; }

} // namespace probe
