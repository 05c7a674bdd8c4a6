// driver: the kernel driver as /proc/driver/nvidia shows it. Cheap and safe (plain reads, no
// vendor library), so it runs first and still answers when NVML is missing or hangs. A
// driver.cuda_version from here comes from the branch table and is marked as such; NVML's or
// libcuda's own answer replaces it.
#include "probe/driver_info.hpp"
#include "probe/gpu_facts.hpp"
#include "probe/node_path.hpp"
#include "probe/node_probes.hpp"

#include "util/file.hpp"
#include "util/strings.hpp"

#include <cctype>

namespace probe {

namespace {

// Driver branch -> newest CUDA it supports: the minimum Linux driver of each CUDA toolkit's GA
// release (CUDA Toolkit Release Notes, "CUDA Toolkit and Corresponding Driver Versions"), as
// nvidia-smi reports it for that branch. Sorted by branch.
struct BranchCuda {
  long branch;
  long cuda_major;
  long cuda_minor;
};
constexpr BranchCuda k_branch_cuda[] = {
    {450, 11, 0}, {455, 11, 1}, {460, 11, 2}, {465, 11, 3}, {470, 11, 4}, {495, 11, 5},
    {510, 11, 6}, {515, 11, 7}, {520, 11, 8}, {525, 12, 0}, {530, 12, 1}, {535, 12, 2},
    {545, 12, 3}, {550, 12, 4}, {555, 12, 5}, {560, 12, 6}, {565, 12, 7}, {570, 12, 8},
    {575, 12, 9}, {580, 13, 0}, {590, 13, 1},
};

// A driver version in free text: the first word that parses as N.N[.N] with a major >= 100.
std::optional<model::Version> find_driver_version(std::string_view text) {
  for (auto word : util::split(text, ' ')) {
    word = util::trim(word);
    if (word.empty() || !std::isdigit(static_cast<unsigned char>(word[0])) || word.find('.') == std::string_view::npos) {
      continue;
    }
    auto version = model::Version::parse(word);
    if (version && version->major() >= 100 && version->components().size() >= 2) return *version;
  }
  return std::nullopt;
}

} // namespace

std::optional<DriverVersionInfo> parse_driver_version_file(std::string_view text) {
  for (auto line : util::split(text, '\n')) {
    if (!line.starts_with("NVRM version:")) continue;
    auto module = line.find("Kernel Module");
    if (module == std::string_view::npos) return std::nullopt;
    auto version = find_driver_version(line.substr(module + 13));
    if (!version) return std::nullopt;
    bool open = line.find("Open Kernel Module") != std::string_view::npos;
    return DriverVersionInfo{*version, open ? "open" : "proprietary"};
  }
  return std::nullopt;
}

DriverGpuInfo parse_gpu_information(std::string_view text) {
  DriverGpuInfo info;
  for (auto line : util::split(text, '\n')) {
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    auto key = util::trim(line.substr(0, colon));
    auto value = std::string(util::trim(line.substr(colon + 1)));
    if (key == "Model") info.model = value;
    else if (key == "GPU UUID") info.uuid = value;
    else if (key == "Bus Location") info.bus_location = value;
  }
  return info;
}

std::optional<model::Version> cuda_version_for_driver(const model::Version& driver) {
  const BranchCuda* found = nullptr;
  for (const auto& entry : k_branch_cuda) {
    if (entry.branch <= driver.major()) found = &entry;
  }
  // A branch newer than the table may support a newer CUDA than its last row: do not guess.
  if (!found || driver.major() >= std::end(k_branch_cuda)[-1].branch + 5) return std::nullopt;
  return model::Version{found->cuda_major, found->cuda_minor};
}

void run_driver_probe(const Host& host, model::Facts& facts) {
  const std::filesystem::path proc = "/proc/driver/nvidia"; // a node path, read inside the root
  auto version_text = read_node_file(host.root, proc / "version", 64u << 10);
  if (!version_text) {
    if (version_text.error().kind == util::ErrorKind::not_found) {
      record_status(facts, "driver", "not_installed", "no NVIDIA kernel driver loaded (" + (proc / "version").string() + " is absent)");
    } else {
      record_status(facts, "driver", "error", version_text.error().message);
    }
    return;
  }
  auto info = parse_driver_version_file(*version_text);
  if (!info) {
    record_status(facts, "driver", "error", "no driver version in the NVRM line of " + (proc / "version").string());
    return;
  }
  facts.set("driver.version", info->version);
  facts.set("driver.kernel_module", info->kernel_module);
  if (auto cuda = cuda_version_for_driver(info->version)) {
    facts.set("driver.cuda_version", *cuda);
    facts.set("driver.cuda_version_source", "driver_branch_table");
  }

  // Each GPU the driver bound has a directory named by its bus id.
  auto gpus = node_list_directory(host.root, proc / "gpus");
  if (gpus.listed()) {
    model::Facts found;
    std::size_t n = 0;
    for (const auto& entry : gpus) {
      auto text = read_node_file(host.root, proc / "gpus" / entry / "information", 64u << 10);
      if (!text) continue;
      auto gpu = parse_gpu_information(*text);
      auto bus = normalize_bus_id(gpu.bus_location.empty() ? entry : gpu.bus_location);
      std::string base = gpu_base(n++);
      if (bus) found.set(base + ".pci_bus_id", *bus);
      if (!gpu.model.empty()) found.set(base + ".name", gpu.model);
      if (!gpu.uuid.empty()) found.set(base + ".uuid", gpu.uuid);
      found.set(base + ".source", "driver");
    }
    for (std::size_t i = 0; i < n; ++i) merge_gpu(facts, found, i, MergePolicy::fill_missing);
  }
  record_status(facts, "driver", "ok");
}

} // namespace probe
