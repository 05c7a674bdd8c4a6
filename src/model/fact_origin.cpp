#include "model/fact_origin.hpp"

namespace model {

namespace {

constexpr NodeFactRoot k_node_roots[] = {
    {"gpu", "the GPUs are the node's hardware"},
    {"driver", "the kernel driver (version, CUDA level, open or proprietary module) is the node's"},
    {"libcuda", "the driver's user-space library: the NVIDIA container runtime injects the node's copy into the container"},
    {"system.hostname", "the job runs on the node"},
    {"system.kernel", "a container shares the node's kernel"},
    {"system.arch", "the node's CPU architecture"},
    {"probe.driver", "how the driver probe fared on the node"},
    {"probe.pci", "how the PCI probe fared on the node"},
    {"probe.nvml", "how the NVML probe fared on the node"},
    {"probe.cuda_driver", "how the libcuda probe fared on the node"},
};

bool under_root(std::string_view name, std::string_view root) {
  if (name.substr(0, root.size()) != root) return false;
  return name.size() == root.size() || name[root.size()] == '.' || name[root.size()] == '[';
}

} // namespace

std::span<const NodeFactRoot> node_fact_roots() { return k_node_roots; }

FactOrigin fact_origin(std::string_view name) {
  for (const auto& entry : k_node_roots)
    if (under_root(name, entry.root)) return FactOrigin::node;
  return FactOrigin::image;
}

Facts combine_image_and_node(const Facts& image, const Facts& node) {
  Facts combined;
  for (const auto& [name, value] : image.entries())
    if (fact_origin(name) == FactOrigin::image) combined.set(name, value);
  for (const auto& [name, value] : node.entries())
    if (fact_origin(name) == FactOrigin::node) combined.set(name, value);
  combined.derive();
  return combined;
}

} // namespace model
