// NCCL (libnccl), bound at run time, for the self-test's single-process all-reduce.
//
// The ABI, declared here instead of including nccl.h: calls return ncclResult_t (an int; 0 is
// success); a communicator is an opaque pointer; ncclUniqueId is 128 opaque bytes; a stream is a
// CUstream (cudaStream_t is the same pointer). ncclFloat32 is 7 and ncclSum 0 in every NCCL 2.
// ncclCommInitAll creates one communicator per listed device in this process; collectives on
// several of them from one thread must sit between ncclGroupStart and ncclGroupEnd.
#pragma once

#include "gpuapi/loader.hpp"

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace gpuapi {

using NcclResult = int;
using NcclComm = void*;
struct NcclUniqueId {
  char internal[128];
};

inline constexpr int k_nccl_float32 = 7;
inline constexpr int k_nccl_sum = 0;

#define NVTE_NCCL_ENTRY_POINTS(X)                                                                        \
  X(ncclGetVersion, NcclResult, (int*))                                                                \
  X(ncclGetErrorString, const char*, (NcclResult))                                                     \
  X(ncclGetLastError, const char*, (NcclComm))                                                         \
  X(ncclGetUniqueId, NcclResult, (NcclUniqueId*))                                                      \
  X(ncclCommInitAll, NcclResult, (NcclComm*, int, const int*))                                         \
  X(ncclCommDestroy, NcclResult, (NcclComm))                                                           \
  X(ncclGroupStart, NcclResult, ())                                                                    \
  X(ncclGroupEnd, NcclResult, ())                                                                      \
  X(ncclAllReduce, NcclResult, (const void*, void*, std::size_t, int, int, NcclComm, void*))

struct NcclApi {
  NVTE_NCCL_ENTRY_POINTS(NVTE_GPUAPI_DECLARE)
};

inline const std::array<std::string, 2> k_nccl_sonames = {"libnccl.so.2", "libnccl.so"};

class Nccl {
public:
  static util::Result<Nccl> load(std::span<const std::string> candidates = k_nccl_sonames);

  const NcclApi& api() const { return m_api; }
  const std::vector<std::string>& missing() const { return m_missing; }
  std::string path() const { return m_library.loaded_path(); }
  // "unhandled system error (2): <ncclGetLastError's text>".
  std::string describe(NcclResult code) const;

private:
  util::DlLibrary m_library;
  NcclApi m_api;
  std::vector<std::string> m_missing;
};

} // namespace gpuapi
