#include "model/workload.hpp"

#include "model/dpa_inputs.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <cmath>

namespace model {

namespace {

using T = ValueType;

// One key per line, however long: a table to read down, not to wrap.
// clang-format off
const std::vector<WorkloadKeySpec> k_keys = {
    {"qkv_dtype", T::string, "bf16", {"bf16", "fp16", "fp8", "fp32"}, "data type of Q, K and V"},
    {"qkv_layout", T::string, "", {}, "memory layout of Q, K, V, e.g. bshd_bshd_bshd, sbh3d, thd_thd_thd (default: from qkv_format)"},
    {"qkv_format", T::string, "sbhd", {"bshd", "sbhd", "thd", "bhsd", "bshd_2sbhd", "sbhd_2bshd", "thd_2bshd", "thd_2sbhd"}, "format of Q, K, V (derived from qkv_layout when that is given; bhsd from TE 2.15)"},
    {"batch_size", T::integer, "1", {}, "batch size"},
    {"num_heads", T::integer, "16", {}, "attention heads of Q"},
    {"num_gqa_groups", T::integer, "", {}, "heads of K and V (default: num_heads)"},
    {"max_seqlen_q", T::integer, "128", {}, "maximum sequence length of Q"},
    {"max_seqlen_kv", T::integer, "", {}, "maximum sequence length of K and V (default: max_seqlen_q)"},
    {"head_dim_qk", T::integer, "64", {}, "head dimension of Q and K"},
    {"head_dim_v", T::integer, "", {}, "head dimension of V (default: head_dim_qk)"},
    {"attn_mask_type", T::string, "no_mask", {"no_mask", "padding", "causal", "padding_causal", "causal_bottom_right", "padding_causal_bottom_right", "arbitrary"}, "attention mask type"},
    {"window_size", T::string, "", {}, "sliding window LEFT,RIGHT; -1,-1 = none (default: -1,0 for causal masks, else -1,-1)"},
    {"window_size_left", T::integer, "", {}, "left window (derived from window_size)"},
    {"window_size_right", T::integer, "", {}, "right window (derived from window_size)"},
    {"bottom_right_diagonal", T::boolean, "true", {}, "sliding window / ALiBi aligned to the bottom-right corner"},
    {"alibi_slopes_shape", T::string, "", {}, "shape of alibi_slopes when given: nh or bnh"},
    {"core_attention_bias_type", T::string, "no_bias", {"no_bias", "pre_scale_bias", "post_scale_bias", "alibi"}, "attention bias type"},
    {"core_attention_bias_shape", T::string, "1hss", {"1hss", "b1ss", "bhss", "11ss", "111s"}, "attention bias shape"},
    {"core_attention_bias_requires_grad", T::boolean, "", {}, "the bias tensor needs a gradient (default: true for pre/post_scale_bias; false without a bias tensor, as DotProductAttention passes it)"},
    {"pad_between_seqs", T::boolean, "false", {}, "padding between sequences (thd)"},
    {"attention_dropout", T::number, "0.0", {}, "attention dropout probability"},
    {"context_parallel", T::boolean, "", {}, "context parallelism in use (default: cp_size > 1)"},
    {"cp_comm_type", T::string, "p2p", {"p2p", "all_gather", "a2a", "a2a+p2p"}, "context-parallel communication"},
    {"cp_size", T::integer, "1", {}, "context-parallel group size"},
    {"deterministic", T::boolean, "false", {}, "deterministic algorithms required (NVTE_ALLOW_NONDETERMINISTIC_ALGO=0)"},
    {"is_training", T::boolean, "true", {}, "training (forward and backward) rather than inference"},
    {"fp8", T::boolean, "false", {}, "inside an FP8 autocast region"},
    {"fp8_recipe", T::string, "delayed", {"delayed", "current", "mxfp8", "block", "nvfp4"}, "FP8 recipe"},
    {"fp8_dpa", T::boolean, "false", {}, "FP8 dot product attention (recipe.fp8_dpa)"},
    {"fp8_mha", T::boolean, "false", {}, "FP8 multi-head attention (recipe.fp8_mha)"},
    {"fp8_output", T::boolean, "false", {}, "output requested in FP8"},
    {"inference", T::boolean, "false", {}, "a KV cache is in use (inference_params given)"},
    {"kv_cache_paged", T::boolean, "false", {}, "the KV cache is paged"},
    {"softmax_type", T::string, "vanilla", {"vanilla", "off-by-one", "learnable"}, "softmax variant"},
    {"return_max_logit", T::boolean, "false", {}, "max logit returned"},
    {"cuda_graph", T::boolean, "false", {}, "captured in a CUDA graph"},
    {"num_splits", T::integer, "1", {}, "kernels attention is split into"},
    {"checkpoint_core_attention", T::boolean, "false", {}, "core attention recomputed in backward"},
    {"has_score_mod", T::boolean, "false", {}, "a score_mod callback is given"},
    {"attn_input_format", T::string, "", {"bshd", "sbhd", "thd"}, "TransformerLayer's attn_input_format argument"},
    {"input_shape", T::string, "", {}, "layout of the tensors actually fed to TransformerLayer: bsh or sbh"},
    {"qkv_interleaved", T::boolean, "false", {}, "QKV from fuse_qkv_params with qkv_weight_interleaved (non-contiguous views)"},
    {"api", T::string, "DotProductAttention", {"DotProductAttention", "FusedAttention", "FlashAttention", "TransformerLayer", "MultiheadAttention"}, "which TE module is called"},
    // What a model or its launcher asks of attention beyond AttentionParams, set by the importers
    // (HF config.json, Megatron-LM arguments) so that rules can say what TE does with it.
    {"attn_logit_softcapping", T::number, "0.0", {}, "attention logits soft-capped as cap * tanh(s / cap) before softmax (Gemma-2's attn_logit_softcapping); 0 = none"},
    {"attention_chunk_size", T::integer, "0", {}, "causal attention within chunks of this many tokens (Llama 4's attention_chunk_size); 0 = none"},
    {"attention_backend", T::string, "", {"auto", "flash", "fused", "unfused"}, "Megatron-LM's --attention-backend, whose NVTE_*_ATTN switches Megatron sets before TE selects (absent: not launched by Megatron)"},
    // Hugging Face's attn_implementation: whether TE is asked at all (te), never what it is asked.
    {"attn_implementation", T::string, "", {}, "Hugging Face attn_implementation the model is loaded with: te (NeMo AutoModel) runs TE's DotProductAttention; transformers' own (eager, sdpa, flash_attention_2, ...) never call TE (absent: not said)"},
};
// clang-format on

bool is_allowed(const WorkloadKeySpec& spec, const Value& value) {
  if (spec.allowed_values.empty() || !value.is(ValueType::string)) return true;
  for (auto allowed : spec.allowed_values) {
    if (allowed == value.as_string()) return true;
  }
  return false;
}

util::Error invalid(std::string message) { return util::Error{util::ErrorKind::invalid, std::move(message)}; }

} // namespace

std::span<const WorkloadKeySpec> workload_keys() { return k_keys; }

const WorkloadKeySpec* find_workload_key(std::string_view name) {
  for (const auto& spec : k_keys) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

const Value* Workload::get(std::string_view key) const {
  auto it = values.find(key);
  return it == values.end() ? nullptr : &it->second;
}

util::Result<void> Workload::set_text(std::string_view key, std::string_view text) {
  const WorkloadKeySpec* spec = find_workload_key(key);
  if (!spec) return invalid("unknown workload key '" + std::string(key) + "'");
  std::string normalized(util::trim(text));
  if (key == "qkv_dtype") {
    std::string t = util::to_lower(normalized);
    if (t == "bfloat16" || t == "torch.bfloat16") t = "bf16";
    if (t == "float16" || t == "half" || t == "torch.float16") t = "fp16";
    if (t == "float32" || t == "torch.float32") t = "fp32";
    if (t == "float8" || t == "fp8_e4m3" || t == "e4m3") t = "fp8";
    normalized = t;
  }
  auto value = Value::parse_as(spec->type, normalized);
  if (!value) return invalid("workload key " + std::string(key) + ": " + value.error().message);
  if (!is_allowed(*spec, *value)) {
    std::vector<std::string> allowed(spec->allowed_values.begin(), spec->allowed_values.end());
    return invalid("workload key " + std::string(key) + ": unknown value '" + normalized + "' (one of " +
                   util::join(allowed, ", ") + ")");
  }
  if (key == "window_size") {
    auto parts = util::split(normalized, ',');
    auto left = parts.size() == 2 ? util::parse_int(util::trim(parts[0])) : std::nullopt;
    auto right = parts.size() == 2 ? util::parse_int(util::trim(parts[1])) : std::nullopt;
    if (!left || !right || *left < -1 || *right < -1)
      return invalid("workload key window_size: '" + normalized + "' is not LEFT,RIGHT (e.g. -1,-1 or 128,0)");
    values.insert_or_assign("window_size_left", Value(*left));
    values.insert_or_assign("window_size_right", Value(*right));
    normalized = std::to_string(*left) + "," + std::to_string(*right);
    value = Value(normalized);
  }
  values.insert_or_assign(std::string(key), std::move(*value));
  return {};
}

util::Result<void> Workload::complete() {
  auto assume = [&](std::string_view key, Value value) {
    if (values.count(key)) return;
    values.insert_or_assign(std::string(key), std::move(value));
    assumed.emplace_back(key);
  };
  // The format follows the layout when one is given; a layout follows the format otherwise.
  if (const Value* layout = get("qkv_layout"); layout && !values.count("qkv_format"))
    values.insert_or_assign("qkv_format", Value(qkv_format_of_layout(layout->as_string())));
  assume("qkv_dtype", Value("bf16"));
  // FP8 tensors imply FP8 attention; before the defaults would say otherwise.
  if (get("qkv_dtype")->as_string() == "fp8") {
    assume("fp8", Value(true));
    assume("fp8_dpa", Value(true));
  }
  for (const auto& spec : k_keys) {
    if (spec.default_text.empty() || values.count(spec.name)) continue;
    assume(spec.name, *Value::parse_as(spec.type, spec.default_text));
  }
  if (!values.count("qkv_layout")) {
    std::string format = get("qkv_format")->as_string();
    std::string layout = format == "thd" ? "thd_thd_thd" : format + "_" + format + "_" + format;
    assume("qkv_layout", Value(layout));
  }
  assume("num_gqa_groups", *get("num_heads"));
  assume("max_seqlen_kv", *get("max_seqlen_q"));
  assume("head_dim_v", *get("head_dim_qk"));
  assume("context_parallel", Value(get("cp_size")->as_int() > 1));
  {
    // DotProductAttention passes the bias tensor's requires_grad, and False when there is no
    // tensor (no_bias, ALiBi).
    std::string bias = get("core_attention_bias_type")->as_string();
    assume("core_attention_bias_requires_grad", Value(bias == "pre_scale_bias" || bias == "post_scale_bias"));
  }
  if (!values.count("window_size")) {
    std::string mask = get("attn_mask_type")->as_string();
    bool causal = mask.find("causal") != std::string::npos;
    values.insert_or_assign("window_size", Value(causal ? "-1,0" : "-1,-1"));
    values.insert_or_assign("window_size_left", Value(-1));
    values.insert_or_assign("window_size_right", Value(causal ? 0 : -1));
  }

  for (std::string_view key : {"batch_size", "num_heads", "num_gqa_groups", "max_seqlen_q", "max_seqlen_kv",
                               "head_dim_qk", "head_dim_v", "cp_size", "num_splits"}) {
    if (get(key)->as_int() <= 0)
      return invalid("workload key " + std::string(key) + ": must be positive, got " + get(key)->to_string());
  }
  auto heads = get("num_heads")->as_int();
  auto groups = get("num_gqa_groups")->as_int();
  if (heads % groups != 0)
    return invalid("num_heads (" + std::to_string(heads) + ") is not divisible by num_gqa_groups (" +
                   std::to_string(groups) + ")");
  // Written so that NaN fails too: it fails every comparison (audit 2026-12-01 item 21).
  double dropout = get("attention_dropout")->as_double();
  if (!(dropout >= 0.0 && dropout < 1.0))
    return invalid("workload key attention_dropout: must be in [0, 1), got " + get("attention_dropout")->to_string());
  for (const auto& spec : k_keys) {
    const Value* v = spec.type == ValueType::number ? get(spec.name) : nullptr;
    if (v && v->is(ValueType::number) && !std::isfinite(v->as_double()))
      return invalid("workload key " + std::string(spec.name) + ": must be a finite number, got " + v->to_string());
  }
  for (const auto& spec : k_keys) {
    if (const Value* v = get(spec.name); v && !is_allowed(spec, *v))
      return invalid("workload key " + std::string(spec.name) + ": unknown value '" + v->to_string() + "'");
  }
  align_diagonal_to_mask(*this, get("attn_mask_type")->as_string(), false);
  return {};
}

void Workload::to_facts(Facts& facts) const {
  for (const auto& [key, value] : values) facts.set("workload." + key, value);
}

} // namespace model
