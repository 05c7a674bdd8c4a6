// NVML (libnvidia-ml), the driver's management library, bound at run time.
//
// The ABI, declared here instead of including nvml.h: every call returns nvmlReturn_t (an int;
// 0 is success), devices are opaque handles, strings are written into caller buffers of
// documented sizes. The _v2 / _v3 suffixes are the names the versioned symbols have had since
// NVML 10 (nvmlInit_v2 initialises without touching GPUs that are lost or inaccessible);
// nvmlPciInfo_t is the v3 layout. nvmlSystemGetCudaDriverVersion_v2 returns the highest CUDA
// version the driver supports as 1000 * major + 10 * minor (12040 = 12.4). NVML never needs
// cuInit and does not create a CUDA context.
#pragma once

#include "gpuapi/loader.hpp"

#include <array>
#include <span>
#include <string>
#include <vector>

namespace gpuapi {

using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;

inline constexpr NvmlReturn k_nvml_success = 0;
inline constexpr NvmlReturn k_nvml_error_not_supported = 3;
inline constexpr NvmlReturn k_nvml_error_driver_not_loaded = 9;

// Buffer sizes from the NVML documentation (NVML_*_BUFFER_SIZE).
inline constexpr unsigned k_nvml_driver_version_size = 80;
inline constexpr unsigned k_nvml_name_size = 96;
inline constexpr unsigned k_nvml_uuid_size = 96;

struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct NvmlPciInfo {
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id; // (device id << 16) | vendor id
  unsigned int pci_subsystem_id;
  char bus_id[32]; // "00000000:00:06.0"
};

// name, return type, parameters: the whole API this project uses.
#define NVTE_NVML_ENTRY_POINTS(X)                                                                      \
  X(nvmlInit_v2, NvmlReturn, (void))                                                                    \
  X(nvmlShutdown, NvmlReturn, (void))                                                                   \
  X(nvmlErrorString, const char*, (NvmlReturn))                                                         \
  X(nvmlSystemGetDriverVersion, NvmlReturn, (char*, unsigned int))                                      \
  X(nvmlSystemGetCudaDriverVersion_v2, NvmlReturn, (int*))                                              \
  X(nvmlDeviceGetCount_v2, NvmlReturn, (unsigned int*))                                                 \
  X(nvmlDeviceGetHandleByIndex_v2, NvmlReturn, (unsigned int, NvmlDevice*))                             \
  X(nvmlDeviceGetName, NvmlReturn, (NvmlDevice, char*, unsigned int))                                   \
  X(nvmlDeviceGetCudaComputeCapability, NvmlReturn, (NvmlDevice, int*, int*))                           \
  X(nvmlDeviceGetMemoryInfo, NvmlReturn, (NvmlDevice, NvmlMemory*))                                     \
  X(nvmlDeviceGetUUID, NvmlReturn, (NvmlDevice, char*, unsigned int))                                   \
  X(nvmlDeviceGetMigMode, NvmlReturn, (NvmlDevice, unsigned int*, unsigned int*))                       \
  X(nvmlDeviceGetPciInfo_v3, NvmlReturn, (NvmlDevice, NvmlPciInfo*))

struct NvmlApi {
  NVTE_NVML_ENTRY_POINTS(NVTE_GPUAPI_DECLARE)
};

// The sonames tried, in order, when no path is given.
inline const std::array<std::string, 2> k_nvml_sonames = {"libnvidia-ml.so.1", "libnvidia-ml.so"};

class Nvml {
public:
  // Loads the first candidate and binds every entry point it has. Fails only when no candidate
  // loads (not_installed / io, with dlerror()); missing symbols are listed in missing().
  static util::Result<Nvml> load(std::span<const std::string> candidates = k_nvml_sonames);

  const NvmlApi& api() const { return m_api; }
  // Entry points the library lacks, in list order.
  const std::vector<std::string>& missing() const { return m_missing; }
  // The file the loader mapped.
  std::string path() const { return m_library.loaded_path(); }
  // "Driver Not Loaded (9)": nvmlErrorString when bound, else the number.
  std::string describe(NvmlReturn code) const;

private:
  util::DlLibrary m_library;
  NvmlApi m_api;
  std::vector<std::string> m_missing;
};

} // namespace gpuapi
