// NVIDIA PCI device IDs as data: product name, architecture, compute capability and memory for
// the GPUs TE users run on. GPU nodes carry no pci.ids, so libpci alone cannot name a device;
// this table names it without any driver. Unknown IDs fall back to the chip's ID range, which
// still gives the architecture and compute capability.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace probe {

struct GpuModel {
  std::uint16_t device_id;
  std::string_view name;         // as NVML names it ("NVIDIA H100 80GB HBM3")
  std::string_view architecture; // Volta, Turing, Ampere, Ada, Hopper, Blackwell
  int cc_major;
  int cc_minor;
  long memory_mib; // nominal; 0 where one ID covers several memory sizes or it is not known
};

// The exact entry for a device ID, or nullptr.
const GpuModel* find_gpu_model(std::uint16_t device_id);

struct GpuFamily {
  std::string_view architecture;
  int cc_major;
  int cc_minor;
};

// The chip family whose PCI ID range holds device_id (e.g. 0x2300-0x237f: GH100, Hopper, 9.0).
std::optional<GpuFamily> gpu_family_for(std::uint16_t device_id);

} // namespace probe
