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

std::string CudaDriver::describe(CuResult code) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (m_api.cuGetErrorName) m_api.cuGetErrorName(code, &name);
  if (m_api.cuGetErrorString) m_api.cuGetErrorString(code, &text);
  std::string out = name ? name : "CUDA error";
  out += " (" + std::to_string(code) + ")";
  if (text) out += std::string(": ") + text;
  return out;
}

} // namespace gpuapi
