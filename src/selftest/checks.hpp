// The checks the child runs (each in its own .cpp); selftest.hpp's builtin_checks() lists them.
#pragma once

#include "selftest/cuda_session.hpp"
#include "selftest/selftest.hpp"

#include <chrono>
#include <functional>

namespace selftest {

// Seconds since start on the steady clock: the checks' "seconds" fields.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Json check_driver(const Json& args, Progress& progress);         // cuInit, devices, a context per GPU
Json check_nvrtc(const Json& args, Progress& progress);          // args: {path}
Json check_cudnn_sdpa(const Json& args, Progress& progress);     // args: sdpa_args() + {path, nvrtc_path}
Json check_cudnn_sdpa_bwd(const Json& args, Progress& progress); // the forward and the backward graph; same args
Json check_nccl(const Json& args, Progress& progress);           // args: {path, bytes}
Json check_te_selector(const Json& args, Progress& progress);    // args: sdpa_args() + {library, te_version}
// driver, nvrtc and nccl in one process and one context (args {driver, nvrtc, nccl}): the driver's
// and NVRTC's results as parts, NCCL's as the result.
Json check_cuda(const Json& args, Progress& progress);

// Runs a cuDNN check (run: the check itself, args in, result out) and, when it failed at
// execution or numerics with a kernel loaded from the kernel cache (its "plan_cache" or
// "reference_cache" says "loaded"), runs it again with args' "kernel_cache_refresh" set (every
// kernel compiled, the cache's copies replaced): that run's result, with "kernel_cache_fallback"
// saying why, is the check's. A cache's failure is never reported as cuDNN's.
bool used_cached_kernels(const Json& result);
Json run_with_cache_fallback(const Json& args, const std::function<Json(const Json&)>& run);

// The same checks on a session opened by the caller (a failed open is reported as each check does).
using SessionResult = util::Result<std::unique_ptr<CudaSession>>;
Json driver_check(const Json& args, const SessionResult& session, Progress& progress);
Json nvrtc_check(const Json& args, const SessionResult& session, Progress& progress);
Json nccl_check(const Json& args, const SessionResult& session, Progress& progress);

// TE's core library loaded as TE's Python loads it: cuDNN, NVRTC and cuRAND first with
// RTLD_GLOBAL (cuRAND beside NVRTC, else by SONAME), then libtransformer_engine.so. `keep` holds
// the preloaded libraries for as long as TE is used; `preloaded` names what was mapped. A failure
// names what was preloaded and what could not be.
struct LoadedTe {
  std::vector<util::DlLibrary> keep; // declared first: closed after the core library
  util::DlLibrary core;
  std::vector<std::string> preloaded;
};
util::Result<LoadedTe> load_te_core(const std::string& library, const std::string& cudnn_path, const std::string& nvrtc_path);

// NVRTC compile of the test kernel for archs without touching a GPU (the no-GPU half of nvrtc).
util::Result<Json> nvrtc_compile_only(const std::vector<std::string>& candidates, const std::vector<std::string>& archs);

} // namespace selftest
