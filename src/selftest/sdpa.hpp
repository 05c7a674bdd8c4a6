// Scaled-dot-product attention on the host: the shapes and memory layouts TE uses (bshd, sbhd,
// the interleaved sbh3d / bsh3d / sb3hd / bs3hd and KV-interleaved sbhd_sbh2d / bshd_bsh2d), as
// strides of [batch, heads, seq, dim] views into buffers, the masks as a band of keys per query,
// the fp16/bf16 conversions, the reproducible inputs, and an fp32 reference on the host for tiny
// shapes and the tests (the self-test itself compares on the GPU: reference.hpp). No GPU needed.
#pragma once

#include "selftest/selftest.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace selftest {

struct SdpaShape {
  bool bf16 = true; // else fp16
  std::string layout = "bshd_bshd_bshd";
  std::int64_t batch = 2, heads = 16, kv_heads = 16, seq_q = 128, seq_kv = 128, dim_qk = 64, dim_v = 64;
  bool causal = false; // top-left aligned, as TE's "causal"
  // TE's window_size: query i sees keys i - window_left .. i + window_right; -1 is unbounded.
  // A causal mask bounds the right side at 0 whatever window_right says.
  std::int64_t window_left = -1, window_right = -1;
  float scale() const;  // 1/sqrt(dim_qk)
  std::string label() const;
};

// The keys a query sees: key j of query i when lo <= j - i <= hi (top-left aligned, as TE's causal
// and sliding window masks); k_unbounded when a side has no bound.
inline constexpr std::int64_t k_unbounded = std::int64_t{1} << 40;
struct Band {
  std::int64_t lo = -k_unbounded, hi = k_unbounded;
  bool keeps(std::int64_t i, std::int64_t j) const { return j - i >= lo && j - i <= hi; }
  bool bounded() const { return lo > -k_unbounded || hi < k_unbounded; }
};
Band band_of(const SdpaShape& shape);
// How many (query, key) pairs the mask keeps: the work of one head.
std::int64_t kept_pairs(const SdpaShape& shape);

// From the cudnn_sdpa / te_selector arguments (sdpa_args()); invalid names the bad member.
util::Result<SdpaShape> parse_shape(const Json& args);

// A [batch, heads, seq, dim] view: dims and strides in elements, into buffer at offset.
struct TensorView {
  int buffer = 0;
  std::int64_t offset = 0;
  std::array<std::int64_t, 4> dims{};
  std::array<std::int64_t, 4> strides{};
};

struct SdpaLayout {
  std::vector<std::int64_t> buffer_elements; // Q/K/V buffers, then O's
  TensorView q, k, v, o;
};

// The views of a layout, or unsupported (thd, paged) / invalid (sbh3d with GQA or unequal dims).
util::Result<SdpaLayout> make_layout(const SdpaShape& shape);

std::uint16_t to_half(float f);
float from_half(std::uint16_t h);
std::uint16_t to_bfloat16(float f);
float from_bfloat16(std::uint16_t b);

// The value of element index of the input seeded seed: k / 256 for a k in [-256, 256) from a
// counter-based hash, exact in bf16 and fp16 (the GPU fills its buffers with the same function).
float input_value(std::uint64_t seed, std::uint64_t index);
// Seeds of the inputs: buffer i of the layout (Q, K, V, or packed) and dO.
inline constexpr std::uint64_t k_seed_inputs = 0x5eed0000, k_seed_d_o = 0x5eed00d0;

// Fills the Q/K/V buffers with input_value(k_seed_inputs + buffer, index), stored as fp16/bf16.
std::vector<std::vector<std::uint16_t>> make_inputs(const SdpaShape& shape, const SdpaLayout& layout);

// softmax(scale * Q K^T (masked to the band)) V in fp32 for one (batch, head): [seq_q][dim_v].
std::vector<float> reference_head(const SdpaShape& shape, const SdpaLayout& layout,
                                  const std::vector<std::vector<std::uint16_t>>& buffers, std::int64_t b, std::int64_t h);

struct Comparison {
  double max_abs_err = 0;
  double max_rel_err = 0; // max_abs_err over the largest |reference| value
  double atol = 0, rtol = 0;
  bool ok = true;
  std::string worst; // "b0 h3 s17 d5: got 0.1, want 0.2"
};

// Compares the O buffer with the reference for up to 4 (batch, head) pairs spread over the
// tensor, with TE's test tolerances (bf16 2.5e-2, fp16 5e-3, absolute and relative).
Comparison compare_output(const SdpaShape& shape, const SdpaLayout& layout,
                          const std::vector<std::vector<std::uint16_t>>& buffers, const std::vector<std::uint16_t>& o);

// The backward on the host for the (batch, kv-group) pairs compare_output samples: every query
// head of the group, given dO (same views as the gradients); errors are normalised by the
// largest reference value of each gradient. Views of dO/dQ/dK/dV index grads (buffers 0..3).
struct GradComparison {
  double max_abs_err = 0; // over dQ, dK, dV
  double max_rel_err = 0; // the largest of max |diff| / max |reference| per gradient
  double tolerance = 0;   // on max_rel_err: 2x the forward's
  bool ok = true;
  std::string worst;
};
GradComparison compare_gradients(const SdpaShape& shape, const SdpaLayout& layout,
                                 const std::vector<std::vector<std::uint16_t>>& buffers, const TensorView& d_o,
                                 const TensorView& dq, const TensorView& dk, const TensorView& dv,
                                 const std::vector<std::vector<std::uint16_t>>& grads);

} // namespace selftest
