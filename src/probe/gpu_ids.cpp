// Sources, checked per entry (2026-11): the NVIDIA driver's own name table
// (NVIDIA/open-gpu-kernel-modules 595.45.04, src/nvidia/generated/g_nv_name_released.h; the V100
// names from an older release of the same file, which dropped Volta), the PCI ID repository
// (pci.ids 2023.04.11 as shipped by Debian 12) and NVIDIA/gpu-admin-tools gpu/devid_chips.py
// for the Blackwell chip ranges. IDs seen only in a single unofficial list are left out; the
// family ranges still classify them. Memory is the nominal size in MiB (GB * 1024); NVML's value
// (slightly less, and exact) replaces it when NVML runs.
#include "probe/gpu_ids.hpp"

#include <algorithm>
#include <iterator>

namespace probe {

namespace {

constexpr long GB = 1024;

// Sorted by device ID.
constexpr GpuModel k_gpu_models[] = {
    {0x1D81, "NVIDIA TITAN V", "Volta", 7, 0, 12 * GB},
    {0x1DB1, "Tesla V100-SXM2-16GB", "Volta", 7, 0, 16 * GB},
    {0x1DB2, "Tesla V100-DGXS-16GB", "Volta", 7, 0, 16 * GB},
    {0x1DB3, "Tesla V100-FHHL-16GB", "Volta", 7, 0, 16 * GB},
    {0x1DB4, "Tesla V100-PCIE-16GB", "Volta", 7, 0, 16 * GB},
    {0x1DB5, "Tesla V100-SXM2-32GB", "Volta", 7, 0, 32 * GB},
    {0x1DB6, "Tesla V100-PCIE-32GB", "Volta", 7, 0, 32 * GB},
    {0x1DB7, "Tesla V100-DGXS-32GB", "Volta", 7, 0, 32 * GB},
    {0x1DB8, "Tesla V100-SXM3-32GB", "Volta", 7, 0, 32 * GB},
    {0x1DBA, "Quadro GV100", "Volta", 7, 0, 32 * GB},
    {0x1DF5, "Tesla V100-SXM2-16GB", "Volta", 7, 0, 16 * GB},
    {0x1DF6, "Tesla V100S-PCIE-32GB", "Volta", 7, 0, 32 * GB},
    {0x1E30, "Quadro RTX 6000/8000", "Turing", 7, 5, 0},
    {0x1E36, "Quadro RTX 6000", "Turing", 7, 5, 24 * GB},
    {0x1EB8, "Tesla T4", "Turing", 7, 5, 16 * GB},
    {0x20B0, "NVIDIA A100-SXM4-40GB", "Ampere", 8, 0, 40 * GB},
    {0x20B1, "NVIDIA A100 PCIe 40GB", "Ampere", 8, 0, 40 * GB},
    {0x20B2, "NVIDIA A100-SXM4-80GB", "Ampere", 8, 0, 80 * GB},
    {0x20B3, "NVIDIA A100-SXM-64GB", "Ampere", 8, 0, 64 * GB},
    {0x20B5, "NVIDIA A100 80GB PCIe", "Ampere", 8, 0, 80 * GB},
    {0x20B7, "NVIDIA A30", "Ampere", 8, 0, 24 * GB},
    {0x20BD, "NVIDIA A800-SXM4-40GB", "Ampere", 8, 0, 40 * GB},
    {0x20F1, "NVIDIA A100-PCIE-40GB", "Ampere", 8, 0, 40 * GB},
    {0x20F3, "NVIDIA A800-SXM4-80GB", "Ampere", 8, 0, 80 * GB},
    {0x20F5, "NVIDIA A800 80GB PCIe", "Ampere", 8, 0, 80 * GB},
    {0x20F6, "NVIDIA A800 40GB Active", "Ampere", 8, 0, 40 * GB},
    {0x2203, "NVIDIA GeForce RTX 3090 Ti", "Ampere", 8, 6, 24 * GB},
    {0x2204, "NVIDIA GeForce RTX 3090", "Ampere", 8, 6, 24 * GB},
    {0x2230, "NVIDIA RTX A6000", "Ampere", 8, 6, 48 * GB},
    {0x2231, "NVIDIA RTX A5000", "Ampere", 8, 6, 24 * GB},
    {0x2232, "NVIDIA RTX A4500", "Ampere", 8, 6, 20 * GB},
    {0x2233, "NVIDIA RTX A5500", "Ampere", 8, 6, 24 * GB},
    {0x2235, "NVIDIA A40", "Ampere", 8, 6, 48 * GB},
    {0x2236, "NVIDIA A10", "Ampere", 8, 6, 24 * GB},
    {0x2237, "NVIDIA A10G", "Ampere", 8, 6, 24 * GB},
    {0x2238, "NVIDIA A10M", "Ampere", 8, 6, 0},
    {0x2313, "NVIDIA H100 CNX", "Hopper", 9, 0, 0},
    {0x2321, "NVIDIA H100 NVL", "Hopper", 9, 0, 94 * GB},
    {0x2322, "NVIDIA H800 PCIe", "Hopper", 9, 0, 80 * GB},
    {0x2324, "NVIDIA H800", "Hopper", 9, 0, 80 * GB},
    {0x2329, "NVIDIA H20", "Hopper", 9, 0, 96 * GB},
    {0x232C, "NVIDIA H20-3e", "Hopper", 9, 0, 141 * GB},
    {0x2330, "NVIDIA H100 80GB HBM3", "Hopper", 9, 0, 80 * GB},
    {0x2331, "NVIDIA H100 PCIe", "Hopper", 9, 0, 80 * GB},
    {0x2335, "NVIDIA H200", "Hopper", 9, 0, 141 * GB},
    {0x2339, "NVIDIA H100", "Hopper", 9, 0, 0},
    {0x233A, "NVIDIA H800 NVL", "Hopper", 9, 0, 0},
    {0x233B, "NVIDIA H200 NVL", "Hopper", 9, 0, 141 * GB},
    {0x2342, "NVIDIA GH200", "Hopper", 9, 0, 0},
    {0x2348, "NVIDIA GH200 144G HBM3e", "Hopper", 9, 0, 144 * GB},
    {0x24B0, "NVIDIA RTX A4000", "Ampere", 8, 6, 16 * GB},
    {0x2531, "NVIDIA RTX A2000", "Ampere", 8, 6, 6 * GB},
    {0x2571, "NVIDIA RTX A2000 12GB", "Ampere", 8, 6, 12 * GB},
    {0x25B6, "NVIDIA A16 / A2", "Ampere", 8, 6, 16 * GB},
    {0x2684, "NVIDIA GeForce RTX 4090", "Ada", 8, 9, 24 * GB},
    {0x2685, "NVIDIA GeForce RTX 4090 D", "Ada", 8, 9, 24 * GB},
    {0x26B1, "NVIDIA RTX 6000 Ada Generation", "Ada", 8, 9, 48 * GB},
    {0x26B2, "NVIDIA RTX 5000 Ada Generation", "Ada", 8, 9, 32 * GB},
    {0x26B3, "NVIDIA RTX 5880 Ada Generation", "Ada", 8, 9, 48 * GB},
    {0x26B5, "NVIDIA L40", "Ada", 8, 9, 48 * GB},
    {0x26B9, "NVIDIA L40S", "Ada", 8, 9, 48 * GB},
    {0x26BA, "NVIDIA L20", "Ada", 8, 9, 48 * GB},
    {0x27B0, "NVIDIA RTX 4000 SFF Ada Generation", "Ada", 8, 9, 20 * GB},
    {0x27B1, "NVIDIA RTX 4500 Ada Generation", "Ada", 8, 9, 24 * GB},
    {0x27B2, "NVIDIA RTX 4000 Ada Generation", "Ada", 8, 9, 20 * GB},
    {0x27B6, "NVIDIA L2", "Ada", 8, 9, 24 * GB},
    {0x27B8, "NVIDIA L4", "Ada", 8, 9, 24 * GB},
    {0x28B0, "NVIDIA RTX 2000 Ada Generation", "Ada", 8, 9, 16 * GB},
    {0x2901, "NVIDIA B200", "Blackwell", 10, 0, 0},
    {0x2941, "NVIDIA GB200", "Blackwell", 10, 0, 0},
    {0x2B85, "NVIDIA GeForce RTX 5090", "Blackwell", 12, 0, 32 * GB},
    {0x2B87, "NVIDIA GeForce RTX 5090 D", "Blackwell", 12, 0, 32 * GB},
    {0x2BB1, "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "Blackwell", 12, 0, 96 * GB},
    {0x2BB5, "NVIDIA RTX PRO 6000 Blackwell Server Edition", "Blackwell", 12, 0, 96 * GB},
    {0x2E12, "NVIDIA GB10", "Blackwell", 12, 1, 0},
    {0x3182, "NVIDIA B300 SXM6 AC", "Blackwell", 10, 3, 0},
    {0x31C2, "NVIDIA GB300", "Blackwell", 10, 3, 0},
};

struct FamilyRange {
  std::uint16_t first;
  std::uint16_t last;
  GpuFamily family;
};

// Checked in order: GH100 sits inside the span of the GA10x ranges.
constexpr FamilyRange k_families[] = {
    {0x1D80, 0x1DFF, {"Volta", 7, 0}},      // GV100
    {0x1E00, 0x1FFF, {"Turing", 7, 5}},     // TU102, TU104, TU106, TU117
    {0x2180, 0x21FF, {"Turing", 7, 5}},     // TU116
    {0x2080, 0x20FF, {"Ampere", 8, 0}},     // GA100
    {0x2300, 0x237F, {"Hopper", 9, 0}},     // GH100 (0x2340-0x237f: Grace Hopper)
    {0x2200, 0x25FF, {"Ampere", 8, 6}},     // GA102, GA103, GA104, GA106, GA107
    {0x2680, 0x28FF, {"Ada", 8, 9}},        // AD102 - AD107
    {0x2900, 0x29FF, {"Blackwell", 10, 0}}, // GB100, GB102
    {0x3180, 0x327F, {"Blackwell", 10, 3}}, // GB110, GB112
    {0x2B80, 0x2DFF, {"Blackwell", 12, 0}}, // GB202, GB203, GB206, GB207
    {0x2F00, 0x2F7F, {"Blackwell", 12, 0}}, // GB205
};

static_assert(std::is_sorted(std::begin(k_gpu_models), std::end(k_gpu_models),
                             [](const GpuModel& a, const GpuModel& b) { return a.device_id < b.device_id; }));

} // namespace

const GpuModel* find_gpu_model(std::uint16_t device_id) {
  auto it = std::lower_bound(std::begin(k_gpu_models), std::end(k_gpu_models), device_id,
                             [](const GpuModel& model, std::uint16_t id) { return model.device_id < id; });
  return it != std::end(k_gpu_models) && it->device_id == device_id ? &*it : nullptr;
}

std::optional<GpuFamily> gpu_family_for(std::uint16_t device_id) {
  if (const GpuModel* model = find_gpu_model(device_id)) {
    return GpuFamily{model->architecture, model->cc_major, model->cc_minor};
  }
  for (const auto& range : k_families) {
    if (device_id >= range.first && device_id <= range.last) return range.family;
  }
  return std::nullopt;
}

} // namespace probe
