// The SDPA forward graph through cuDNN's backend API, as the composite cuDNN fuses into its
// flash-attention engine (the graph cudnn-frontend's sdpa node lowers to, and TE's
// fused_attn_f16_arbitrary_seqlen built by hand before it): S = Q K^T (fp32) -> S * scale ->
// [causal, or a window's right bound: GEN_INDEX rows and columns (int32), row (+ right) >= column
// (bool), BINARY_SELECT(S, -inf)] -> [a sliding window's left bound: GEN_INDEX (float), column +
// left + 1 > row, BINARY_SELECT] -> softmax as MAX reduction, SUB, EXP, ADD reduction, DIV, with
// the training statistics max + log(sum) written out -> P in the input dtype -> O = P V. K is
// read through transposed strides, GQA through K/V descriptors with fewer heads than Q. The
// masks follow cudnn-frontend's composite lowering for cuDNN before 9.21 (attn_score_modifiers.h:
// right bound first, then the left bound with TE's window_size_left + 1).
#pragma once

#include "gpuapi/cudnn.hpp"
#include "selftest/kernel_cache.hpp"
#include "selftest/sdpa.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace selftest {

// Unique ids of the graph's real tensors (the variant pack binds pointers to them).
inline constexpr std::int64_t k_uid_q = 1, k_uid_k = 2, k_uid_v = 3, k_uid_o = 4, k_uid_stats = 5, k_uid_scale = 6,
                              k_uid_neg_inf = 7, k_uid_do = 8, k_uid_dq = 9, k_uid_dk = 10, k_uid_dv = 11,
                              k_uid_softmax_sum = 12, k_uid_dq_accum = 13, k_uid_one = 14, k_uid_left_bound = 15,
                              k_uid_window_neg_inf = 16, k_uid_right_shift = 17;

// The by-value scalars a graph's masks read, bound in the variant pack by uid.
struct MaskScalars {
  float neg_inf = 0;          // k_uid_neg_inf and k_uid_window_neg_inf
  float left_bound = 0;       // window_left + 1
  std::int32_t right_shift = 0; // window_right without a causal mask
};

// The engine behind an execution plan: cuDNN's global engine index and whether it compiles its
// kernels at plan time (NVRTC; CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION).
struct EngineInfo {
  std::int64_t index = -1;
  bool runtime_compiled = false;
};

// What cuDNN answers when asked whether it supports a graph, without building a plan: the
// operation graph finalizes and heuristics mode A (the mode TE's cudnn-frontend asks) returns at
// least one engine configuration, which is what cudnn-frontend's check_support answers with
// cuDNN 9.2 and later (it also bars configurations over its shared-memory and workspace limits,
// which TE leaves unlimited). TE 2.20 decides FusedAttention with it (TE PR #2964). No kernel
// runs and nothing is compiled.
struct SupportAnswer {
  bool supported = false;
  std::int64_t configs = 0; // engine configurations heuristics mode A returned
  std::string reason;       // cuDNN's reason when not supported
};

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

// What a cuDNN plan's compiled kernels depend on beyond the graph and the engine configuration.
struct PlanKeyInputs {
  std::string shape;       // SdpaShape::label()
  std::string cudnn_files; // libraries_identity of the cuDNN loaded and its sub-libraries
  std::size_t cudnn_version = 0, cudart_version = 0;
  std::string nvrtc; // nvrtc_identity: the compiler of runtime-compiled engines
  int driver_version = 0;
  std::string driver_files; // libraries_identity of libcuda
  std::string gpu_name;
  int sm = 0;
  std::string gpu_uuid; // "" when the driver cannot say
};
CacheKey plan_key(const PlanKeyInputs& inputs);
// One configuration's key: base (plan_key), the graph's description and the configuration.
CacheKey plan_config_key(CacheKey base, std::string_view graph_description, std::string_view engine_config);

// Where build_plan keeps the plans it compiles and finds those of earlier runs
// (kernel_cache.hpp). key holds what a plan depends on beyond the graph and its engine
// configuration (which build_plan adds): the libraries, the driver, the GPU.
struct PlanKeeping {
  const KernelCache* cache = nullptr;
  CacheKey key;
};

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
  // cuDNN's support answer for the graph (needs a handle, so a GPU; no plan is built). Fails only
  // when a descriptor cannot be made; a refusal is an answer with its reason.
  util::Result<SupportAnswer> check_support(gpuapi::CudnnHandle handle);
  // The operation graph (needs a handle, so a GPU), the heuristics' engine configs, and the
  // first execution plan that finalizes, in cuDNN's order (what TE's cudnn-frontend takes, so
  // that the kernel checked is the one a job runs; on the H100 heuristics mode A lists only
  // runtime-compiled engines for these graphs). Returns the workspace size. With keeping, each
  // configuration's plan is first looked up in the cache (its key: keeping's, the graph's
  // description and the configuration's engine and knobs) and rebuilt from its JSON
  // representation; only when that fails is it compiled, and then kept (plan_kept() says which).
  util::Result<std::int64_t> build_plan(gpuapi::CudnnHandle handle, const PlanKeeping* keeping = nullptr);
  // Where the plan came from, when build_plan was given a cache and a plan was made.
  const std::optional<KeptArtifact>& plan_kept() const { return m_kept; }
  // Every descriptor of the graph's tensors and operations with each attribute set on it, in
  // the order they were made (descriptors by their number, not their address): what decides
  // the kernels cuDNN compiles for the graph. Complete once the operations are built.
  const std::string& description() const { return m_description; }
  // "engine 6 runtime-compiled knobs 3=1,13=0": an engine configuration's engine and knob choices.
  std::string config_identity(gpuapi::CudnnDescriptor config);
  gpuapi::CudnnDescriptor plan() const { return m_plan; }
  std::size_t operation_count() const { return m_operations.size(); }
  int engine_configs_tried() const { return m_configs_tried; }
  const EngineInfo& engine() const { return m_engine; }
  // The configurations of the heuristics mode the plan came from, in cuDNN's order.
  const std::vector<EngineInfo>& candidates() const { return m_candidates; }
  const std::string& heuristics_mode() const { return m_mode; }
  // Appends the uids and pointers of the by-value scalars the masks use.
  void bind_scalars(const MaskScalars& values, std::vector<std::int64_t>& uids, std::vector<void*>& pointers) const;

private:
  // One heuristics mode's answer, asked once per graph (check_support and build_plan share it).
  struct ModeConfigs {
    bool asked = false;        // the heuristics descriptor finalized
    std::int64_t count = 0;    // configurations the heuristics listed
    std::int64_t returned = 0; // of them, those that passed cuDNN's support checks
    std::vector<gpuapi::CudnnDescriptor> configs;
    std::string error; // why none (or fewer) came back
  };
  util::Result<void> build_graph(gpuapi::CudnnHandle handle);
  util::Result<ModeConfigs> heuristics(int mode);
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
  util::Result<gpuapi::CudnnDescriptor> mask(const SdpaShape& shape, gpuapi::CudnnDescriptor scores,
                                             const std::array<std::int64_t, 4>& dims, const std::array<std::int64_t, 4>& strides);
  EngineInfo engine_of(gpuapi::CudnnDescriptor config);
  // A plan for config, finalized (cuDNN compiles a runtime-compiled engine's kernels here).
  util::Result<gpuapi::CudnnDescriptor> finalize_plan(gpuapi::CudnnHandle handle, gpuapi::CudnnDescriptor config);
  // A plan rebuilt from its JSON representation, refused unless its engine is expected_engine.
  util::Result<gpuapi::CudnnDescriptor> restore_plan(gpuapi::CudnnHandle handle, std::string_view json, std::int64_t expected_engine);
  // The JSON representation of a finalized plan (cuDNN serializes runtime-compiled engines' plans).
  util::Result<std::string> plan_json(gpuapi::CudnnDescriptor plan);
  // Appends one descriptor call to the description while the operations are being built.
  void describe(char what, gpuapi::CudnnDescriptor d, int attribute = 0, int type = 0, std::int64_t count = 0, const void* value = nullptr);

  const gpuapi::Cudnn& m_cudnn;
  std::vector<gpuapi::CudnnDescriptor> m_owned;      // destroyed in reverse order
  std::vector<gpuapi::CudnnDescriptor> m_operations; // in graph order
  gpuapi::CudnnDescriptor m_graph = nullptr;
  gpuapi::CudnnDescriptor m_plan = nullptr;
  std::int64_t m_next_virtual = 100;
  int m_configs_tried = 0;
  std::vector<std::int64_t> m_scalar_uids; // by-value mask scalars in the graph
  EngineInfo m_engine;
  std::vector<EngineInfo> m_candidates;
  std::string m_mode;
  std::map<int, ModeConfigs> m_heuristics;
  std::string m_description;
  std::unordered_map<gpuapi::CudnnDescriptor, std::size_t> m_numbers; // descriptor -> its number in the description
  std::optional<KeptArtifact> m_kept;
};

} // namespace selftest
