// What checking a workload at its real shape costs, decided before anything runs: GPU memory
// (cuDNN's tensors, the fp32 reference's, and the reference's score scratch, which is processed a
// chunk of heads and query rows at a time), the shape that fits when the whole one does not
// (batch halved first, then the sequence lengths), and the time the child may take.
//
// The time budget of a cuDNN child (docs/records/validation.md, "Time budget"): the default per-check
// timeout (120 s: starting CUDA, loading cuDNN, cuDNN's runtime compilation on a cold node) plus
// the reference's floating-point work at 1 TFLOP/s and cuDNN's six forward and six backward
// executions at 10 TFLOP/s, both far below what any GPU TE supports does, so that only a hang
// runs into it. `--timeout` replaces it.
#pragma once

#include "selftest/sdpa.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace selftest {

// The reference's scratch: P and dS, fp32, for `heads` heads and `rows` query rows at a time.
struct ChunkPlan {
  std::int64_t heads = 1; // heads of the whole batch (batch x num_heads) per chunk
  std::int64_t rows = 1;  // query rows per chunk
  std::int64_t seq_kv = 1;
  std::int64_t scratch_bytes() const { return 2 * heads * rows * seq_kv * 4; }
};

// The scratch the reference may use on a GPU with free_bytes free: an eighth of it, between
// 64 MiB and 2 GiB.
std::int64_t scratch_budget(std::int64_t free_bytes);
// Whole heads when a head's scratch fits the budget, else rows in multiples of 128.
ChunkPlan plan_chunks(const SdpaShape& shape, std::int64_t scratch_budget);

struct MemoryNeed {
  std::int64_t cudnn = 0;     // inputs, O, statistics, gradients, dQ accumulator, an allowance for workspace
  std::int64_t reference = 0; // fp32 O, dQ, dK, dV, row sums
  std::int64_t scratch = 0;   // ChunkPlan::scratch_bytes
  std::int64_t total() const { return cudnn + reference + scratch; }
};
MemoryNeed memory_need(const SdpaShape& shape, std::int64_t free_bytes);

// The shape to check on a GPU with free_bytes free: the workload's own when it fits (with a
// margin for contexts and cuDNN's internals), else with the batch halved until it fits or is 1,
// then both sequence lengths halved (not below 128). note says what was scaled and why;
// fits is false when not even the smallest of those fits.
struct FittedShape {
  SdpaShape shape;
  bool scaled = false;
  bool fits = true;
  std::string note;
  MemoryNeed need;
};
FittedShape fit_to_memory(const SdpaShape& shape, std::int64_t free_bytes);

// Floating-point operations: the reference's forward + backward, and one cuDNN forward (the
// backward is 2.5 times that), counting only the pairs the mask keeps.
double reference_flops(const SdpaShape& shape);
double cudnn_forward_flops(const SdpaShape& shape);

// The cuDNN child's time budget for this shape (above).
std::chrono::milliseconds shape_timeout(const SdpaShape& shape);

} // namespace selftest
