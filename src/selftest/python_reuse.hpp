// The Python tier's result, reused while nothing it ran on has changed (issue 40).
//
// The tier imports torch and TE as a job does: 3-4 s on an H200 node before any GPU work, most
// of a self-test that a Slurm prolog pays on every job. Yet its answer (TE's choice per shape and
// the numerics of each backend) is a function of the files the process loaded, its environment,
// the GPUs and the driver. So an ok answer is kept, with the list of every file and directory the
// tier depended on (the modules it imported, the files mapped into it, sys.path, the
// directories holding those files: a package installed beside one changes its directory; not the
// directory above a directory, /tmp above a PYTHONPATH entry), and a later
// self-test reuses it when
//   - the key is the same: interpreter, script, shapes, the environment variables torch, TE,
//     CUDA and Python read (python_tier_reads), the driver and the GPUs of the facts;
//   - every one of those files and directories has the identity it had (device, inode, size,
//     mtime, ctime: util::FileIdentity; the first that differs is named in the debug log);
//   - the answer is at most max_age old (a day: TE's run is repeated at least daily).
// The CUDA tier's real kernels (cuDNN's attention at the workload's shape, NVRTC, NCCL, TE's
// selector from TE's library) still run every time: the GPU's health is never reused. A failed,
// skipped or crashed tier is never kept (a transient failure must not outlive its cause), and
// `--fresh` or `--no-cache` runs the tier whatever is kept. The reused answer says so in its
// result ("reused": when it ran, how old, how many files were compared) and in the text.
//
// Storage: one file per key in selftest-python/ of the doctor's cache directory, through
// KernelCache (private directory, key stored whole and compared, atomic writes, bounded size).
#pragma once

#include "model/facts.hpp"
#include "selftest/kernel_cache.hpp"
#include "util/result.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace selftest {

inline constexpr std::chrono::seconds k_python_reuse_max_age{24 * 3600};

struct PythonReuse {
  KernelCache cache = KernelCache::off("no cache directory");
  bool fresh = false; // --fresh: nothing is recalled, the tier's answer replaces the kept one
  std::chrono::seconds max_age = k_python_reuse_max_age;
  std::function<std::chrono::system_clock::time_point()> now = [] { return std::chrono::system_clock::now(); };
};

// Whether the environment variable name is part of the key: those torch, TE, the CUDA libraries,
// Python and the loader read (NV*, CUDA*, CUDNN*, NCCL*, CUBLAS*, TORCH*, PYTORCH*, PYTHON*, LD_*,
// JAX*, XLA*, TRITON*, OMP_*, MKL*, KMP_*, VIRTUAL_ENV, CONDA*, PATH, HOME). A job's own variables
// (SLURM_*, PWD) are not: they differ for every job and change nothing the tier runs.
bool python_tier_reads(std::string_view name);

// Everything the tier's answer depends on that is known before it runs. environment: the
// child's whole environment; facts: the node's (driver.version, gpu[i].uuid / name).
CacheKey python_tier_key(const std::string& interpreter, const std::string& script, const nlohmann::ordered_json& shapes,
                         const std::map<std::string, std::string>& environment, const model::Facts& facts);

// The kept answer for key: the tier's result object with "reused" added ({"ran_at": ISO 8601
// UTC, "age_seconds", "files"}), when it is no older than max_age and every file it depended on
// is unchanged. not_found when nothing is kept (or reuse.fresh); invalid with the reason (the
// path that changed, too old, unreadable) otherwise.
util::Result<nlohmann::ordered_json> recall_python_tier(const PythonReuse& reuse, const CacheKey& key);

// Keeps result for key when it is an ok answer and loaded (the tier's "loaded", which the
// parent takes out of its result: long, and for this cache alone) is an array of the absolute
// paths it depended on, at most k_max_walk_entries. An error says why nothing was kept.
util::Result<void> remember_python_tier(const PythonReuse& reuse, const CacheKey& key, const nlohmann::ordered_json& result,
                                        const nlohmann::ordered_json& loaded);

} // namespace selftest
