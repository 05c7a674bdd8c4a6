// What the kernel driver says about itself, read from text: /proc/driver/nvidia/version, the
// per-GPU information files, and the table from driver branch to the newest CUDA it supports.
#pragma once

#include "model/version.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace probe {

struct DriverVersionInfo {
  model::Version version;    // 580.159.04
  std::string kernel_module; // "open" or "proprietary"
};

// Parses the "NVRM version:" line of /proc/driver/nvidia/version; nullopt when there is none.
std::optional<DriverVersionInfo> parse_driver_version_file(std::string_view text);

struct DriverGpuInfo {
  std::string model;        // "NVIDIA H100 80GB HBM3"
  std::string uuid;         // "GPU-..."
  std::string bus_location; // "0000:00:06.0"
};

// Parses /proc/driver/nvidia/gpus/<bus id>/information ("Key: value" lines).
DriverGpuInfo parse_gpu_information(std::string_view text);

// The newest CUDA version a driver of this branch supports (580.x -> 13.0), from NVIDIA's CUDA
// toolkit release notes; nullopt for a branch older than 450 or newer than the table knows.
std::optional<model::Version> cuda_version_for_driver(const model::Version& driver);

} // namespace probe
