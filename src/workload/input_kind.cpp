// Markers, not parsers: each is a string the kind's own format always or nearly always has, and
// that the others do not (TE writes "[DotProductAttention]" on every debug line; Hugging Face
// configs name "model_type" or "architectures"; Megatron-LM's flags are dashed, its recipes'
// keys are num_attention_heads / seq_length; workload files use TE's AttentionParams names).
#include "workload/input_kind.hpp"

#include <algorithm>
#include <initializer_list>

namespace workload {

namespace {

constexpr std::size_t k_sniff_bytes = 64 * 1024;

bool has_any(std::string_view text, std::initializer_list<std::string_view> markers) {
  return std::any_of(markers.begin(), markers.end(), [&](std::string_view m) { return text.find(m) != std::string_view::npos; });
}

} // namespace

InputKind sniff_input_kind(std::string_view text) {
  text = text.substr(0, k_sniff_bytes);
  if (has_any(text, {"| DotProductAttention]", "[DotProductAttention]", "Available backends = {", "Selected backend = "}))
    return InputKind::te_log;
  auto first = text.find_first_not_of(" \t\r\n");
  bool json_object = first != std::string_view::npos && text[first] == '{';
  if (json_object && has_any(text, {"\"model_type\"", "\"architectures\"", "\"num_key_value_heads\"", "\"max_position_embeddings\""}))
    return InputKind::hf_config;
  if (has_any(text, {"--num-attention-heads", "--seq-length", "--hidden-size", "--num-query-groups", "pretrain_gpt.py"}))
    return InputKind::megatron_args;
  if (!json_object && has_any(text, {"num_attention_heads:", "seq_length:", "num_query_groups:", "_target_:"}))
    return InputKind::megatron_args;
  if (has_any(text, {"head_dim_qk", "qkv_dtype", "qkv_format", "qkv_layout", "max_seqlen_q", "attn_mask_type", "num_gqa_groups"}))
    return InputKind::workload;
  return InputKind::unknown;
}

std::string_view describe(InputKind kind) {
  switch (kind) {
  case InputKind::workload: return "an attention workload file";
  case InputKind::hf_config: return "a Hugging Face config.json";
  case InputKind::megatron_args: return "Megatron-LM arguments";
  case InputKind::te_log: return "TransformerEngine's debug log";
  case InputKind::unknown: break;
  }
  return "an unknown kind of file";
}

std::string_view option_for(InputKind kind) {
  switch (kind) {
  case InputKind::workload: return "--workload";
  case InputKind::hf_config: return "--hf-config";
  case InputKind::megatron_args: return "--megatron-args";
  case InputKind::te_log: return "--te-log";
  case InputKind::unknown: break;
  }
  return "";
}

} // namespace workload
