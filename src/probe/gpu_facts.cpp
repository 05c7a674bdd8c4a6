#include "probe/gpu_facts.hpp"

#include "util/strings.hpp"

#include <cstdio>

namespace probe {

std::optional<std::string> normalize_bus_id(std::string_view text) {
  text = util::trim(text);
  auto colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  unsigned long domain = 0;
  unsigned bus = 0, device = 0, function = 0;
  std::string copy(text);
  char tail = 0;
  if (std::sscanf(copy.c_str(), "%lx:%x:%x.%x%c", &domain, &bus, &device, &function, &tail) != 4) return std::nullopt;
  if (domain > 0xffffffffUL || bus > 0xff || device > 0x1f || function > 7) return std::nullopt;
  char out[32];
  std::snprintf(out, sizeof out, "%04lx:%02x:%02x.%x", domain, bus, device, function);
  return std::string(out);
}

std::string gpu_base(std::size_t index) { return "gpu[" + std::to_string(index) + "]"; }

std::size_t merge_gpu(model::Facts& facts, const model::Facts& source, std::size_t source_index, MergePolicy policy) {
  std::string from = gpu_base(source_index);
  auto bus_id = source.get_string(from + ".pci_bus_id");
  std::size_t count = facts.count("gpu");
  std::size_t target = count;
  if (bus_id) {
    for (std::size_t i = 0; i < count; ++i) {
      if (facts.get_string(gpu_base(i) + ".pci_bus_id") == bus_id) {
        target = i;
        break;
      }
    }
  }
  std::string to = gpu_base(target);
  bool overwrite = policy == MergePolicy::overwrite;
  for (auto it = source.entries().lower_bound(from + "."); it != source.entries().end(); ++it) {
    if (!it->first.starts_with(from + ".")) break;
    std::string field = it->first.substr(from.size() + 1);
    if (field == "index") continue;
    std::string name = to + "." + field;
    if (!overwrite && facts.has(name)) continue;
    // A new compute capability invalidates the sm derived from the old one, and vice versa.
    if (field == "compute_capability" && !source.has(from + ".sm")) facts.erase(to + ".sm");
    if (field == "sm" && !source.has(from + ".compute_capability")) facts.erase(to + ".compute_capability");
    facts.set(name, it->second);
  }
  facts.set(to + ".index", static_cast<long>(target));
  return target;
}

} // namespace probe
