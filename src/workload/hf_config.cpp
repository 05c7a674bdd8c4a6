// Hugging Face config.json -> attention workloads.
//
// A config.json describes a model in its family's own words (num_attention_heads or n_head,
// head_dim or d_kv, layer_types or sliding_window_pattern or hybrid_override_pattern ...). The
// importer reads the attention shape once (heads, KV heads, head dims, context length, dtype,
// dropout, position bias, softmax variant, soft-capping), then the layer plan: which layers
// attend globally, in a sliding window, in chunks, or not at all (Mamba, linear attention).
// Layers that attend alike are one variant and one workload. Each derivation is written into
// the workload's notes, so `explain` shows where every number came from; a layer kind the doctor
// does not know is an error rather than a guess.
#include "workload/hf_config.hpp"

#include "util/file.hpp"
#include "util/input_guard.hpp"
#include "workload/layer_limit.hpp"
#include "util/strings.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>

namespace workload {

namespace {

using Json = nlohmann::json;

util::Error invalid_config(std::string_view source, const std::string& message) {
  return util::Error{util::ErrorKind::invalid, std::string(source) + ": " + message};
}

util::Error parse_failure(std::string_view source, const std::string& message) {
  return util::Error{util::ErrorKind::parse, std::string(source) + message};
}

struct Found {
  std::int64_t value = 0;
  std::string key;
};

// The first of keys holding a whole number (configs write some counts as 4096.0).
std::optional<Found> find_int(const Json& j, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    if (it->is_number_integer()) return Found{it->get<std::int64_t>(), key};
    if (it->is_number_float()) {
      double d = it->get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::abs(d) < 9e15) return Found{static_cast<std::int64_t>(d), key};
    }
  }
  return std::nullopt;
}

std::optional<double> find_number(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::optional<std::string> find_string(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

bool is_true(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

bool one_of(std::string_view value, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), value) != set.end();
}

std::string str(std::int64_t v) { return std::to_string(v); }

std::string number_text(double v) {
  std::string text = std::to_string(v);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text += '0';
  return text;
}

// "source:line:column: " for a byte offset into text (nlohmann reports offsets, 1-based).
std::string at_offset(std::string_view text, std::string_view source, std::size_t byte) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::string(source) + ":" + str(static_cast<std::int64_t>(line)) + ":" + str(static_cast<std::int64_t>(column)) + ": ";
}

void assume(model::Workload& w, std::string_view key, std::string_view text) {
  if (w.get(key)) return;
  if (w.set_text(key, text)) w.assumed.emplace_back(key);
}

util::Result<void> set_int(model::Workload& w, std::string_view key, std::int64_t value) { return w.set_text(key, str(value)); }

// Families whose layers have no attention at all.
constexpr std::array<std::string_view, 9> k_attention_free = {"mamba", "mamba2", "falcon_mamba", "rwkv", "rwkv5",
                                                              "rwkv6", "rwkv7", "xlstm", "hyena"};
// Bidirectional encoders: every token attends to every other (no causal mask).
constexpr std::array<std::string_view, 14> k_text_encoders = {"bert", "roberta", "xlm-roberta", "camembert", "electra",
                                                              "distilbert", "albert", "mpnet", "deberta", "deberta-v2",
                                                              "modernbert", "nomic_bert", "ernie", "xlm-roberta-xl"};
// Vision transformers: a sequence of image patches, plus the class (and distillation) tokens.
constexpr std::array<std::string_view, 8> k_vision_encoders = {"vit", "deit", "beit", "dinov2", "vit_mae", "vit_msn",
                                                               "clip_vision_model", "siglip_vision_model"};
// Families that apply sliding_window to every layer whenever it is set.
constexpr std::array<std::string_view, 5> k_all_layers_windowed = {"mistral", "mixtral", "phi3", "phimoe", "starcoder2"};

template <std::size_t N>
bool in(const std::array<std::string_view, N>& set, std::string_view value) {
  return std::find(set.begin(), set.end(), value) != set.end();
}

// --- the attention shape --------------------------------------------------------------------

struct Shape {
  model::Workload workload;        // heads, head dims, seqlen, dtype, dropout, bias, softmax, softcap
  std::vector<std::string> notes;
  std::int64_t context = 0;        // the model's context window (max_position_embeddings), 0 unknown
  bool bidirectional = false;
};

util::Result<void> read_dtype(const Json& config, const Json& root, Shape& s, std::string_view source) {
  auto dtype = find_string(config, "torch_dtype");
  if (!dtype) dtype = find_string(config, "dtype");
  if (!dtype) dtype = find_string(root, "torch_dtype");
  if (!dtype) dtype = find_string(root, "dtype");
  model::Workload& w = s.workload;
  if (dtype) {
    if (auto set_dtype = w.set_text("qkv_dtype", *dtype); !set_dtype)
      return invalid_config(source, "torch_dtype: " + set_dtype.error().message);
    if (w.get("qkv_dtype")->as_string() == "fp32") {
      NVTE_TRY_VOID(w.set_text("qkv_dtype", "bf16"));
      w.assumed.emplace_back("qkv_dtype");
      s.notes.push_back("torch_dtype float32 is the storage type; attention assumed to run in bf16");
    }
  }
  assume(w, "qkv_dtype", "bf16");
  return {};
}

util::Result<void> read_dropout(const Json& config, const std::string& type, Shape& s) {
  std::optional<double> p;
  for (const char* key : {"attention_dropout", "attention_probs_dropout_prob", "attn_pdrop", "attn_dropout"}) {
    if ((p = find_number(config, key))) break;
  }
  if (!p && one_of(type, {"t5", "mt5", "umt5", "longt5"})) p = find_number(config, "dropout_rate");
  if (!p) {
    if (auto attn = config.find("attn_config"); attn != config.end() && attn->is_object()) p = find_number(*attn, "attn_pdrop");
  }
  if (p) NVTE_TRY_VOID(s.workload.set_text("attention_dropout", number_text(*p)));
  return {};
}

// The context window and the max_seqlen taken from it.
util::Result<void> read_seqlen(const Json& config, const std::string& type, const HfOptions& options, Shape& s,
                               std::string_view source) {
  model::Workload& w = s.workload;
  std::int64_t context = 0;
  if (auto image = find_int(config, {"image_size"}); image && in(k_vision_encoders, type)) {
    auto patch = find_int(config, {"patch_size"});
    if (!patch || patch->value <= 0) return invalid_config(source, "image_size without a positive patch_size");
    std::int64_t side = image->value / patch->value;
    std::int64_t extra = type == "siglip_vision_model" ? 0 : type == "deit" ? 2 : 1;
    context = side * side + extra;
    s.notes.push_back("sequence = (image_size / patch_size)^2 + " + str(extra) + " = (" + str(image->value) + " / " +
                      str(patch->value) + ")^2 + " + str(extra) + " = " + str(context) + " tokens" +
                      (extra == 2 ? " (class and distillation tokens)" : extra == 1 ? " (class token)" : ""));
  } else if (auto found = find_int(config, {"max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                                            "max_sequence_length", "n_ctx"});
             found && found->value > 0) {
    context = found->value;
    if (one_of(type, {"roberta", "xlm-roberta", "camembert", "xlm-roberta-xl"})) {
      // RoBERTa's positions start after the padding index: 514 positions hold 512 tokens.
      std::int64_t offset = find_int(config, {"pad_token_id"}).value_or(Found{1, ""}).value + 1;
      if (context > offset) {
        s.notes.push_back(found->key + " " + str(context) + " includes the " + str(offset) +
                          " positions RoBERTa reserves before the first token: " + str(context - offset) + " tokens");
        context -= offset;
      }
    }
  }
  s.context = context;
  std::int64_t seqlen = context;
  if (seqlen <= 0) {
    seqlen = 4096;
    w.assumed.emplace_back("max_seqlen_q");
    s.notes.push_back("the config names no context length; max_seqlen assumed 4096 (--workload-set max_seqlen_q=N)");
  } else if (options.max_seqlen_cap > 0 && seqlen > options.max_seqlen_cap) {
    seqlen = options.max_seqlen_cap;
    s.notes.push_back("max_position_embeddings is " + str(context) + "; max_seqlen taken as " + str(seqlen) +
                      ", a usual training length (--workload-set max_seqlen_q=" + str(context) + " to check the full context)");
  }
  NVTE_TRY_VOID(set_int(w, "max_seqlen_q", seqlen));
  NVTE_TRY_VOID(set_int(w, "max_seqlen_kv", seqlen));
  return {};
}

// Heads, KV heads and head dimensions (multi-head latent attention included).
util::Result<void> read_heads(const Json& config, const std::string& type, const std::vector<const char*>& head_keys,
                              Shape& s, std::string_view source) {
  model::Workload& w = s.workload;
  std::optional<Found> heads;
  for (const char* key : head_keys) {
    if ((heads = find_int(config, {key}))) break;
  }
  if (!heads || heads->value <= 0)
    return invalid_config(source, "no positive " + std::string(head_keys.front()) +
                                      "; is this a transformer's config.json? (attention-free models such as Mamba have none)");
  const std::int64_t h = heads->value;
  NVTE_TRY_VOID(set_int(w, "num_heads", h));

  auto nope = find_int(config, {"qk_nope_head_dim"});
  auto rope = find_int(config, {"qk_rope_head_dim"});
  auto v_dim = find_int(config, {"v_head_dim"});
  if (nope && rope && v_dim) {
    // Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): Q and K carry a part without and a
    // part with rotary position; V has its own width; K and V are expanded to every head.
    NVTE_TRY_VOID(set_int(w, "head_dim_qk", nope->value + rope->value));
    NVTE_TRY_VOID(set_int(w, "head_dim_v", v_dim->value));
    NVTE_TRY_VOID(set_int(w, "num_gqa_groups", h));
    s.notes.push_back("multi-head latent attention: head_dim_qk = qk_nope_head_dim + qk_rope_head_dim = " + str(nope->value) +
                      " + " + str(rope->value) + " = " + str(nope->value + rope->value) + ", head_dim_v = v_head_dim = " +
                      str(v_dim->value) + ", K and V expanded to all " + str(h) + " heads");
    return {};
  }

  if (auto kv = find_int(config, {"num_key_value_heads", "num_kv_heads", "n_head_kv"}); kv && kv->value > 0) {
    NVTE_TRY_VOID(set_int(w, "num_gqa_groups", kv->value));
  } else if (auto groups = find_int(config, {"multi_query_group_num"}); groups && is_true(config, "multi_query_attention")) {
    NVTE_TRY_VOID(set_int(w, "num_gqa_groups", groups->value));
  } else if (is_true(config, "multi_query")) {
    NVTE_TRY_VOID(set_int(w, "num_gqa_groups", 1));
    s.notes.push_back("multi_query: one K/V head shared by all " + str(h) + " query heads");
  } else {
    NVTE_TRY_VOID(set_int(w, "num_gqa_groups", h));
    s.notes.push_back("no num_key_value_heads: K and V have as many heads as Q (" + str(h) + ")");
  }

  auto hidden = find_int(config, {"hidden_size", "n_embd", "d_model", "dim"});
  std::int64_t dim = 0;
  const bool zamba = one_of(type, {"zamba", "zamba2"});
  // Zamba's kv_channels is hidden_size / heads; its shared attention block uses attention_head_dim.
  auto explicit_dim = zamba ? find_int(config, {"attention_head_dim"}) : find_int(config, {"head_dim", "attention_head_dim", "d_kv", "kv_channels"});
  if (explicit_dim && explicit_dim->value > 0) {
    dim = explicit_dim->value;
    if (hidden && hidden->value % h == 0 && hidden->value / h != dim)
      s.notes.push_back(explicit_dim->key + " " + str(dim) + " is given explicitly (" + hidden->key + " / " +
                        heads->key + " would be " + str(hidden->value / h) + ")");
  } else if (hidden && zamba) {
    // Zamba's shared attention block attends over the concatenated input and original embeddings.
    dim = 2 * hidden->value / h;
    s.notes.push_back("Zamba's shared attention runs on [hidden, original embeddings]: head_dim = 2 * " + hidden->key +
                      " / " + heads->key + " = " + str(dim));
  } else if (hidden) {
    if (hidden->value % h != 0)
      return invalid_config(source, hidden->key + " " + str(hidden->value) + " is not divisible by " + heads->key + " " + str(h));
    dim = hidden->value / h;
    s.notes.push_back("head_dim = " + hidden->key + " / " + heads->key + " = " + str(hidden->value) + " / " + str(h) +
                      " = " + str(dim));
  } else {
    return invalid_config(source, "neither head_dim nor hidden_size; cannot tell the head dimension");
  }
  NVTE_TRY_VOID(set_int(w, "head_dim_qk", dim));
  NVTE_TRY_VOID(set_int(w, "head_dim_v", dim));
  if (auto scalar = find_number(config, "query_pre_attn_scalar"); scalar && *scalar > 0 && std::abs(*scalar - static_cast<double>(dim)) > 1e-9)
    s.notes.push_back("query_pre_attn_scalar " + number_text(*scalar) + ": softmax scale 1/sqrt(" + number_text(*scalar) +
                      ") instead of 1/sqrt(" + str(dim) + "), which TE takes as softmax_scale");
  return {};
}

// Position bias, softmax variant and logit soft-capping: what the model does to the scores.
util::Result<void> read_score_features(const Json& config, const std::string& type, Shape& s) {
  model::Workload& w = s.workload;
  std::string alibi_key;
  if (type == "bloom") alibi_key = "model_type bloom";
  if (is_true(config, "alibi")) alibi_key = "alibi: true";
  if (auto attn = config.find("attn_config"); attn != config.end() && attn->is_object() && is_true(*attn, "alibi"))
    alibi_key = "attn_config.alibi: true";
  if (find_string(config, "position_embedding_type") == std::optional<std::string>("alibi")) alibi_key = "position_embedding_type alibi";
  if (!alibi_key.empty()) {
    NVTE_TRY_VOID(w.set_text("core_attention_bias_type", "alibi"));
    s.notes.push_back(alibi_key + ": ALiBi position bias, which TE applies as core_attention_bias_type=alibi");
  }
  if (type == "gpt_oss") {
    NVTE_TRY_VOID(w.set_text("softmax_type", "learnable"));
    s.notes.push_back("attention sinks (gpt-oss): a learned per-head logit joins the softmax's denominator, TE's softmax_type=\"learnable\"");
  }
  if (auto cap = find_number(config, "attn_logit_softcapping"); cap && *cap > 0) {
    NVTE_TRY_VOID(w.set_text("attn_logit_softcapping", number_text(*cap)));
    s.notes.push_back("attn_logit_softcapping " + number_text(*cap) + ": scores become " + number_text(*cap) + " * tanh(s / " +
                      number_text(*cap) + ") before the softmax");
  }
  // The attention implementation a config was saved with (some keep attn_implementation or
  // _attn_implementation): only NeMo AutoModel's "te" hands attention to TE; every value of
  // transformers' own runs it outside TE (the hf-attention-outside-te rule says so).
  for (const char* key : {"attn_implementation", "_attn_implementation"}) {
    auto impl = find_string(config, key);
    if (!impl || impl->empty()) continue;
    NVTE_TRY_VOID(w.set_text("attn_implementation", *impl));
    s.notes.push_back(std::string(key) + " " + *impl +
                      (*impl == "te" ? ": NeMo AutoModel runs this attention in TE's DotProductAttention"
                                     : ": transformers runs this attention itself, not in TE (load with NeMo AutoModel's "
                                       "attn_implementation=\"te\" for the verdict below to apply)"));
    break;
  }
  if (auto cap = find_number(config, "final_logit_softcapping"); cap && *cap > 0)
    s.notes.push_back("final_logit_softcapping " + number_text(*cap) + " caps the LM head's logits, not attention: nothing for TE's attention");
  return {};
}

// --- the layer plan -------------------------------------------------------------------------

enum class Kind { global, sliding, chunked, none };

struct Plan {
  std::vector<Kind> layers; // one per layer
  std::string none_is;      // what the layers without TE attention are ("Mamba", "linear attention")
  std::string from;         // the config keys that said so
  bool nominal = false;     // the layer count was not given: the pattern's first layers stand for all
};

util::Result<Kind> kind_of(const std::string& name, std::string_view source, std::size_t index, std::string& none_is) {
  if (one_of(name, {"full_attention", "attention", "global", "global_attention", "hybrid"})) return Kind::global;
  if (one_of(name, {"sliding_attention", "sliding", "local", "local_attention"})) return Kind::sliding;
  if (name == "chunked_attention") return Kind::chunked;
  if (one_of(name, {"linear_attention", "mamba", "mamba2", "conv", "ssm", "recurrent", "rwkv"})) {
    if (none_is.empty() || none_is == name) none_is = name;
    else if (none_is.find(name) == std::string::npos) none_is += " / " + name;
    return Kind::none;
  }
  return invalid_config(source, "layer " + str(static_cast<std::int64_t>(index)) + " is of kind '" + name +
                                    "', which the doctor does not know (full_attention, sliding_attention, chunked_attention, "
                                    "linear_attention, mamba, conv)");
}

// The plan holds one entry per layer: a count past k_max_layers is refused before it is built.
util::Result<void> bound_layers(std::string_view source, const std::string& key, std::size_t count) {
  if (count <= static_cast<std::size_t>(k_max_layers)) return {};
  return invalid_config(source, key + ": " + std::to_string(count) + " layers is more than any model has (limit " +
                                    std::to_string(k_max_layers) + ")");
}

util::Result<Plan> plan_from_list(const Json& list, const char* key, std::string_view source) {
  NVTE_TRY_VOID(bound_layers(source, key, list.size()));
  Plan plan;
  plan.from = key;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string())
      return invalid_config(source, std::string(key) + "[" + str(static_cast<std::int64_t>(i)) + "] is not a string");
    plan.layers.push_back(NVTE_TRY(kind_of(list[i].get<std::string>(), source, i, plan.none_is)));
  }
  return plan;
}

util::Result<Plan> hf_layer_plan(const Json& config, const std::string& type, bool has_window, std::string_view source) {
  Found given = find_int(config, {"num_hidden_layers", "n_layer", "n_layers", "num_layers"}).value_or(Found{});
  std::int64_t count = given.value;
  if (count > 0) NVTE_TRY_VOID(bound_layers(source, given.key, static_cast<std::size_t>(count)));
  Plan plan;
  if (count <= 0) {
    count = 12;
    plan.nominal = true;
  }
  auto each = [&](auto kind_at, std::string from) {
    plan.from = std::move(from);
    for (std::int64_t i = 0; i < count; ++i) plan.layers.push_back(kind_at(i));
    return plan;
  };

  if (auto list = config.find("layer_types"); list != config.end() && list->is_array() && !list->empty())
    return plan_from_list(*list, "layer_types", source);
  if (auto list = config.find("layers_block_type"); list != config.end() && list->is_array() && !list->empty())
    return plan_from_list(*list, "layers_block_type", source);
  if (auto pattern = find_string(config, "hybrid_override_pattern")) {
    // Nemotron-H: one character per layer, '*' attention, 'M' Mamba-2, '-' MLP, 'E' MoE.
    NVTE_TRY_VOID(bound_layers(source, "hybrid_override_pattern", pattern->size()));
    plan.from = "hybrid_override_pattern";
    plan.none_is = "Mamba-2 / MLP";
    for (char c : *pattern) plan.layers.push_back(c == '*' ? Kind::global : Kind::none);
    return plan;
  }
  if (type == "jamba") {
    std::int64_t period = find_int(config, {"attn_layer_period"}).value_or(Found{8, ""}).value;
    std::int64_t offset = find_int(config, {"attn_layer_offset"}).value_or(Found{4, ""}).value;
    if (period <= 0) return invalid_config(source, "attn_layer_period must be positive");
    plan.none_is = "Mamba";
    return each([&](std::int64_t i) { return i % period == offset ? Kind::global : Kind::none; }, "attn_layer_period / attn_layer_offset");
  }
  if (one_of(type, {"zamba", "zamba2"}))
    return invalid_config(source, "a " + type + " config without layers_block_type: cannot tell which layers attend");
  if (auto indices = config.find("attn_layer_indices"); indices != config.end() && indices->is_array()) {
    plan.none_is = "Mamba";
    std::vector<std::int64_t> attention;
    for (const auto& i : *indices)
      if (i.is_number_integer()) attention.push_back(i.get<std::int64_t>());
    return each([&](std::int64_t i) { return std::find(attention.begin(), attention.end(), i) != attention.end() ? Kind::global : Kind::none; },
                "attn_layer_indices");
  }
  if (type == "qwen3_next") {
    std::int64_t interval = find_int(config, {"full_attention_interval"}).value_or(Found{4, ""}).value;
    if (interval <= 0) return invalid_config(source, "full_attention_interval must be positive");
    plan.none_is = "Gated DeltaNet linear attention";
    return each([&](std::int64_t i) { return (i + 1) % interval == 0 ? Kind::global : Kind::none; }, "full_attention_interval");
  }
  if (type == "gemma2" && has_window)
    return each([](std::int64_t i) { return i % 2 == 0 ? Kind::sliding : Kind::global; }, "Gemma-2's alternation (even layers sliding)");
  if (one_of(type, {"gemma3", "gemma3_text", "cohere2"}) && has_window) {
    auto pattern = find_int(config, {"sliding_window_pattern", "_sliding_window_pattern"});
    std::int64_t every = pattern ? pattern->value : type == "cohere2" ? 4 : 6;
    if (every <= 0) return invalid_config(source, "sliding_window_pattern must be positive");
    return each([&](std::int64_t i) { return (i + 1) % every != 0 ? Kind::sliding : Kind::global; },
                pattern ? pattern->key + " " + str(every) : "the family's sliding_window_pattern " + str(every));
  }
  if (one_of(type, {"llama4", "llama4_text"}) && find_int(config, {"attention_chunk_size"})) {
    if (auto rope = config.find("no_rope_layers"); rope != config.end() && rope->is_array() && !rope->empty()) {
      // 1 = the layer uses RoPE and attends in chunks; 0 = a NoPE layer attending to everything.
      NVTE_TRY_VOID(bound_layers(source, "no_rope_layers", rope->size()));
      plan.from = "no_rope_layers";
      for (const auto& flag : *rope) plan.layers.push_back(flag.is_number() && flag.get<double>() != 0 ? Kind::chunked : Kind::global);
      return plan;
    }
    std::int64_t interval = find_int(config, {"no_rope_layer_interval"}).value_or(Found{4, ""}).value;
    if (interval <= 0) return invalid_config(source, "no_rope_layer_interval must be positive");
    return each([&](std::int64_t i) { return (i + 1) % interval != 0 ? Kind::chunked : Kind::global; }, "no_rope_layer_interval " + str(interval));
  }
  if (type == "gpt_oss" && has_window)
    return each([](std::int64_t i) { return i % 2 == 0 ? Kind::sliding : Kind::global; }, "gpt-oss's alternation (even layers sliding)");
  if (one_of(type, {"qwen2", "qwen2_moe", "qwen3", "qwen3_moe"}) && has_window && is_true(config, "use_sliding_window")) {
    // Qwen applies the window from layer max_window_layers on.
    std::int64_t from = find_int(config, {"max_window_layers"}).value_or(Found{0, ""}).value;
    return each([&](std::int64_t i) { return i >= from ? Kind::sliding : Kind::global; }, "use_sliding_window, max_window_layers " + str(from));
  }
  if (type == "modernbert") {
    std::int64_t every = find_int(config, {"global_attn_every_n_layers"}).value_or(Found{3, ""}).value;
    if (every <= 0) return invalid_config(source, "global_attn_every_n_layers must be positive");
    return each([&](std::int64_t i) { return i % every == 0 ? Kind::global : Kind::sliding; }, "global_attn_every_n_layers " + str(every));
  }
  if (in(k_all_layers_windowed, type) && has_window) return each([](std::int64_t) { return Kind::sliding; }, "sliding_window");
  return each([](std::int64_t) { return Kind::global; }, "");
}

std::string layer_list(const std::vector<std::int64_t>& indices) {
  std::vector<std::string> shown;
  for (std::size_t i = 0; i < indices.size() && i < 6; ++i) shown.push_back(str(indices[i]));
  return util::join(shown, ", ") + (indices.size() > 6 ? ", …" : "");
}

std::string kind_label(Kind kind) {
  switch (kind) {
  case Kind::sliding: return "sliding";
  case Kind::chunked: return "chunked";
  case Kind::global: return "global";
  case Kind::none: break;
  }
  return "none";
}

// --- the model's name -----------------------------------------------------------------------

std::string base_name(const Json& root, std::string_view source) {
  if (auto name = find_string(root, "_name_or_path"); name && !name->empty()) return *name;
  std::filesystem::path path(source);
  auto parent = path.parent_path().filename().string();
  if (path.filename() == "config.json" && !parent.empty()) return parent;
  auto stem = path.stem().string();
  return stem.empty() ? std::string("model") : stem;
}

// --- encoder-decoder models (T5, BART, Whisper) ---------------------------------------------

util::Result<std::vector<model::Workload>> encoder_decoder(const Json& config, const std::string& type, const HfOptions& options,
                                                           const std::string& name, std::string_view source) {
  const bool t5 = one_of(type, {"t5", "mt5", "umt5", "longt5"}) || config.contains("relative_attention_num_buckets");
  Shape common;
  NVTE_TRY_VOID(read_dtype(config, config, common, source));
  NVTE_TRY_VOID(read_dropout(config, type, common));

  auto side = [&](bool encoder) -> util::Result<Shape> {
    Shape s = common;
    std::vector<const char*> head_keys = {encoder ? "encoder_attention_heads" : "decoder_attention_heads", "num_heads",
                                          "num_attention_heads"};
    NVTE_TRY_VOID(read_heads(config, type, head_keys, s, source));
    auto positions = encoder ? find_int(config, {"max_source_positions", "n_positions", "max_position_embeddings"})
                             : find_int(config, {"max_target_positions", "n_positions", "max_position_embeddings"});
    std::int64_t seqlen = positions && positions->value > 0 ? positions->value : 512;
    if (!positions) {
      s.workload.assumed.emplace_back("max_seqlen_q");
      s.notes.push_back("the config names no length; " + std::string(encoder ? "input" : "target") + " length assumed 512");
    } else if (options.max_seqlen_cap > 0 && seqlen > options.max_seqlen_cap) {
      seqlen = options.max_seqlen_cap;
    }
    s.context = seqlen;
    NVTE_TRY_VOID(set_int(s.workload, "max_seqlen_q", seqlen));
    NVTE_TRY_VOID(set_int(s.workload, "max_seqlen_kv", seqlen));
    return s;
  };
  Shape enc = NVTE_TRY(side(true));
  Shape dec = NVTE_TRY(side(false));
  std::int64_t enc_layers = find_int(config, {"num_layers", "encoder_layers"}).value_or(Found{}).value;
  std::int64_t dec_layers = find_int(config, {"num_decoder_layers", "decoder_layers", "num_layers"}).value_or(Found{}).value;

  std::vector<model::Workload> out;
  auto finish = [&](Shape s, std::string label, std::string mask, std::string what) -> util::Result<void> {
    model::Workload& w = s.workload;
    w.name = name + "/" + label;
    if (auto set_mask = w.set_text("attn_mask_type", mask); !set_mask) return set_mask;
    w.assumed.emplace_back("attn_mask_type");
    assume(w, "qkv_format", "bshd");
    assume(w, "is_training", "true");
    w.notes = s.notes;
    w.notes.insert(w.notes.begin(), what);
    out.push_back(std::move(w));
    return {};
  };
  std::string layers_enc = enc_layers > 0 ? " (" + str(enc_layers) + " layers)" : "";
  std::string layers_dec = dec_layers > 0 ? " (" + str(dec_layers) + " layers)" : "";

  Shape enc_self = enc;
  Shape dec_self = dec;
  if (t5) {
    for (Shape* s : {&enc_self, &dec_self}) {
      NVTE_TRY_VOID(s->workload.set_text("core_attention_bias_type", "post_scale_bias"));
      NVTE_TRY_VOID(s->workload.set_text("core_attention_bias_shape", "1hss"));
      s->notes.push_back("T5's relative position bias: a learned [1, h, s, s] bias added to the scores (post_scale_bias, shape 1hss); "
                         "T5 does not scale the scores (softmax_scale 1.0)");
    }
  }
  NVTE_TRY_VOID(finish(enc_self, "encoder", "no_mask",
                       "encoder self-attention" + layers_enc + ": bidirectional, no_mask (padded batches: --workload-set attn_mask_type=padding)"));
  NVTE_TRY_VOID(finish(dec_self, "decoder", "causal", "decoder self-attention" + layers_dec + ": causal"));
  Shape cross = dec;
  NVTE_TRY_VOID(set_int(cross.workload, "max_seqlen_kv", enc.workload.get("max_seqlen_q")->as_int()));
  NVTE_TRY_VOID(finish(cross, "cross", "no_mask",
                       "decoder cross-attention" + layers_dec + ": decoder queries (" + str(cross.workload.get("max_seqlen_q")->as_int()) +
                           ") attend to every encoder output (" + str(cross.workload.get("max_seqlen_kv")->as_int()) + "), no_mask"));
  return out;
}

} // namespace

util::Result<std::vector<model::Workload>> parse_hf_config(std::string_view json_text, std::string_view source, const HfOptions& options) {
  NVTE_TRY_VOID(util::check_json(json_text, source)); // depth and size before the tree is built
  Json root;
  try {
    root = Json::parse(json_text.begin(), json_text.end());
  } catch (const Json::parse_error& e) {
    std::string what = e.what();
    if (auto pos = what.find("parse error"); pos != std::string::npos) what = what.substr(pos);
    return util::Error{util::ErrorKind::parse, at_offset(json_text, source, e.byte) + what};
  } catch (const Json::exception& e) {
    // out_of_range 406: a number that overflows a double (found by fuzzing).
    return parse_failure(source, std::string(": ") + e.what());
  }
  if (!root.is_object()) return parse_failure(source, ": a config.json must be a JSON object");

  // Multimodal configs keep the language model under text_config (Gemma 3, Llama 4, Mistral 3).
  const Json* config = &root;
  std::vector<std::string> model_notes;
  for (const char* key : {"text_config", "llm_config", "language_config"}) {
    auto it = root.find(key);
    if (!root.contains("num_attention_heads") && it != root.end() && it->is_object()) {
      config = &*it;
      model_notes.push_back(std::string(key) + ": the language model's attention" +
                            (root.contains("vision_config") ? " (the vision encoder's is not imported)" : ""));
      break;
    }
  }
  const std::string type = find_string(*config, "model_type").value_or(find_string(root, "model_type").value_or(""));
  const std::string name = base_name(root, source);

  if (in(k_attention_free, type))
    return invalid_config(source, "model_type \"" + type +
                                      "\" has no attention layers (state-space / recurrent blocks): "
                                      "TransformerEngine's attention has nothing to run for it");
  if (!config->contains("num_attention_heads") && !config->contains("n_head") && !config->contains("n_heads") &&
      !config->contains("num_heads") && (config->contains("state_size") || config->contains("ssm_cfg") || config->contains("d_state")))
    return invalid_config(source, "no attention heads and a state-space shape (state_size / d_state): an attention-free model; "
                                  "TransformerEngine's attention has nothing to run for it");

  if (is_true(*config, "is_encoder_decoder") || one_of(type, {"t5", "mt5", "umt5", "longt5", "bart", "mbart", "marian", "pegasus", "whisper"})) {
    auto out = NVTE_TRY(encoder_decoder(*config, type, options, name, source));
    for (auto& w : out) w.notes.insert(w.notes.end(), model_notes.begin(), model_notes.end());
    return out;
  }

  Shape shape;
  NVTE_TRY_VOID(read_heads(*config, type, {"num_attention_heads", "n_head", "n_heads", "num_heads"}, shape, source));

  NVTE_TRY_VOID(read_seqlen(*config, type, options, shape, source));
  NVTE_TRY_VOID(read_dtype(*config, root, shape, source));
  NVTE_TRY_VOID(read_dropout(*config, type, shape));
  NVTE_TRY_VOID(read_score_features(*config, type, shape));
  shape.bidirectional = in(k_text_encoders, type) || in(k_vision_encoders, type) || is_true(*config, "use_bidirectional_attention");

  std::optional<Found> window = find_int(*config, {"sliding_window", "sliding_window_size", "local_attention"});
  if (window && window->value <= 0) window.reset();
  std::optional<Found> chunk = find_int(*config, {"attention_chunk_size"});
  Plan plan = NVTE_TRY(hf_layer_plan(*config, type, window.has_value(), source));
  if (!window && std::find(plan.layers.begin(), plan.layers.end(), Kind::sliding) != plan.layers.end())
    return invalid_config(source, plan.from + " names sliding-window layers but the config has no positive sliding_window");

  // The variants in the order their first layer appears.
  bool window_covers_context = false;
  std::vector<Kind> kinds;
  std::vector<std::vector<std::int64_t>> members;
  std::int64_t without = 0;
  for (std::size_t i = 0; i < plan.layers.size(); ++i) {
    Kind kind = plan.layers[i];
    if (kind == Kind::sliding && window && shape.context > 0 && window->value >= shape.context) {
      kind = Kind::global;
      window_covers_context = true;
    }
    if (kind == Kind::chunked && (!chunk || chunk->value <= 0)) kind = Kind::global;
    if (kind == Kind::none) {
      ++without;
      continue;
    }
    auto it = std::find(kinds.begin(), kinds.end(), kind);
    if (it == kinds.end()) {
      kinds.push_back(kind);
      members.emplace_back();
      it = kinds.end() - 1;
    }
    members[static_cast<std::size_t>(it - kinds.begin())].push_back(static_cast<std::int64_t>(i));
  }
  if (kinds.empty())
    return invalid_config(source, "none of the " + str(static_cast<std::int64_t>(plan.layers.size())) + " layers attends (" + plan.from +
                                      ": " + (plan.none_is.empty() ? std::string("no attention") : plan.none_is) +
                                      "): TransformerEngine's attention has nothing to run for this model");

  std::vector<model::Workload> out;
  const std::int64_t total = static_cast<std::int64_t>(plan.layers.size());
  for (std::size_t v = 0; v < kinds.size(); ++v) {
    Shape s = shape;
    model::Workload& w = s.workload;
    const Kind kind = kinds[v];
    w.name = kinds.size() == 1 ? name : name + "/" + kind_label(kind);
    const auto& layers = members[v];
    std::string where;
    if (kinds.size() > 1 || without > 0) {
      where = plan.nominal ? "num_hidden_layers is not given; by " + plan.from + " this variant covers layers like " + layer_list(layers)
                           : str(static_cast<std::int64_t>(layers.size())) + " of " + str(total) + " layers (" + layer_list(layers) + ")" +
                                 (plan.from.empty() ? "" : ", from " + plan.from);
    }
    if (kind == Kind::sliding) {
      std::int64_t size = window->value;
      if (type == "modernbert") {
        NVTE_TRY_VOID(w.set_text("window_size", str(size / 2) + "," + str(size / 2)));
        s.notes.push_back("local_attention " + str(size) + ": each token sees " + str(size / 2) + " tokens on either side -> window_size " +
                          str(size / 2) + "," + str(size / 2));
      } else if (shape.bidirectional) {
        NVTE_TRY_VOID(w.set_text("window_size", str(size) + "," + str(size)));
        s.notes.push_back(window->key + " " + str(size) + " on both sides (bidirectional) -> window_size " + str(size) + "," + str(size));
      } else {
        NVTE_TRY_VOID(w.set_text("window_size", str(size) + ",0"));
        s.notes.push_back(window->key + " " + str(size) + " -> window_size " + str(size) + ",0 (causal, left window only)");
      }
    } else if (kind == Kind::chunked) {
      NVTE_TRY_VOID(set_int(w, "attention_chunk_size", chunk->value));
      std::int64_t seqlen = w.get("max_seqlen_kv")->as_int();
      s.notes.push_back("attention_chunk_size " + str(chunk->value) + ": each token attends causally within its chunk of " +
                        str(chunk->value) + " tokens only" +
                        (seqlen <= chunk->value ? "; at " + str(seqlen) + " tokens that is plain causal attention (--workload-set "
                                                  "max_seqlen_q=" + str(4 * chunk->value) + " checks longer sequences)"
                                                : std::string()));
    }
    if (kind == Kind::global && chunk && chunk->value > 0 && std::find(plan.layers.begin(), plan.layers.end(), Kind::chunked) != plan.layers.end())
      s.notes.push_back("global (NoPE) layers attend to the whole sequence");
    if (!where.empty()) s.notes.insert(s.notes.begin(), (kinds.size() > 1 ? kind_label(kind) + " attention in " : "attention in ") + where);
    if (window_covers_context)
      s.notes.push_back(window->key + " " + str(window->value) + " is not shorter than the context (" + str(shape.context) +
                        "): the windowed layers attend to everything in effect");
    if (without > 0 && v == 0)
      s.notes.push_back(str(without) + " of " + str(total) + " layers are " + (plan.none_is.empty() ? std::string("not attention") : plan.none_is) +
                        ", not attention TE runs");
    if (shape.bidirectional) {
      if (auto mask = w.set_text("attn_mask_type", "no_mask"); !mask) return mask.error();
      w.assumed.emplace_back("attn_mask_type");
      s.notes.push_back("bidirectional encoder: no_mask (padded batches: --workload-set attn_mask_type=padding)");
    }
    bool layout_unknown = !w.get("qkv_format");
    assume(w, "qkv_format", "bshd");
    assume(w, "attn_mask_type", "causal");
    assume(w, "is_training", "true");
    w.notes = s.notes;
    w.notes.insert(w.notes.end(), model_notes.begin(), model_notes.end());
    // A config.json never says how the trainer batches: packed (thd) is a different selection.
    if (layout_unknown && !shape.bidirectional)
      w.notes.insert(w.notes.begin(), "packing unknown (config.json does not say); packed batches: --workload-set qkv_format=thd "
                                      "--workload-set attn_mask_type=padding_causal");
    out.push_back(std::move(w));
  }
  return out;
}

util::Result<std::vector<model::Workload>> load_hf_config(const std::filesystem::path& path, const HfOptions& options) {
  auto text = NVTE_TRY(util::read_file(path, 4u << 20));
  return parse_hf_config(text, path.string(), options);
}

} // namespace workload
