#include "gpuapi/cuda_driver.hpp"

namespace gpuapi {

util::Result<CudaDriver> CudaDriver::load(std::span<const std::string> candidates) {
  CudaDriver driver;
  driver.m_library = NVTE_TRY(open_first(candidates));
  const util::DlLibrary& library = driver.m_library;
  CudaDriverApi& api = driver.m_api;
  std::vector<std::string>& missing = driver.m_missing;
  NVTE_CUDA_DRIVER_ENTRY_POINTS(NVTE_GPUAPI_BIND)
  return driver;
}

} // namespace gpuapi
