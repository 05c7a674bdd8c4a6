// NVRTC (libnvrtc), bound at run time: the runtime compiler cuDNN's runtime-compiled engines use.
//
// The ABI, declared here instead of including nvrtc.h: every call returns nvrtcResult (an int;
// 0 is NVRTC_SUCCESS); a program is an opaque pointer. nvrtcVersion works without a GPU, and so
// does compiling: --gpu-architecture=sm_XX yields a CUBIN, compute_XX a PTX. nvrtcGetCUBIN exists
// since CUDA 11.1; nvrtcGetSupportedArchs since 11.2.
#pragma once

#include "gpuapi/loader.hpp"

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace gpuapi {

using NvrtcResult = int;
using NvrtcProgram = void*;

#define NVTE_NVRTC_ENTRY_POINTS(X)                                                                       \
  X(nvrtcVersion, NvrtcResult, (int*, int*))                                                           \
  X(nvrtcGetErrorString, const char*, (NvrtcResult))                                                   \
  X(nvrtcCreateProgram, NvrtcResult, (NvrtcProgram*, const char*, const char*, int, const char* const*, \
                                      const char* const*))                                             \
  X(nvrtcDestroyProgram, NvrtcResult, (NvrtcProgram*))                                                 \
  X(nvrtcCompileProgram, NvrtcResult, (NvrtcProgram, int, const char* const*))                         \
  X(nvrtcGetProgramLogSize, NvrtcResult, (NvrtcProgram, std::size_t*))                                 \
  X(nvrtcGetProgramLog, NvrtcResult, (NvrtcProgram, char*))                                            \
  X(nvrtcGetPTXSize, NvrtcResult, (NvrtcProgram, std::size_t*))                                        \
  X(nvrtcGetPTX, NvrtcResult, (NvrtcProgram, char*))                                                   \
  X(nvrtcGetCUBINSize, NvrtcResult, (NvrtcProgram, std::size_t*))                                      \
  X(nvrtcGetCUBIN, NvrtcResult, (NvrtcProgram, char*))                                                 \
  X(nvrtcGetNumSupportedArchs, NvrtcResult, (int*))                                                    \
  X(nvrtcGetSupportedArchs, NvrtcResult, (int*))

struct NvrtcApi {
  NVTE_NVRTC_ENTRY_POINTS(NVTE_GPUAPI_DECLARE)
};

inline const std::array<std::string, 4> k_nvrtc_sonames = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2",
                                                           "libnvrtc.so"};

// What one compilation produced.
struct NvrtcOutput {
  std::vector<char> image; // CUBIN (sm_XX) or PTX text with its NUL (compute_XX)
  std::string log;         // the compiler's log, also on success (warnings)
  bool is_cubin = false;
};

class Nvrtc {
public:
  // Loads the first candidate that loads. A path's directory is searched first for the
  // libnvrtc-builtins of the same copy, which libnvrtc otherwise finds by SONAME (and could
  // then take from another CUDA installation).
  static util::Result<Nvrtc> load(std::span<const std::string> candidates = k_nvrtc_sonames);

  const NvrtcApi& api() const { return m_api; }
  const std::vector<std::string>& missing() const { return m_missing; }
  std::string path() const { return m_library.loaded_path(); }
  // {major, minor} from nvrtcVersion, or driver_error.
  util::Result<std::pair<int, int>> version() const;
  // Architectures this NVRTC can compile for (SM numbers), empty when it cannot say.
  std::vector<int> supported_archs() const;

  // The libnvrtc-builtins preloaded from the same directory as a libnvrtc given by path, or "".
  std::string builtins_path() const { return m_builtins ? m_builtins.loaded_path() : std::string(); }

  // The options compile passes NVRTC for arch: what a compiled image depends on beside the source.
  static std::vector<std::string> options_for(const std::string& arch);
  // Compiles source for arch ("sm_90" -> CUBIN, "compute_90" -> PTX). A compile error is
  // driver_error whose message holds NVRTC's error string and the full log.
  util::Result<NvrtcOutput> compile(const std::string& source, const std::string& name, const std::string& arch) const;

private:
  util::DlLibrary m_builtins;
  util::DlLibrary m_library;
  NvrtcApi m_api;
  std::vector<std::string> m_missing;
};

} // namespace gpuapi
