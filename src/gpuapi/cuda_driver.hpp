// The CUDA driver API (libcuda), bound at run time.
//
// The ABI, declared here instead of including cuda.h: every call returns CUresult (an int; 0 is
// CUDA_SUCCESS). cuDriverGetVersion is the one call that works before cuInit: it reports the
// CUDA version of the libcuda that was loaded as 1000 * major + 10 * minor (13000 = 13.0). A
// forward-compatibility libcuda (cuda-*/compat) reports its own, newer version. The probes call
// only cuDriverGetVersion; initialising CUDA is the self-test's business, and the rest of the
// list is what it needs: devices, primary contexts, memory, streams, modules and launches.
// Handles (CUdevice is an int; CUcontext, CUmodule, CUfunction, CUstream are opaque pointers)
// and device pointers (CUdeviceptr, an unsigned 64-bit integer) are declared here. The _v2
// entry points are the ones cuda.h maps the plain names to since CUDA 3.2.
#pragma once

#include "gpuapi/loader.hpp"

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace gpuapi {

using CuResult = int;

inline constexpr CuResult k_cuda_success = 0;

using CuDevice = int;
using CuContext = void*;
using CuModule = void*;
using CuFunction = void*;
using CuStream = void*;
using CuDevicePtr = unsigned long long;

inline constexpr CuResult k_cuda_error_no_device = 100;
inline constexpr int k_cu_device_attribute_compute_capability_major = 75;
inline constexpr int k_cu_device_attribute_compute_capability_minor = 76;
inline constexpr int k_cu_device_attribute_multiprocessor_count = 16;

#define NVTE_CUDA_DRIVER_ENTRY_POINTS(X)                                                                 \
  X(cuDriverGetVersion, CuResult, (int*))                                                              \
  X(cuInit, CuResult, (unsigned int))                                                                  \
  X(cuGetErrorString, CuResult, (CuResult, const char**))                                              \
  X(cuGetErrorName, CuResult, (CuResult, const char**))                                                \
  X(cuDeviceGetCount, CuResult, (int*))                                                                \
  X(cuDeviceGet, CuResult, (CuDevice*, int))                                                           \
  X(cuDeviceGetName, CuResult, (char*, int, CuDevice))                                                 \
  X(cuDeviceGetAttribute, CuResult, (int*, int, CuDevice))                                             \
  X(cuDevicePrimaryCtxRetain, CuResult, (CuContext*, CuDevice))                                        \
  X(cuDevicePrimaryCtxRelease_v2, CuResult, (CuDevice))                                                \
  X(cuCtxSetCurrent, CuResult, (CuContext))                                                            \
  X(cuCtxSynchronize, CuResult, ())                                                                    \
  X(cuMemAlloc_v2, CuResult, (CuDevicePtr*, std::size_t))                                              \
  X(cuMemFree_v2, CuResult, (CuDevicePtr))                                                             \
  X(cuMemcpyHtoD_v2, CuResult, (CuDevicePtr, const void*, std::size_t))                                \
  X(cuMemcpyDtoH_v2, CuResult, (void*, CuDevicePtr, std::size_t))                                      \
  X(cuMemsetD32_v2, CuResult, (CuDevicePtr, unsigned int, std::size_t))                                \
  X(cuMemGetInfo_v2, CuResult, (std::size_t*, std::size_t*))                                           \
  X(cuStreamCreate, CuResult, (CuStream*, unsigned int))                                               \
  X(cuStreamSynchronize, CuResult, (CuStream))                                                         \
  X(cuStreamDestroy_v2, CuResult, (CuStream))                                                          \
  X(cuModuleLoadData, CuResult, (CuModule*, const void*))                                              \
  X(cuModuleUnload, CuResult, (CuModule))                                                              \
  X(cuModuleGetFunction, CuResult, (CuFunction*, CuModule, const char*))                               \
  X(cuLaunchKernel, CuResult, (CuFunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,  \
                               unsigned, CuStream, void**, void**))

struct CudaDriverApi {
  NVTE_CUDA_DRIVER_ENTRY_POINTS(NVTE_GPUAPI_DECLARE)
};

inline const std::array<std::string, 2> k_cuda_driver_sonames = {"libcuda.so.1", "libcuda.so"};

class CudaDriver {
public:
  // Loads the first candidate and binds the entry points it has (see Nvml::load).
  static util::Result<CudaDriver> load(std::span<const std::string> candidates = k_cuda_driver_sonames);

  const CudaDriverApi& api() const { return m_api; }
  const std::vector<std::string>& missing() const { return m_missing; }
  std::string path() const { return m_library.loaded_path(); }
  // An entry point outside the list above (its absence is no finding), or null.
  void* optional_symbol(const char* name) const { return m_library.symbol_or_null(name); }
  // "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected", or the number alone.
  std::string describe(CuResult code) const;

private:
  util::DlLibrary m_library;
  CudaDriverApi m_api;
  std::vector<std::string> m_missing;
};

// 12040 -> {12, 4}: the packed form of cuDriverGetVersion and nvmlSystemGetCudaDriverVersion.
struct CudaVersion {
  int major = 0;
  int minor = 0;
};
inline CudaVersion unpack_cuda_version(int packed) { return {packed / 1000, (packed % 1000) / 10}; }

} // namespace gpuapi
