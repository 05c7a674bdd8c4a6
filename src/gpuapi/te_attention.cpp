#include "gpuapi/te_attention.hpp"

namespace gpuapi {

namespace {

using Sz = std::size_t;
using I64 = std::int64_t;
// The six signatures, in release order.
using AbiA = int (*)(int, int, int, int, int, float, Sz, Sz, Sz, Sz, Sz, Sz, I64, I64);
using AbiB = int (*)(bool, int, int, int, int, int, float, Sz, Sz, Sz, Sz, Sz, Sz, I64, I64);
using AbiC = int (*)(bool, int, int, int, int, int, int, float, Sz, Sz, Sz, Sz, Sz, Sz, I64, I64);
using AbiD = int (*)(bool, int, int, int, int, int, int, float, Sz, Sz, Sz, Sz, Sz, Sz, I64, I64, bool);
using AbiE = int (*)(bool, int, int, int, int, int, int, float, Sz, Sz, Sz, Sz, Sz, Sz, I64, I64, bool, bool);
using AbiF = int (*)(bool, int, int, int, int, int, int, float, Sz, Sz, Sz, Sz, Sz, Sz, I64, I64, bool, bool, bool);

} // namespace

util::Result<int> te_selector_abi(int major, int minor) {
  int v = major * 100 + minor;
  if (v >= 110 && v <= 204) return 0;
  if (v >= 205 && v <= 207) return 1;
  if (v == 208) return 2;
  if (v == 209) return 3;
  if (v >= 210 && v <= 211) return 4;
  if (v >= 212 && v <= 218) return 5;
  return util::make_error(util::ErrorKind::unsupported,
                          "TE " + std::to_string(major) + "." + std::to_string(minor) +
                              ": nvte_get_fused_attn_backend's signature is known for TE 1.10 to 2.18 only");
}

util::Result<int> te_get_fused_attn_backend(const util::DlLibrary& library, int major, int minor,
                                            const TeFusedAttnQuery& q) {
  int abi = NVTE_TRY(te_selector_abi(major, minor));
  void* address = NVTE_TRY(library.symbol("nvte_get_fused_attn_backend"));
  // NVTEDType: Float16/BFloat16 are 4/5 before v2.4, 5/6 since.
  bool renumbered = major * 100 + minor >= 204;
  int dtype = (q.bf16 ? 5 : 4) + (renumbered ? 1 : 0);
  switch (abi) {
  case 0:
    return util::function_cast<AbiA>(address)(dtype, dtype, q.qkv_layout, q.bias_type, q.attn_mask_type, q.dropout,
                                              q.num_heads, q.num_gqa_groups, q.max_seqlen_q, q.max_seqlen_kv,
                                              q.head_dim_qk, q.head_dim_v, q.window_left, q.window_right);
  case 1:
    return util::function_cast<AbiB>(address)(q.is_training, dtype, dtype, q.qkv_layout, q.bias_type, q.attn_mask_type,
                                              q.dropout, q.num_heads, q.num_gqa_groups, q.max_seqlen_q,
                                              q.max_seqlen_kv, q.head_dim_qk, q.head_dim_v, q.window_left,
                                              q.window_right);
  case 2:
    return util::function_cast<AbiC>(address)(q.is_training, dtype, dtype, q.qkv_layout, q.bias_type, q.attn_mask_type,
                                              q.softmax_type, q.dropout, q.num_heads, q.num_gqa_groups,
                                              q.max_seqlen_q, q.max_seqlen_kv, q.head_dim_qk, q.head_dim_v,
                                              q.window_left, q.window_right);
  case 3:
    return util::function_cast<AbiD>(address)(q.is_training, dtype, dtype, q.qkv_layout, q.bias_type, q.attn_mask_type,
                                              q.softmax_type, q.dropout, q.num_heads, q.num_gqa_groups,
                                              q.max_seqlen_q, q.max_seqlen_kv, q.head_dim_qk, q.head_dim_v,
                                              q.window_left, q.window_right, q.return_max_logit);
  case 4:
    return util::function_cast<AbiE>(address)(q.is_training, dtype, dtype, q.qkv_layout, q.bias_type, q.attn_mask_type,
                                              q.softmax_type, q.dropout, q.num_heads, q.num_gqa_groups,
                                              q.max_seqlen_q, q.max_seqlen_kv, q.head_dim_qk, q.head_dim_v,
                                              q.window_left, q.window_right, q.return_max_logit, q.cuda_graph);
  default:
    return util::function_cast<AbiF>(address)(q.is_training, dtype, dtype, q.qkv_layout, q.bias_type, q.attn_mask_type,
                                              q.softmax_type, q.dropout, q.num_heads, q.num_gqa_groups,
                                              q.max_seqlen_q, q.max_seqlen_kv, q.head_dim_qk, q.head_dim_v,
                                              q.window_left, q.window_right, q.return_max_logit, q.cuda_graph,
                                              q.deterministic);
  }
}

std::string te_backend_name(int backend) {
  switch (backend) {
  case -1: return "none";
  case 0: return "F16_max512_seqlen";
  case 1: return "F16_arbitrary_seqlen";
  case 2: return "FP8";
  default: return "unknown(" + std::to_string(backend) + ")";
  }
}

} // namespace gpuapi
