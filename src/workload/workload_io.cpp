// Workload importers. YAML and JSON workload files go through yaml-cpp (JSON is read as YAML
// flow style), so every error can point at file:line:column from the node's mark; yaml-cpp
// reports failures by exception, which is caught here and turned into a Result. Hugging Face
// config.json files go through nlohmann::json: they are JSON only and their vocabulary is a
// model's architecture (hidden_size, num_attention_heads, ...), which is mapped onto TE's
// attention keys with the assumptions written down in HfImport::notes.
#include "workload/workload_io.hpp"

#include "util/file.hpp"
#include "util/strings.hpp"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

namespace workload {

namespace {

constexpr std::string_view k_name_key = "name";

util::Error parse_error(std::string message) { return util::Error{util::ErrorKind::parse, std::move(message)}; }
util::Error invalid_error(std::string message) { return util::Error{util::ErrorKind::invalid, std::move(message)}; }

// "source:line:column: " for a yaml-cpp mark (0-based line and column; -1 when unknown).
std::string at(std::string_view source, const YAML::Mark& mark) {
  std::string prefix(source);
  if (mark.line >= 0) prefix += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  return prefix + ": ";
}

std::string unknown_key_message(std::string_view key) {
  std::string message = "unknown workload key '" + std::string(key) + "'";
  if (auto hint = suggest_workload_key(key); !hint.empty()) message += " (did you mean '" + hint + "'?)";
  return message;
}

// The text of a workload value: a scalar as written, or a two-element sequence for window_size.
util::Result<std::string> value_text(const std::string& key, const YAML::Node& node, std::string_view source) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsSequence() && key == "window_size" && node.size() == 2 && node[0].IsScalar() && node[1].IsScalar())
    return node[0].Scalar() + "," + node[1].Scalar();
  if (node.IsNull()) return parse_error(at(source, node.Mark()) + "workload key " + key + " has no value");
  return parse_error(at(source, node.Mark()) + "workload key " + key + " must be a single value" +
                     (key == "window_size" ? " or a [LEFT, RIGHT] pair" : ""));
}

util::Result<model::Workload> workload_from_node(const YAML::Node& node, std::string_view source) {
  if (!node.IsMap()) return parse_error(at(source, node.Mark()) + "a workload must be a mapping of key: value");
  model::Workload workload;
  std::set<std::string, std::less<>> seen;
  for (const auto& entry : node) {
    const YAML::Node& key_node = entry.first;
    if (!key_node.IsScalar()) return parse_error(at(source, key_node.Mark()) + "a workload key must be a word");
    const std::string key = key_node.Scalar();
    if (!seen.insert(key).second)
      return parse_error(at(source, key_node.Mark()) + "workload key '" + key + "' is given twice");
    if (key == k_name_key) {
      auto text = NVTE_TRY(value_text(key, entry.second, source));
      workload.name = text;
      continue;
    }
    if (!model::find_workload_key(key)) return parse_error(at(source, key_node.Mark()) + unknown_key_message(key));
    auto text = NVTE_TRY(value_text(key, entry.second, source));
    if (auto set = workload.set_text(key, text); !set)
      return util::Error{set.error().kind, at(source, entry.second.Mark()) + set.error().message};
  }
  return workload;
}

util::Result<std::vector<model::Workload>> workloads_from_root(const YAML::Node& root, std::string_view source) {
  std::vector<model::Workload> workloads;
  if (!root.IsDefined() || root.IsNull()) return parse_error(std::string(source) + ": no workload in the file");
  if (root.IsMap() && root["workloads"]) {
    if (root.size() != 1) {
      for (const auto& entry : root) {
        if (entry.first.Scalar() != "workloads")
          return parse_error(at(source, entry.first.Mark()) + "a file with 'workloads:' holds nothing else; '" +
                             entry.first.Scalar() + "' belongs inside a workload");
      }
    }
    const YAML::Node list = root["workloads"];
    if (!list.IsSequence() || list.size() == 0)
      return parse_error(at(source, list.Mark()) + "'workloads' must be a non-empty list of workloads");
    for (const auto& item : list) workloads.push_back(NVTE_TRY(workload_from_node(item, source)));
    return workloads;
  }
  workloads.push_back(NVTE_TRY(workload_from_node(root, source)));
  return workloads;
}

// --- Hugging Face config.json -------------------------------------------------------------------

using Json = nlohmann::json;

std::optional<std::int64_t> json_int(const Json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

std::optional<std::string> json_string(const Json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

bool json_true(const Json& config, const char* key) {
  auto it = config.find(key);
  return it != config.end() && it->is_boolean() && it->get<bool>();
}

// "source:line:column" for a byte offset into text (nlohmann reports offsets, 1-based).
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
  return std::string(source) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
}

util::Result<void> set_int(model::Workload& workload, std::string_view key, std::int64_t value) {
  return workload.set_text(key, std::to_string(value));
}

void assume(model::Workload& workload, std::string_view key, std::string_view text) {
  if (workload.get(key)) return;
  if (workload.set_text(key, text)) workload.assumed.emplace_back(key);
}

} // namespace

std::string suggest_workload_key(std::string_view unknown) {
  std::string best;
  std::size_t best_distance = 0;
  auto consider = [&](std::string_view candidate) {
    std::size_t distance = util::edit_distance(util::to_lower(unknown), candidate);
    // A key that starts with the unknown word ("head_dim" -> "head_dim_qk") is a good hint too.
    if (candidate.size() > unknown.size() && util::starts_with(candidate, unknown)) distance = std::min<std::size_t>(distance, 2);
    if (best.empty() || distance < best_distance) {
      best = std::string(candidate);
      best_distance = distance;
    }
  };
  for (const auto& spec : model::workload_keys()) consider(spec.name);
  consider(k_name_key);
  std::size_t limit = std::max<std::size_t>(2, unknown.size() / 3);
  return best_distance <= limit ? best : std::string();
}

util::Result<std::vector<model::Workload>> parse_workload_text(std::string_view text, std::string_view source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return parse_error(at(source, e.mark) + e.msg);
  }
  try {
    return workloads_from_root(root, source);
  } catch (const YAML::Exception& e) {
    return parse_error(at(source, e.mark) + e.msg);
  }
}

util::Result<std::vector<model::Workload>> load_workload_file(const std::filesystem::path& path) {
  auto text = NVTE_TRY(util::read_file(path, 4u << 20));
  auto workloads = NVTE_TRY(parse_workload_text(text, path.string()));
  const std::string stem = path.stem().string();
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    if (!workloads[i].name.empty()) continue;
    workloads[i].name = workloads.size() == 1 ? stem : stem + "[" + std::to_string(i) + "]";
  }
  return workloads;
}

util::Result<HfImport> parse_hf_config(std::string_view json_text, std::string_view source, const HfOptions& options) {
  Json root;
  try {
    root = Json::parse(json_text.begin(), json_text.end());
  } catch (const Json::parse_error& e) {
    std::string what = e.what();
    if (auto pos = what.find("parse error"); pos != std::string::npos) what = what.substr(pos);
    return parse_error(at_offset(json_text, source, e.byte) + what);
  } catch (const Json::exception& e) {
    // out_of_range 406: a number that overflows a double (found by fuzzing).
    return parse_error(std::string(source) + ": " + e.what());
  }
  if (!root.is_object()) return parse_error(std::string(source) + ": a config.json must be a JSON object");
  // Multimodal configs keep the language model's shape under text_config.
  const Json* config = &root;
  if (!root.contains("num_attention_heads") && root.contains("text_config") && root["text_config"].is_object())
    config = &root["text_config"];

  HfImport result;
  model::Workload& w = result.workload;
  auto& notes = result.notes;
  const std::string model_type = json_string(*config, "model_type").value_or(json_string(root, "model_type").value_or(""));
  if (auto name = json_string(root, "_name_or_path"); name && !name->empty()) w.name = *name;

  auto heads = json_int(*config, "num_attention_heads");
  if (!heads || *heads <= 0)
    return invalid_error(std::string(source) + ": no positive integer num_attention_heads; is this a transformer config.json?");
  NVTE_TRY_VOID(set_int(w, "num_heads", *heads));
  if (auto kv_heads = json_int(*config, "num_key_value_heads")) {
    NVTE_TRY_VOID(set_int(w, "num_gqa_groups", *kv_heads));
  } else {
    NVTE_TRY_VOID(set_int(w, "num_gqa_groups", *heads));
    notes.push_back("no num_key_value_heads: K and V have as many heads as Q (" + std::to_string(*heads) + ")");
  }

  auto nope = json_int(*config, "qk_nope_head_dim");
  auto rope = json_int(*config, "qk_rope_head_dim");
  auto v_dim = json_int(*config, "v_head_dim");
  if (nope && rope && v_dim) {
    // Multi-head latent attention (DeepSeek-V2/V3): Q and K carry the no-position part and the
    // rotary part; V has its own width. K and V are expanded to every head for training.
    NVTE_TRY_VOID(set_int(w, "head_dim_qk", *nope + *rope));
    NVTE_TRY_VOID(set_int(w, "head_dim_v", *v_dim));
    NVTE_TRY_VOID(set_int(w, "num_gqa_groups", *heads));
    notes.push_back("multi-head latent attention: head_dim_qk = qk_nope_head_dim + qk_rope_head_dim = " +
                    std::to_string(*nope) + " + " + std::to_string(*rope) + " = " + std::to_string(*nope + *rope) +
                    ", head_dim_v = v_head_dim = " + std::to_string(*v_dim) +
                    ", K and V expanded to all " + std::to_string(*heads) + " heads");
  } else if (auto head_dim = json_int(*config, "head_dim")) {
    NVTE_TRY_VOID(set_int(w, "head_dim_qk", *head_dim));
    NVTE_TRY_VOID(set_int(w, "head_dim_v", *head_dim));
  } else if (auto hidden = json_int(*config, "hidden_size")) {
    if (*hidden % *heads != 0)
      return invalid_error(std::string(source) + ": hidden_size " + std::to_string(*hidden) +
                           " is not divisible by num_attention_heads " + std::to_string(*heads));
    NVTE_TRY_VOID(set_int(w, "head_dim_qk", *hidden / *heads));
    NVTE_TRY_VOID(set_int(w, "head_dim_v", *hidden / *heads));
    notes.push_back("head_dim = hidden_size / num_attention_heads = " + std::to_string(*hidden) + " / " +
                    std::to_string(*heads) + " = " + std::to_string(*hidden / *heads));
  } else {
    return invalid_error(std::string(source) + ": neither head_dim nor hidden_size; cannot tell the head dimension");
  }

  if (auto positions = json_int(*config, "max_position_embeddings"); positions && *positions > 0) {
    std::int64_t seqlen = *positions;
    if (options.max_seqlen_cap > 0 && seqlen > options.max_seqlen_cap) {
      seqlen = options.max_seqlen_cap;
      notes.push_back("max_position_embeddings is " + std::to_string(*positions) + "; max_seqlen taken as " +
                      std::to_string(seqlen) + ", a usual training length (--workload-set max_seqlen_q=" +
                      std::to_string(*positions) + " to check the full context)");
    }
    NVTE_TRY_VOID(set_int(w, "max_seqlen_q", seqlen));
    NVTE_TRY_VOID(set_int(w, "max_seqlen_kv", seqlen));
  }

  // Sliding window: Mistral applies sliding_window whenever it is set; Qwen2/3 only with
  // use_sliding_window (their configs carry a sliding_window value that is off by default).
  auto window = json_int(*config, "sliding_window");
  bool mistral_like = model_type == "mistral" || model_type == "mixtral";
  if (window && *window > 0 && (json_true(*config, "use_sliding_window") || mistral_like)) {
    NVTE_TRY_VOID(w.set_text("window_size", std::to_string(*window) + ",0"));
    notes.push_back("sliding_window " + std::to_string(*window) + " -> window_size " + std::to_string(*window) +
                    ",0 (causal, left window only)");
    if (auto layers = json_int(*config, "max_window_layers"); layers && !mistral_like)
      notes.push_back("max_window_layers = " + std::to_string(*layers) +
                      ": only some layers use the window; the workload describes a windowed layer");
  }

  if (auto dropout = config->find("attention_dropout"); dropout != config->end() && dropout->is_number())
    NVTE_TRY_VOID(w.set_text("attention_dropout", std::to_string(dropout->get<double>())));

  auto dtype = json_string(*config, "torch_dtype");
  if (!dtype) dtype = json_string(*config, "dtype");
  if (!dtype) dtype = json_string(root, "torch_dtype");
  if (dtype) {
    if (auto set = w.set_text("qkv_dtype", *dtype); !set)
      return util::Error{set.error().kind, std::string(source) + ": torch_dtype: " + set.error().message};
    if (w.get("qkv_dtype")->as_string() == "fp32") {
      NVTE_TRY_VOID(w.set_text("qkv_dtype", "bf16"));
      w.assumed.emplace_back("qkv_dtype");
      notes.push_back("torch_dtype float32 is the storage type; attention assumed to run in bf16");
    }
  }
  assume(w, "qkv_dtype", "bf16");
  assume(w, "qkv_format", "bshd");
  assume(w, "attn_mask_type", "causal");
  assume(w, "is_training", "true");
  return result;
}

util::Result<HfImport> load_hf_config(const std::filesystem::path& path, const HfOptions& options) {
  auto text = NVTE_TRY(util::read_file(path, 4u << 20));
  auto result = NVTE_TRY(parse_hf_config(text, path.string(), options));
  if (result.workload.name.empty()) {
    auto parent = path.parent_path().filename().string();
    result.workload.name = path.filename() == "config.json" && !parent.empty() ? parent : path.stem().string();
  }
  return result;
}

util::Result<void> apply_workload_settings(model::Workload& workload, std::span<const std::string> settings) {
  for (const auto& setting : settings) {
    auto eq = setting.find('=');
    if (eq == std::string::npos)
      return invalid_error("--workload-set '" + setting + "': expected KEY=VALUE");
    std::string key(util::trim(std::string_view(setting).substr(0, eq)));
    std::string value(util::trim(std::string_view(setting).substr(eq + 1)));
    if (key == k_name_key) {
      workload.name = value;
      continue;
    }
    if (!model::find_workload_key(key)) return invalid_error("--workload-set '" + setting + "': " + unknown_key_message(key));
    if (auto set = workload.set_text(key, value); !set)
      return util::Error{set.error().kind, "--workload-set '" + setting + "': " + set.error().message};
    std::erase(workload.assumed, key);
    // window_size also sets its two halves; they are no longer assumed either.
    if (key == "window_size") {
      std::erase(workload.assumed, std::string("window_size_left"));
      std::erase(workload.assumed, std::string("window_size_right"));
    }
  }
  return {};
}

util::Result<void> finish_workload(model::Workload& workload) {
  if (auto done = workload.complete(); !done) {
    std::string name = workload.name.empty() ? std::string("workload") : workload.name;
    return util::Error{done.error().kind, name + ": " + done.error().message};
  }
  return {};
}

} // namespace workload
