// nvml: the driver's own account of itself and of each GPU (name, compute capability, memory,
// UUID, MIG mode, bus id), read through NVML in a bounded child process (vendor_child.hpp).
// NVML knows better than the PCI table, so its values replace those of the pci and driver
// probes for the GPU with the same bus id.
#include "probe/gpu_facts.hpp"
#include "probe/node_probes.hpp"
#include "probe/tree_policy.hpp"
#include "probe/vendor_child.hpp"

#include "gpuapi/cuda_driver.hpp"
#include "gpuapi/nvml.hpp"
#include "util/strings.hpp"

#include <cstdio>
#include <unistd.h>

namespace probe {

namespace {

constexpr std::string_view k_nvml_probe = "nvml";

std::vector<std::string> candidates(const Host& host) {
  auto it = host.library_overrides.find("nvml");
  if (it != host.library_overrides.end()) return {it->second.string()};
  return {gpuapi::k_nvml_sonames.begin(), gpuapi::k_nvml_sonames.end()};
}

// NVML strings are NUL-terminated within their buffer.
std::string from_buffer(const char* buffer, std::size_t size) {
  std::size_t n = 0;
  while (n < size && buffer[n]) ++n;
  return std::string(buffer, n);
}

// The body of the child: everything that touches NVML.
void query_nvml(const std::vector<std::string>& names, const ChildChannel& channel) {
  model::Facts facts;
  auto finish = [&](std::string_view status, const std::string& reason) {
    record_status(facts, k_nvml_probe, status, reason);
    channel.finish(facts);
  };
  auto loaded = gpuapi::Nvml::load(names);
  if (!loaded) {
    auto kind = loaded.error().kind;
    return finish(kind == util::ErrorKind::not_installed ? "not_installed" : "error", loaded.error().message);
  }
  const gpuapi::Nvml& nvml = *loaded;
  const gpuapi::NvmlApi& api = nvml.api();
  if (!nvml.missing().empty()) facts.set("probe.nvml.missing_symbols", util::join(nvml.missing(), ","));
  if (!api.nvmlInit_v2 || !api.nvmlDeviceGetCount_v2 || !api.nvmlDeviceGetHandleByIndex_v2) {
    return finish("symbol_missing", nvml.path() + " lacks " + util::join(nvml.missing(), ", ") +
                                        ": an NVML too old for this doctor");
  }

  channel.calling("nvmlInit_v2");
  if (auto rc = api.nvmlInit_v2(); rc != gpuapi::k_nvml_success) {
    return finish("error", "nvmlInit_v2 failed: " + nvml.describe(rc));
  }
  if (api.nvmlSystemGetDriverVersion) {
    char version[gpuapi::k_nvml_driver_version_size] = {};
    channel.calling("nvmlSystemGetDriverVersion");
    if (api.nvmlSystemGetDriverVersion(version, sizeof version) == gpuapi::k_nvml_success) {
      if (auto parsed = model::Version::parse(from_buffer(version, sizeof version))) facts.set("driver.version", *parsed);
    }
  }
  if (api.nvmlSystemGetCudaDriverVersion_v2) {
    int cuda = 0;
    channel.calling("nvmlSystemGetCudaDriverVersion_v2");
    if (api.nvmlSystemGetCudaDriverVersion_v2(&cuda) == gpuapi::k_nvml_success && cuda > 0) {
      auto unpacked = gpuapi::unpack_cuda_version(cuda);
      facts.set("driver.cuda_version", model::Version{unpacked.major, unpacked.minor});
      facts.set("driver.cuda_version_source", "nvml");
    }
  }
  unsigned count = 0;
  channel.calling("nvmlDeviceGetCount_v2");
  if (auto rc = api.nvmlDeviceGetCount_v2(&count); rc != gpuapi::k_nvml_success) {
    return finish("error", "nvmlDeviceGetCount_v2 failed: " + nvml.describe(rc));
  }
  std::vector<std::string> problems;
  for (unsigned i = 0; i < count; ++i) {
    std::string base = gpu_base(i);
    gpuapi::NvmlDevice device = nullptr;
    channel.calling("nvmlDeviceGetHandleByIndex_v2");
    if (auto rc = api.nvmlDeviceGetHandleByIndex_v2(i, &device); rc != gpuapi::k_nvml_success) {
      problems.push_back("GPU " + std::to_string(i) + ": " + nvml.describe(rc));
      continue;
    }
    facts.set(base + ".source", "nvml");
    if (api.nvmlDeviceGetPciInfo_v3) {
      gpuapi::NvmlPciInfo pci{};
      channel.calling("nvmlDeviceGetPciInfo_v3");
      if (api.nvmlDeviceGetPciInfo_v3(device, &pci) == gpuapi::k_nvml_success) {
        if (auto bus = normalize_bus_id(from_buffer(pci.bus_id, sizeof pci.bus_id))) facts.set(base + ".pci_bus_id", *bus);
        char id[8];
        std::snprintf(id, sizeof id, "0x%04x", pci.pci_device_id >> 16);
        facts.set(base + ".pci_device_id", std::string(id));
      }
    }
    if (api.nvmlDeviceGetName) {
      char name[gpuapi::k_nvml_name_size] = {};
      channel.calling("nvmlDeviceGetName");
      if (api.nvmlDeviceGetName(device, name, sizeof name) == gpuapi::k_nvml_success) {
        facts.set(base + ".name", from_buffer(name, sizeof name));
      }
    }
    if (api.nvmlDeviceGetCudaComputeCapability) {
      int major = 0, minor = 0;
      channel.calling("nvmlDeviceGetCudaComputeCapability");
      if (api.nvmlDeviceGetCudaComputeCapability(device, &major, &minor) == gpuapi::k_nvml_success) {
        facts.set(base + ".compute_capability", model::Version{major, minor});
        facts.set(base + ".sm", static_cast<long>(major * 10 + minor));
      }
    }
    if (api.nvmlDeviceGetMemoryInfo) {
      gpuapi::NvmlMemory memory{};
      channel.calling("nvmlDeviceGetMemoryInfo");
      if (api.nvmlDeviceGetMemoryInfo(device, &memory) == gpuapi::k_nvml_success) {
        facts.set(base + ".memory_mib", static_cast<long>(memory.total >> 20));
      }
    }
    if (api.nvmlDeviceGetUUID) {
      char uuid[gpuapi::k_nvml_uuid_size] = {};
      channel.calling("nvmlDeviceGetUUID");
      if (api.nvmlDeviceGetUUID(device, uuid, sizeof uuid) == gpuapi::k_nvml_success) {
        facts.set(base + ".uuid", from_buffer(uuid, sizeof uuid));
      }
    }
    if (api.nvmlDeviceGetMigMode) {
      unsigned current = 0, pending = 0;
      channel.calling("nvmlDeviceGetMigMode");
      // NOT_SUPPORTED on GPUs without MIG: then the fact stays absent.
      if (api.nvmlDeviceGetMigMode(device, &current, &pending) == gpuapi::k_nvml_success) {
        facts.set(base + ".mig_enabled", current != 0);
      }
    }
  }
  if (api.nvmlShutdown) {
    channel.calling("nvmlShutdown");
    api.nvmlShutdown();
  }
  finish("ok", problems.empty() ? std::string() : util::join(problems, "; "));
}

// The parent's side: NVML's values into facts (they replace the pci and driver probes' for the
// GPU with the same bus id).
void merge_nvml(VendorOutcome outcome, model::Facts& facts) {
  if (!outcome.facts) {
    record_status(facts, k_nvml_probe, outcome.status, outcome.reason);
    return;
  }
  const model::Facts& found = *outcome.facts;
  for (const auto& [name, value] : found.entries()) {
    if (name.starts_with("driver.") || name.starts_with("probe.nvml.")) facts.set(name, value);
  }
  for (std::size_t i = 0, n = found.count("gpu"); i < n; ++i) {
    if (found.has(gpu_base(i) + ".source")) merge_gpu(facts, found, i, MergePolicy::overwrite);
  }
  if (!found.has("probe.nvml.status")) record_status(facts, k_nvml_probe, "error", "the NVML child sent no status");
}

} // namespace

std::unique_ptr<StartedProbe> start_nvml_probe(const Host& host) {
  if (!host.allow_vendor_calls) {
    return std::make_unique<StartedVendorProbe>(k_nvml_probe, "skipped", "vendor library calls are disabled");
  }
  // As root, the loader's search through a directory another user can change would run that
  // user's library as root (tree_policy.hpp).
  if (auto why = loader_path_refusal(::geteuid()); why && !host.library_overrides.contains("nvml"))
    return std::make_unique<StartedVendorProbe>(k_nvml_probe, "skipped", "not loaded: " + *why);
  // Under a fake root the loader would find this machine's library, not the node's.
  if (!host.root.empty() && host.root != "/" && !host.library_overrides.contains("nvml")) {
    return std::make_unique<StartedVendorProbe>(k_nvml_probe, "skipped",
                                                "the node root is " + host.root.string() + "; no library given for nvml");
  }
  auto names = candidates(host);
  return std::make_unique<StartedVendorProbe>(
      start_vendor_child("NVML", host.vendor_timeout, [&](const ChildChannel& channel) { query_nvml(names, channel); }),
      merge_nvml);
}

void run_nvml_probe(const Host& host, model::Facts& facts) { start_nvml_probe(host)->finish(facts); }

ProbeSpec::Need nvml_needed(const Host& host, const model::Facts& facts) {
  if (host.library_overrides.contains("nvml")) return {true, "an NVML library was given explicitly"};
  std::size_t gpus = facts.count("gpu");
  bool driver = facts.has("driver.version");
  if (!driver && gpus == 0) return {false, "no NVIDIA driver and no NVIDIA GPU: nothing for NVML to add"};
  if (driver && gpus == 0) return {true, "the driver is loaded but neither /proc/driver/nvidia nor the PCI bus listed a GPU"};
  if (!driver) return {true, "NVIDIA GPUs are on the PCI bus but /proc/driver/nvidia/version is unreadable"};
  for (std::size_t i = 0; i < gpus; ++i) {
    std::string base = gpu_base(i);
    if (!facts.has(base + ".compute_capability")) {
      return {true, "GPU " + std::to_string(i) + " (" + facts.get_string(base + ".pci_device_id").value_or("unknown device id") +
                        ") is not in the doctor's device table"};
    }
    if (!facts.has(base + ".uuid")) return {true, "GPU " + std::to_string(i) + " is not listed under /proc/driver/nvidia/gpus"};
  }
  return {false, "the driver's /proc files and the PCI device table named every GPU (NVML would add MIG mode and the exact memory size)"};
}

} // namespace probe
