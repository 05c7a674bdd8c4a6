// What the self-test compiled, kept across runs: cuDNN's execution plans of runtime-compiled
// engines (their JSON representation, which holds the compiled kernels) and the CUBIN of the
// NVRTC-compiled reference kernels. With CUDA_CACHE_DISABLE=1 (a prolog's cold start) those
// compilations are most of the self-test's time; a later run loads them instead.
//
// The key idea: a file is used only for the exact inputs it was compiled from. Its key is the
// text of every input the compiled code depends on (CacheKey: the graph, the engine and its
// knobs, the identity of each library that compiled it, the driver, the GPU), stored whole in
// the file and compared on reading; the file's name is a hash of it. Anything unexpected (a
// missing, truncated, corrupt, oversized or foreign file, a key that differs, a payload cuDNN or
// the driver refuses) is a miss: the caller compiles as without a cache and the file is
// rewritten. A cache never fails a check, and a failure of the cache is never reported as one of
// cuDNN or NVRTC (keep_or_build).
//
// Trust: whatever is read here runs on the GPU, so only this user (or root) may have written
// it. The directory must be private (util::walk_path, Walk::private_directory: every component
// this user's or root's, writable by nobody else); a file is opened O_NOFOLLOW through the
// directory's descriptor, must be a regular file of this user or root that nobody else may
// write, and at most max_file_bytes long; writing goes to a temporary in the same directory and
// renameat(2) over the name. The directory is the doctor's cache directory's selftest-kernels/
// (app: cache_directory; none with --no-cache).
#pragma once

#include "util/fd.hpp"
#include "util/result.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace selftest {

// The inputs a compiled artifact depends on, as "name=value" lines in the order added.
class CacheKey {
public:
  void add(std::string_view name, std::string_view value);
  // The lines, one per input: what the cache file stores and compares.
  const std::string& text() const { return m_text; }
  // "<kind>-<16 hex digits of a hash of kind and text>.bin".
  std::string file_name(std::string_view kind) const;

private:
  std::string m_text;
};

// "<path> " and util::identity_text of the file path names (stat, links followed), or
// "<path> missing" when it cannot be stat'ed.
std::string file_identity_text(const std::string& path);

// The identities of the libraries whose code compiled an artifact: each path's
// file_identity_text, and, for each, the files of the same directory whose names start with one
// of sibling_prefixes (cuDNN 9's sub-libraries, which its shim loads by SONAME), sorted.
std::string libraries_identity(const std::vector<std::string>& paths, const std::vector<std::string>& sibling_prefixes = {});

// Two 64-bit FNV-1a hashes (different seeds) of text as 32 hex digits: a digest for long inputs
// (a graph's description, a kernel's source). Not a defence against a writer: the directory is
// private.
std::string digest(std::string_view text);

class KernelCache {
public:
  struct Limits {
    std::size_t max_file_bytes = 64u << 20; // a larger file is ignored, and never written
    std::size_t max_files = 64;             // beyond this, the least recently written go on store
  };

  // A cache that is off: every load misses with why, store does nothing.
  static KernelCache off(std::string why);
  // The cache in dir: usable when dir is private (see above), else off with the reason.
  static KernelCache open(const std::string& dir, Limits limits);
  static KernelCache open(const std::string& dir) { return open(dir, Limits{}); }

  // From now on, load misses (with why) and store still writes: compiled copies replace those
  // of the cache (a check that failed with them runs again so).
  void skip_loads(std::string why) { m_skip_loads = std::move(why); }

  bool enabled() const { return static_cast<bool>(m_dir); }
  const std::string& why_off() const { return m_why_off; }
  const std::string& directory() const { return m_path; }

  // The payload stored for (kind, key). not_found when there is none; invalid (with the reason)
  // when the file is not one this cache wrote for exactly this key; permission when its owner
  // or mode is not trusted.
  util::Result<std::string> load(std::string_view kind, const CacheKey& key) const;
  // Writes payload for (kind, key), atomically, replacing what was there; then removes the
  // oldest files beyond max_files. An error says why nothing was written.
  util::Result<void> store(std::string_view kind, const CacheKey& key, std::string_view payload) const;

private:
  KernelCache() = default;
  void prune() const;

  util::Fd m_dir; // the private directory (O_PATH); invalid when off
  std::string m_path;
  std::string m_why_off;
  std::string m_skip_loads;
  Limits m_limits;
};

// Where a compiled artifact came from in this run.
struct KeptArtifact {
  enum class Source { loaded, compiled };
  Source source = Source::compiled;
  std::string why_compiled; // why it was not loaded: "no entry", "the cache is off: ...", "cuDNN refused it: ..."
  bool stored = false;      // compiled and written to the cache
  std::string store_error;  // why it was not written, when it was compiled and the cache is on
  double seconds = 0;       // loading, or compiling (build alone)
};

// The three steps of one cached compilation, the seam the tests fake: restore makes the live
// object from a payload the cache had (fails when the library refuses it), build compiles as
// without a cache (its error is the check's), serialize gives the built object's payload.
struct CacheSteps {
  std::function<util::Result<void>(std::string_view payload)> restore;
  std::function<util::Result<void>()> build;
  std::function<util::Result<std::string>()> serialize;
};

// Loads (kind, key) and restores it; when anything of that fails, builds and stores the result.
// Fails only when build fails, with build's error unchanged: the cache's own failures are only
// in the returned KeptArtifact.
util::Result<KeptArtifact> keep_or_build(const KernelCache& cache, std::string_view kind, const CacheKey& key, const CacheSteps& steps);

} // namespace selftest
