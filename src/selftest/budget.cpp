#include "selftest/budget.hpp"

#include "selftest/selftest.hpp"

#include <algorithm>
#include <cstdio>

namespace selftest {

namespace {

constexpr std::int64_t k_mib = 1 << 20;
constexpr std::int64_t k_gib = std::int64_t{1} << 30;
// Contexts, cuDNN's handle and internal buffers, the execution plans' workspace.
constexpr std::int64_t k_margin = 768 * k_mib;

std::string gib(std::int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / static_cast<double>(k_gib));
  return text;
}

} // namespace

std::int64_t scratch_budget(std::int64_t free_bytes) { return std::clamp(free_bytes / 8, 64 * k_mib, 2 * k_gib); }

ChunkPlan plan_chunks(const SdpaShape& s, std::int64_t budget) {
  ChunkPlan plan;
  plan.seq_kv = s.seq_kv;
  const std::int64_t per_head = 2 * s.seq_q * s.seq_kv * 4;
  if (per_head <= budget) {
    plan.rows = s.seq_q;
    plan.heads = std::clamp<std::int64_t>(budget / per_head, 1, std::min<std::int64_t>(s.batch * s.heads, 65535)); // a grid's z
  } else {
    plan.heads = 1;
    plan.rows = std::clamp<std::int64_t>(budget / (2 * s.seq_kv * 4) / 128 * 128, 128, s.seq_q);
  }
  return plan;
}

MemoryNeed memory_need(const SdpaShape& s, std::int64_t free_bytes) {
  MemoryNeed need;
  const std::int64_t B = s.batch, H = s.heads, G = s.kv_heads, Sq = s.seq_q, Skv = s.seq_kv, D = s.dim_qk, Dv = s.dim_v;
  const std::int64_t inputs = B * H * Sq * D + B * G * Skv * (D + Dv), output = B * H * Sq * Dv;
  const std::int64_t rows = B * H * Sq;
  // Q, K, V, O and the gradients dQ, dK, dV, dO in 16 bits; statistics, softmax sums and the dQ
  // accumulator in fp32; cuDNN's workspace (small for these engines) inside the margin.
  need.cudnn = 2 * 2 * (inputs + output) + 4 * (2 * rows + B * H * Sq * D);
  need.reference = 4 * (output + rows + B * H * Sq * D + B * G * Skv * (D + Dv));
  need.scratch = plan_chunks(s, scratch_budget(free_bytes)).scratch_bytes();
  return need;
}

FittedShape fit_to_memory(const SdpaShape& shape, std::int64_t free_bytes) {
  FittedShape fit;
  fit.shape = shape;
  auto fits = [&](const SdpaShape& s) { return memory_need(s, free_bytes).total() + k_margin <= free_bytes; };
  while (!fits(fit.shape) && fit.shape.batch > 1) fit.shape.batch = (fit.shape.batch + 1) / 2;
  while (!fits(fit.shape) && std::min(fit.shape.seq_q, fit.shape.seq_kv) >= 256) {
    fit.shape.seq_q /= 2;
    fit.shape.seq_kv /= 2;
  }
  fit.need = memory_need(fit.shape, free_bytes);
  fit.fits = fits(fit.shape);
  fit.scaled = fit.shape.batch != shape.batch || fit.shape.seq_q != shape.seq_q;
  std::string whole = gib(memory_need(shape, free_bytes).total() + k_margin) + " needed, " + gib(free_bytes) + " free on the GPU";
  if (!fit.fits) {
    fit.note = "does not fit even at batch " + std::to_string(fit.shape.batch) + ", seq " + std::to_string(fit.shape.seq_q) + " (" + whole + ")";
  } else if (fit.scaled) {
    fit.note = "checked at batch " + std::to_string(fit.shape.batch) + ", seq " + std::to_string(fit.shape.seq_q) +
               (fit.shape.seq_kv != fit.shape.seq_q ? "/" + std::to_string(fit.shape.seq_kv) : "") + " instead of batch " +
               std::to_string(shape.batch) + ", seq " + std::to_string(shape.seq_q) +
               (shape.seq_kv != shape.seq_q ? "/" + std::to_string(shape.seq_kv) : "") + ": the whole workload does not fit (" + whole + ")";
  }
  return fit;
}

double reference_flops(const SdpaShape& s) {
  const double pairs = static_cast<double>(s.batch * s.heads) * static_cast<double>(kept_pairs(s));
  const double d = static_cast<double>(s.dim_qk), dv = static_cast<double>(s.dim_v);
  // Forward: scores and P V. Backward: scores again, dP, dQ, dK, dV.
  return 2 * pairs * (d + dv) + 2 * pairs * (3 * d + 2 * dv);
}

double cudnn_forward_flops(const SdpaShape& s) {
  return 2.0 * static_cast<double>(s.batch * s.heads) * static_cast<double>(kept_pairs(s)) *
         static_cast<double>(s.dim_qk + s.dim_v);
}

std::chrono::milliseconds shape_timeout(const SdpaShape& s) {
  double seconds = reference_flops(s) / 1e12 + 6 * 3.5 * cudnn_forward_flops(s) / 1e13;
  return k_default_timeout + std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

} // namespace selftest
