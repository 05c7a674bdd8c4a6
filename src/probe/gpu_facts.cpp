#include "probe/gpu_facts.hpp"

#include "util/strings.hpp"

#include <cstdio>

namespace probe {

namespace {

// A field of 1..max_digits hex digits, whole.
std::optional<unsigned long> parse_hex(std::string_view text, std::size_t max_digits) {
  if (text.empty() || text.size() > max_digits) return std::nullopt;
  unsigned long value = 0;
  for (char c : text) {
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (digit < 0) return std::nullopt;
    value = value * 16 + static_cast<unsigned long>(digit);
  }
  return value;
}

} // namespace

std::optional<std::string> normalize_bus_id(std::string_view text) {
  // DOMAIN:BUS:DEVICE.FUNCTION
  auto parts = util::split(util::trim(text), ':');
  if (parts.size() != 3) return std::nullopt;
  auto dot = parts[2].find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  auto domain = parse_hex(parts[0], 8);
  auto bus = parse_hex(parts[1], 2);
  auto device = parse_hex(parts[2].substr(0, dot), 2);
  auto function = parse_hex(parts[2].substr(dot + 1), 1);
  if (!domain || !bus || !device || !function || *device > 0x1f || *function > 7) return std::nullopt;
  char out[32];
  std::snprintf(out, sizeof out, "%04lx:%02lx:%02lx.%lx", *domain, *bus, *device, *function);
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
  } else if (source_index < count) {
    // Without a bus id, trust the order: NVML, the driver and the PCI scan all count GPUs in
    // PCI bus order.
    target = source_index;
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
