// Asking one copy of a vendor library for its version by loading it. Each call forks a child,
// loads the exact file in a fresh link-map namespace (dlmopen LM_ID_NEWLM) so that a copy with
// the same SONAME already loaded elsewhere cannot answer instead (see GPU-NODE.md: dlopen of a
// second libcudnn.so.9 returns the first), calls the version entry point and reports the raw
// integers through a pipe. A hang or crash in the library costs the child, never the caller.
//
// Entry points (the vendors' documented C ABI, declared here rather than taken from headers):
//   size_t      cudnnGetVersion(void);                       -> 91900 (cuDNN 9), 8907 (cuDNN 8)
//   ncclResult_t ncclGetVersion(int* version);               -> 22809
//   nvrtcResult nvrtcVersion(int* major, int* minor);        -> 13, 0
//   cudaError_t cudaRuntimeGetVersion(int* runtimeVersion);  -> 13000
//   size_t      cublasLtGetVersion(void);                    -> 130100 (major*10000 + minor*100 + patch)
//   cublasStatus_t cublasGetProperty(libraryPropertyType, int*); MAJOR_VERSION 0, MINOR_VERSION 1,
//                                                            PATCH_LEVEL 2 -> 13, 1, 0
// All result enums are int-sized with 0 meaning success.
#pragma once

#include "util/result.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace gpuapi {

enum class VersionedLibrary { cudnn, nccl, nvrtc, cudart, cublas, cublaslt };

// The raw numbers the library returns: {91900} for cuDNN, {22809} for NCCL, {13, 0} for NVRTC,
// {13000} for cudart, {13, 1, 0} for cuBLAS, {130100} for cuBLASLt. Fails with not_installed / io (dlerror text) when the file does not
// load, symbol_missing, driver_error for a non-zero status, timeout or crashed from the child.
util::Result<std::vector<long>> query_library_version(VersionedLibrary library, const std::string& path,
                                                      std::chrono::milliseconds timeout);

} // namespace gpuapi
