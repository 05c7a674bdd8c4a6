// TransformerEngine's C library (libtransformer_engine.so): its fused-attention backend selector,
// nvte_get_fused_attn_backend, bound per TE release.
//
// The signature changed across releases (transformer_engine/common/include/transformer_engine/
// fused_attn.h at each tag): v1.10-v2.4 take (q_dtype, kv_dtype, qkv_layout, bias_type,
// attn_mask_type, dropout, num_attn_heads, num_gqa_groups, max_seqlen_q, max_seqlen_kv,
// head_dim_qk, head_dim_v, window_size_left, window_size_right); v2.5 prepends bool is_training;
// v2.8 adds NVTE_Softmax_Type softmax_type after attn_mask_type; v2.9 appends bool
// return_max_logit; v2.10 bool cuda_graph; v2.12 bool deterministic (unchanged to v2.18).
// NVTEDType renumbered in v2.4 (kNVTEInt16 inserted: Float16 4 -> 5, BFloat16 5 -> 6); the layout,
// bias, mask and backend enums kept their values. Versions outside v1.10-v2.18 are refused rather
// than called with a guessed signature.
#pragma once

#include "gpuapi/loader.hpp"
#include "util/result.hpp"

#include <cstdint>
#include <string>

namespace gpuapi {

// The inputs, in TE's own enum numbering (fused_attn.h).
struct TeFusedAttnQuery {
  bool is_training = true;
  bool bf16 = true;          // else fp16
  int qkv_layout = 9;        // NVTE_QKV_Layout: 1 sbh3d, 4 sbhd_sbhd_sbhd, 6 bsh3d, 9 bshd_bshd_bshd, ...
  int bias_type = 0;         // NVTE_NO_BIAS
  int attn_mask_type = 0;    // NVTE_NO_MASK 0, NVTE_CAUSAL_MASK 2, ...
  int softmax_type = 0;      // NVTE_VANILLA_SOFTMAX
  float dropout = 0;
  std::size_t num_heads = 16, num_gqa_groups = 16, max_seqlen_q = 128, max_seqlen_kv = 128, head_dim_qk = 64,
              head_dim_v = 64;
  std::int64_t window_left = -1, window_right = -1;
  bool return_max_logit = false, cuda_graph = false, deterministic = false;
};

// Which signature a TE version uses, or unsupported naming the version and the known range.
util::Result<int> te_selector_abi(int major, int minor);

// Calls nvte_get_fused_attn_backend of library (a loaded libtransformer_engine.so) for TE
// major.minor. Returns NVTE_Fused_Attn_Backend: -1 none, 0 F16_max512_seqlen, 1
// F16_arbitrary_seqlen, 2 FP8. TE aborts the process on internal errors: call it in a child.
util::Result<int> te_get_fused_attn_backend(const util::DlLibrary& library, int major, int minor,
                                            const TeFusedAttnQuery& query);

// "F16_arbitrary_seqlen" for 1, "none" for -1, ...
std::string te_backend_name(int backend);

} // namespace gpuapi
