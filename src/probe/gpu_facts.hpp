// The gpu[i] collection is written by several probes (driver, pci, nvml), each knowing part of
// each GPU. They meet on the PCI bus id: a probe's GPU either matches a GPU already recorded at
// that bus id or is appended. Who wins a field that both know is the caller's choice.
#pragma once

#include "model/facts.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace probe {

// "00000000:3B:00.0", "0000:3b:00.0" -> "0000:3b:00.0"; nullopt when it is not a bus id.
std::optional<std::string> normalize_bus_id(std::string_view text);

// "gpu[3]"
std::string gpu_base(std::size_t index);

enum class MergePolicy {
  fill_missing, // keep what is already recorded; add only absent fields
  overwrite,    // the new values win (NVML)
};

// Copies the fields of source's gpu[source_index] into facts' GPU with the same pci_bus_id,
// appending a GPU when none matches; a source GPU without a bus id goes to the same index.
// Keeps sm and compute_capability consistent and sets gpu[i].index. Returns the index written.
std::size_t merge_gpu(model::Facts& facts, const model::Facts& source, std::size_t source_index, MergePolicy policy);

} // namespace probe
