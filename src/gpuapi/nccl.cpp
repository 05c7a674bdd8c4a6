#include "gpuapi/nccl.hpp"

namespace gpuapi {

util::Result<Nccl> Nccl::load(std::span<const std::string> candidates) {
  Nccl nccl;
  nccl.m_library = NVTE_TRY(open_first(candidates));
  const util::DlLibrary& library = nccl.m_library;
  NcclApi& api = nccl.m_api;
  std::vector<std::string>& missing = nccl.m_missing;
  NVTE_NCCL_ENTRY_POINTS(NVTE_GPUAPI_BIND)
  return nccl;
}

std::string Nccl::describe(NcclResult code) const {
  std::string out = m_api.ncclGetErrorString ? m_api.ncclGetErrorString(code) : "NCCL error";
  out += " (" + std::to_string(code) + ")";
  if (m_api.ncclGetLastError) {
    if (const char* last = m_api.ncclGetLastError(nullptr); last && *last) out += ": " + std::string(last);
  }
  return out;
}

} // namespace gpuapi
