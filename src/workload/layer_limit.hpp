// The bound on a model's layer count that every importer applies (Hugging Face config.json,
// Megatron arguments and recipes): their layer plans hold one entry per layer, so a count of
// four billion would allocate until the OOM killer acts. Part of the hardened input layer's
// numeric bounds (docs/reliability.md, "Inputs").
#pragma once

#include <cstdint>

namespace workload {

// More layers than any model has (the largest published stacks have a few hundred).
inline constexpr std::int64_t k_max_layers = 10'000;

} // namespace workload
