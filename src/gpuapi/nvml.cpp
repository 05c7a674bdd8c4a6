#include "gpuapi/nvml.hpp"

namespace gpuapi {

util::Result<Nvml> Nvml::load(std::span<const std::string> candidates) {
  Nvml nvml;
  nvml.m_library = NVTE_TRY(open_first(candidates));
  const util::DlLibrary& library = nvml.m_library;
  NvmlApi& api = nvml.m_api;
  std::vector<std::string>& missing = nvml.m_missing;
  NVTE_NVML_ENTRY_POINTS(NVTE_GPUAPI_BIND)
  return nvml;
}

std::string Nvml::describe(NvmlReturn code) const {
  std::string number = "(" + std::to_string(code) + ")";
  if (m_api.nvmlErrorString) {
    if (const char* text = m_api.nvmlErrorString(code)) return std::string(text) + " " + number;
  }
  return "NVML error " + number;
}

} // namespace gpuapi
