// The CUDA driver API (libcuda), bound at run time.
//
// The ABI, declared here instead of including cuda.h: every call returns CUresult (an int; 0 is
// CUDA_SUCCESS). cuDriverGetVersion is the one call that works before cuInit: it reports the
// CUDA version of the libcuda that was loaded as 1000 * major + 10 * minor (13000 = 13.0). A
// forward-compatibility libcuda (cuda-*/compat) reports its own, newer version. The probes call
// only cuDriverGetVersion; initialising CUDA is the self-test's business.
#pragma once

#include "gpuapi/loader.hpp"

#include <array>
#include <span>
#include <string>
#include <vector>

namespace gpuapi {

using CuResult = int;

inline constexpr CuResult k_cuda_success = 0;

#define NVTE_CUDA_DRIVER_ENTRY_POINTS(X) X(cuDriverGetVersion, CuResult, (int*))

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
