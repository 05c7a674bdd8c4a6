// The SDPA forward graph through cuDNN's backend API, as the composite cuDNN fuses into its
// flash-attention engine (the graph cudnn-frontend's sdpa node lowers to, and TE's
// fused_attn_f16_arbitrary_seqlen built by hand before it): S = Q K^T (fp32) -> S * scale ->
// [causal: GEN_INDEX rows and columns (int32), row >= column (bool), BINARY_SELECT(S, -inf)] ->
// softmax as MAX reduction, SUB, EXP, ADD reduction, DIV, with the training statistics
// max + log(sum) written out -> P in the input dtype -> O = P V. K is read through transposed
// strides, GQA through K/V descriptors with fewer heads than Q.
#pragma once

#include "gpuapi/cudnn.hpp"
#include "selftest/sdpa.hpp"

#include <memory>
#include <string>
#include <vector>

namespace selftest {

// Unique ids of the graph's real tensors (the variant pack binds pointers to them).
inline constexpr std::int64_t k_uid_q = 1, k_uid_k = 2, k_uid_v = 3, k_uid_o = 4, k_uid_stats = 5, k_uid_scale = 6,
                              k_uid_neg_inf = 7, k_uid_do = 8, k_uid_dq = 9, k_uid_dk = 10, k_uid_dv = 11,
                              k_uid_softmax_sum = 12, k_uid_dq_accum = 13, k_uid_one = 14;

// Where the backward graph's gradients go: dO, dQ, dK, dV as separate tensors in the format of
// O (bshd or sbhd), whatever the input layout.
struct SdpaGradLayout {
  TensorView d_o, dq, dk, dv;
  std::vector<std::int64_t> buffer_elements; // dO, dQ, dK, dV
};
SdpaGradLayout make_grad_layout(const SdpaShape& shape, const SdpaLayout& layout);

// The distinct reasons in cuDNN's last-error text for rejected engine configurations, joined by
// "; " (the text itself, shortened, when it has none).
std::string cudnn_reasons(const std::string& text);

// Owns the descriptors of one graph.
class SdpaGraph {
public:
  explicit SdpaGraph(const gpuapi::Cudnn& cudnn) : m_cudnn(cudnn) {}
  ~SdpaGraph();
  SdpaGraph(const SdpaGraph&) = delete;
  SdpaGraph& operator=(const SdpaGraph&) = delete;

  // Creates and finalizes every tensor and operation descriptor of the forward graph (no
  // handle, no GPU needed). The error is cuDNN's text for the first call that failed.
  util::Result<void> build_operations(const SdpaShape& shape, const SdpaLayout& layout);
  // The backward graph (the composite cudnn-frontend's sdpa backward node lowers to): softmax
  // sum rowsum(dO * O) into a float workspace; S = scale * Q K^T - stats, masked, P = exp(S);
  // dV = P^T dO; dP = dO V^T; dS = P (dP - sum) scale; dK = dS^T Q; dQ = dS K through a float
  // accumulator and an identity; with GQA, dK/dV per query head reduced over each group.
  // cuDNN recognises the fused attention engines' graphs by their shape, operation by operation
  // (in this order, with these data types), and rejects an equivalent graph that differs.
  util::Result<void> build_backward_operations(const SdpaShape& shape, const SdpaLayout& layout, const SdpaGradLayout& grads);
  // The operation graph (needs a handle, so a GPU), the heuristics' engine configs, and the
  // first execution plan that finalizes. Returns the workspace size.
  util::Result<std::int64_t> build_plan(gpuapi::CudnnHandle handle);
  gpuapi::CudnnDescriptor plan() const { return m_plan; }
  std::size_t operation_count() const { return m_operations.size(); }
  int engine_configs_tried() const { return m_configs_tried; }

private:
  util::Result<gpuapi::CudnnDescriptor> create(int type);
  util::Result<void> set(gpuapi::CudnnDescriptor d, int attribute, int type, std::int64_t count, const void* value);
  util::Result<void> finalize(gpuapi::CudnnDescriptor d, const char* what);
  util::Result<gpuapi::CudnnDescriptor> tensor(std::int64_t uid, int dtype, std::array<std::int64_t, 4> dims,
                                               std::array<std::int64_t, 4> strides, bool is_virtual, bool by_value = false);
  util::Result<gpuapi::CudnnDescriptor> pointwise(int mode, int precision, gpuapi::CudnnDescriptor x, gpuapi::CudnnDescriptor b,
                                                  gpuapi::CudnnDescriptor y, gpuapi::CudnnDescriptor t = nullptr,
                                                  std::int64_t axis = -1);
  util::Result<void> reduction(int op, gpuapi::CudnnDescriptor x, gpuapi::CudnnDescriptor y);
  util::Result<void> matmul(gpuapi::CudnnDescriptor a, gpuapi::CudnnDescriptor b, gpuapi::CudnnDescriptor c);
  util::Result<void> reshape(gpuapi::CudnnDescriptor x, gpuapi::CudnnDescriptor y);
  util::Result<void> check_api() const;
  util::Result<gpuapi::CudnnDescriptor> scaled_scores(gpuapi::CudnnDescriptor q, gpuapi::CudnnDescriptor kt,
                                                      gpuapi::CudnnDescriptor scale, const std::array<std::int64_t, 4>& dims,
                                                      const std::array<std::int64_t, 4>& strides);
  util::Result<gpuapi::CudnnDescriptor> causal_mask(gpuapi::CudnnDescriptor scores, const std::array<std::int64_t, 4>& dims,
                                                    const std::array<std::int64_t, 4>& strides);

  const gpuapi::Cudnn& m_cudnn;
  std::vector<gpuapi::CudnnDescriptor> m_owned;      // destroyed in reverse order
  std::vector<gpuapi::CudnnDescriptor> m_operations; // in graph order
  gpuapi::CudnnDescriptor m_graph = nullptr;
  gpuapi::CudnnDescriptor m_plan = nullptr;
  std::int64_t m_next_virtual = 100;
  int m_configs_tried = 0;
};

} // namespace selftest
