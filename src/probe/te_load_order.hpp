// Which copy of cuDNN / NVRTC / cudart TransformerEngine loads, by its own search in
// transformer_engine/common/__init__.py, modelled per TE release range as a data table (one row
// per range, each citing the tag and lines it was read from). TE dlopens its pick with
// ctypes.CDLL(..., RTLD_GLOBAL) before libtransformer_engine.so, so its pick is what TE asked
// for; for what it then gets in a process that imported torch first, see te_library_choice.
//
// Step kinds, as TE's Python does them:
//   glob     — glob(f"{DIR}/**/libcudnn.so*", recursive=True) in the first set of some
//              environment variables (or a default directory); hidden directories skipped,
//              symlinked directories followed, "stub" paths dropped where TE drops them, sorted
//              by file name descending (a string sort: newest-looking name first), first taken;
//   pip      — glob(f"{purelib}/nvidia/cudnn/lib/lib*.so.*[0-9]"): the wheel's files;
//   ldconfig — the first `ldconfig -p` line containing a needle (ld.so.cache file order);
//   dlopen   — ctypes.CDLL("libcudnn.so"): the dynamic loader's own search for the dev name.
#pragma once

#include "model/version.hpp"
#include "probe/library_copies.hpp"
#include "probe/loader_model.hpp"
#include "probe/torch_load_order.hpp"

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace probe {

enum class TeStepKind { glob, pip, ldconfig, dlopen };

struct TeStep {
  TeStepKind kind;
  std::vector<std::string_view> env_vars; // glob: "A or B": the first one set is used
  std::string_view default_dir;           // glob: used when none is set ("" = step skipped)
  bool skip_stub = false;                 // glob: paths containing "stub" dropped
  std::string_view dir;                   // pip: directory relative to purelib
  std::string_view file_prefix;           // pip: "lib" for lib*.so.*[0-9], else e.g. "libcudnn"
  std::string_view needle;                // ldconfig: substring of the line
  std::vector<std::string_view> excludes; // ldconfig: lines containing these are skipped
  std::string_view name;                  // dlopen: the name given to ctypes.CDLL
};

struct TeSearchRule {
  std::string_view library;  // cudnn, nvrtc, cudart, curand, cublas, cublaslt
  std::string_view versions; // a VersionRange
  std::string_view citation; // "v2.11 transformer_engine/common/__init__.py L301-352"
  std::vector<TeStep> steps;
  bool wheel_only_without_ctk = false; // v2.11+: TE loads wheel cudart / cuBLAS only without system NVRTC and cuRAND
};

std::span<const TeSearchRule> te_search_rules();

// The rule for a library at a TE version, or nullptr when the version is not modelled.
const TeSearchRule* find_te_rule(std::string_view library, const model::Version& te_version);

// One recursive walk: the lib*.so* files under a directory, and, when it stopped at a cap of the
// input layer (util::k_max_walk_depth, util::k_max_walk_entries), the one-line error naming it.
struct TeWalk {
  std::vector<std::string> files;
  std::string cap; // "" when the walk was complete
  bool operator==(const TeWalk&) const = default;
};

struct TeContext {
  LoaderView view;
  const std::map<std::string, std::string>* env = nullptr; // the job's environment
  std::string purelib;                                     // TE's interpreter's site-packages
  const LdCache* cache = nullptr;
  // Recursive walks already made, by directory (normalised): the lib*.so* files under it (all
  // that TE's globs ask for), so one walk of /usr/local/cuda serves every library and every
  // step. Filled as the search goes, or ahead by te_walk_dirs on another thread.
  mutable std::map<std::string, TeWalk> walks;
  // The caps the walks the search consulted ran into (TeWalk::cap), in the order met: the
  // caller ends the command with them (probe.limit_exceeded, exit 3).
  mutable std::vector<std::string> caps_hit;
};
using TeWalks = std::map<std::string, TeWalk>;

// The directories TE's search at te_version (nullopt: at any release) globs recursively, for any
// library, in the job's environment (ctx.env): the walks a caller can make ahead of te_search.
std::vector<std::string> te_glob_dirs(const TeContext& ctx, const std::optional<model::Version>& te_version);
// The walks of dirs as TeContext::walks keeps them. Reads the node through this thread's memo
// only: a caller runs it on a thread of its own (with a NodeFsMemo there) while it does other
// work, then moves the result into its TeContext. On a GPU node the CUDA toolkit's walk (350
// directories, 5,300 entries) was a third of the probe's time; with a NodeFsMemo whose values are
// shared, helper threads (prefetch_threads; default: two where the machine has more than two
// cores) list the directories ahead, breadth first, for the walk to find.
TeWalks te_walk_dirs(const std::filesystem::path& root, const std::vector<std::string>& dirs,
                     std::optional<unsigned> prefetch_threads = std::nullopt);

// What TE's own search picks for spec at te_version. `source` of the result tells which step
// won (glob, pip, ldconfig, dlopen). Fails with not_found (TE's import would fail) or
// unsupported (version not modelled).
util::Result<ConsumerChoice> te_search(const TeContext& ctx, const model::Version& te_version, const LibrarySpec& spec);

// The file of TE's core library (libtransformer_engine.so) for a TE package directory.
std::optional<std::string> te_core_library(const std::filesystem::path& root, const std::string& te_dir);

// TE's own search for one of its shared objects (transformer_engine/common/__init__.py
// _get_shared_object_file, v2.x): a file named <prefix>*.so in the directory above the imported
// package, in the package, in its wheel_lib/; then the same under purelib. Fails with not_found
// (TE raises FileNotFoundError "Could not find shared object file") or invalid (more than one
// file in the first place that has any: TE raises "Multiple files found").
util::Result<std::string> te_shared_object(const std::filesystem::path& root, const std::string& te_dir, const std::string& purelib,
                                           std::string_view prefix);

} // namespace probe
