// TE debug log -> workloads. The config line is Python's repr of a dict: TE's node facts
// (transformer_engine_version, compute_capability, cuda_version from 2.18, flash_attn_version,
// flash_attn_3_version, flash_attn_4_version from 2.18, cudnn_version), then every field of the
// tag's AttentionParams, then NVTE_* switches for FP8. Values are read as Python literals where
// the doctor uses them (strings, booleans, numbers, tuples, torch.Size, dtypes); object reprs
// (fp8_meta's recipe, InferenceParams) only for the words the doctor needs.
#include "workload/te_log.hpp"

#include "util/input_guard.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <map>
#include <optional>
#include <unordered_map>

namespace workload {

namespace {

util::Error invalid_log(const std::string& message) { return util::Error{util::ErrorKind::invalid, message}; }

constexpr std::string_view k_config = "Running with config=";
constexpr std::string_view k_disabling = "Disabling ";
constexpr std::string_view k_available = "Available backends = ";
constexpr std::string_view k_selected = "Selected backend = ";
constexpr std::string_view k_running = "Running with ";
constexpr std::string_view k_no_backend = "No dot product attention backend is available";

// One `'key': value` of the config dict; value is the raw repr text.
struct ConfigField {
  std::string key;
  std::string_view value;
};

// The repr's end of one value: the ',' or '}' at nesting depth 0, outside quotes. `<` opens a
// level only before a letter (`<class 'torch.Tensor'>`, `<... object at 0x...>`).
std::size_t value_end(std::string_view s, std::size_t i) {
  int depth = 0;
  char quote = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    switch (c) {
    case '\'': case '"': quote = c; break;
    case '(': case '[': case '{': ++depth; break;
    case '<':
      if (i + 1 < s.size() && std::isalpha(static_cast<unsigned char>(s[i + 1]))) ++depth;
      break;
    case ')': case ']': case '}': case '>':
      if (depth == 0) {
        if (c == '}') return i;
        break;
      }
      --depth;
      break;
    case ',':
      if (depth == 0) return i;
      break;
    default: break;
    }
  }
  return std::string_view::npos;
}

// The fields of "{'a': 1, 'b': 'x', ...}" (text starts at '{'); nullopt when it does not close.
std::optional<std::vector<ConfigField>> parse_dict(std::string_view text) {
  std::vector<ConfigField> fields;
  std::size_t i = 1;
  while (true) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i >= text.size()) return std::nullopt;
    if (text[i] == '}') return fields;
    char quote = text[i];
    if (quote != '\'' && quote != '"') return std::nullopt;
    std::size_t close = text.find(quote, i + 1);
    if (close == std::string_view::npos) return std::nullopt;
    std::string key(text.substr(i + 1, close - i - 1));
    std::size_t colon = text.find(':', close);
    if (colon == std::string_view::npos) return std::nullopt;
    std::size_t start = colon + 1;
    while (start < text.size() && text[start] == ' ') ++start;
    std::size_t end = value_end(text, start);
    if (end == std::string_view::npos) return std::nullopt;
    fields.push_back({std::move(key), util::trim(text.substr(start, end - start))});
    i = end;
  }
}

// A Python literal as the doctor's text: 'x' -> x, True -> true; nullopt for None.
std::optional<std::string> scalar(std::string_view value) {
  if (value == "None") return std::nullopt;
  if (value == "True") return "true";
  if (value == "False") return "false";
  if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') && value.back() == value.front())
    return std::string(value.substr(1, value.size() - 2));
  return std::string(value);
}

// The integers of "(-1, 0)", "[16]", "torch.Size([2, 16])".
std::vector<std::string> integers_of(std::string_view value) {
  std::vector<std::string> out;
  std::string current;
  for (char c : value) {
    if ((c >= '0' && c <= '9') || (c == '-' && current.empty())) current += c;
    else {
      if (!current.empty() && current != "-") out.push_back(current);
      current.clear();
    }
  }
  if (!current.empty() && current != "-") out.push_back(current);
  return out;
}

bool contains(std::string_view text, std::string_view word) { return text.find(word) != std::string_view::npos; }

// The workload keys whose value TE logs as the doctor writes it (after scalar()).
const std::vector<std::string_view> k_same_keys = {
    "qkv_layout", "batch_size", "num_heads", "num_gqa_groups", "max_seqlen_q", "max_seqlen_kv", "head_dim_qk",
    "head_dim_v", "attn_mask_type", "bottom_right_diagonal", "core_attention_bias_type", "core_attention_bias_shape",
    "core_attention_bias_requires_grad", "pad_between_seqs", "attention_dropout", "context_parallel", "cp_comm_type",
    "cp_size", "deterministic", "is_training", "fp8", "softmax_type", "return_max_logit", "cuda_graph", "num_splits",
    "fp8_output", "checkpoint_core_attention", "has_score_mod"};

// TE's node facts in the config, by the doctor's fact names.
const std::map<std::string_view, std::vector<std::string_view>> k_fact_fields = {
    {"cudnn_version", {"cudnn.version"}},
    {"cuda_version", {"cuda.runtime_version", "torch.cuda_version"}},
    {"flash_attn_version", {"flash_attn.version"}},
    {"flash_attn_3_version", {"flash_attn_3.version"}},
    {"flash_attn_4_version", {"flash_attn_4.version"}},
};

// One config block: what the workload and node facts become, keyed by their text.
struct Config {
  std::vector<std::pair<std::string, std::string>> settings;   // workload key -> text
  std::vector<std::pair<std::string, std::string>> node_facts; // fact -> text ("" erases)
  std::vector<std::string> parsed, ignored;
  std::string te_version;
  std::string key() const {
    std::string out;
    for (const auto& [k, v] : settings) out += k + "=" + v + ";";
    for (const auto& [k, v] : node_facts) out += k + "=" + v + ";";
    return out;
  }
};

Config read_config(const std::vector<ConfigField>& fields) {
  Config c;
  std::optional<std::string> dtype;
  bool fp8_tensor = false;
  auto set = [&](const ConfigField& f, const std::string& key, const std::string& text) {
    c.settings.emplace_back(key, text);
    c.parsed.push_back(f.key + " = " + std::string(f.value) + " -> " + key + "=" + text);
  };
  auto fact = [&](const ConfigField& f, std::string_view name, const std::string& text) {
    c.node_facts.emplace_back(std::string(name), text);
    c.parsed.push_back(f.key + " = " + std::string(f.value) + " -> " + std::string(name) + (text.empty() ? " (not installed)" : "=" + text));
  };
  auto none = [&](const ConfigField& f) { c.parsed.push_back(f.key + " = None -> default"); };
  for (const auto& f : fields) {
    auto value = scalar(f.value);
    if (f.key == "transformer_engine_version") {
      if (!value) { none(f); continue; }
      c.te_version = value->substr(0, value->find('+'));
      fact(f, "te.version", c.te_version);
    } else if (f.key == "compute_capability") {
      if (!value || !value->starts_with("sm")) { c.ignored.push_back(f.key); continue; }
      fact(f, "gpu.sm", value->substr(2));
    } else if (auto facts = k_fact_fields.find(f.key); facts != k_fact_fields.end()) {
      if (!value) { none(f); continue; }
      std::string text = *value == "not installed" ? "" : *value;
      for (auto name : facts->second) fact(f, name, text);
      // TE (2.19+) lists flash-attn-4 only once it loaded it, which takes its CuTe DSL compiler:
      // the DSL was there, at a version the log does not give; 4.6.2 is one TE accepts with
      // every flash-attn-4.
      if (f.key == "flash_attn_4_version" && !text.empty()) {
        c.node_facts.emplace_back("package.nvidia_cutlass_dsl.version", "4.6.2");
        c.parsed.emplace_back(
            "flash_attn_4_version (TE loaded flash-attn-4, so its CuTe DSL too) -> package.nvidia_cutlass_dsl.version=4.6.2");
      }
    } else if (f.key.starts_with("NVTE_")) {
      if (!value) { none(f); continue; }
      fact(f, "env." + f.key, *value);
    } else if (std::find(k_same_keys.begin(), k_same_keys.end(), f.key) != k_same_keys.end()) {
      if (!value) { none(f); continue; }
      set(f, f.key, *value);
    } else if (f.key == "qkv_dtype") {
      std::string_view v = f.value;
      if (contains(v, "bfloat16")) dtype = "bf16";
      else if (contains(v, "float16") || v == "torch.half") dtype = "fp16";
      else if (contains(v, "float8")) dtype = "fp8";
      else if (contains(v, "float32") || v == "torch.float") dtype = "fp32";
      else { c.ignored.push_back(f.key); continue; }
      c.parsed.push_back(f.key + " = " + std::string(v) + " -> qkv_dtype=" + *dtype);
    } else if (f.key == "qkv_type") {
      // Float8Tensor inputs are what the doctor calls qkv_dtype=fp8; torch.Tensor says nothing.
      fp8_tensor = contains(f.value, "Float8");
      c.parsed.push_back(f.key + " = " + std::string(f.value) + (fp8_tensor ? " -> qkv_dtype=fp8" : " -> (the dtype decides)"));
    } else if (f.key == "window_size") {
      auto numbers = integers_of(f.value);
      if (!value || numbers.size() != 2) { none(f); continue; }
      set(f, "window_size", numbers[0] + "," + numbers[1]);
    } else if (f.key == "alibi_slopes_shape") {
      auto numbers = integers_of(f.value);
      if (!value || numbers.empty()) { none(f); continue; }
      set(f, "alibi_slopes_shape", numbers.size() == 1 ? "nh" : "bnh");
    } else if (f.key == "inference_params") {
      set(f, "inference", value ? "true" : "false");
      if (!value) set(f, "kv_cache_paged", "false"); // no KV cache, none paged
      else if (contains(f.value, "is_paged=")) set(f, "kv_cache_paged", contains(f.value, "is_paged=True") ? "true" : "false");
    } else if (f.key == "fp8_meta") {
      if (!value) { none(f); continue; }
      // The recipe's repr: "recipe_type=Float8CurrentScaling, ..., fp8_dpa=True, fp8_mha=False"
      // (TE 1.x's DelayedScaling repr has no recipe_type: it was the only recipe).
      std::string_view v = f.value;
      std::string recipe = contains(v, "Float8CurrentScaling") ? "current"
                           : contains(v, "MXFP8BlockScaling") ? "mxfp8"
                           : contains(v, "NVFP4BlockScaling") ? "nvfp4"
                           : contains(v, "Float8BlockScaling") ? "block"
                                                              : "delayed";
      set(f, "fp8_recipe", recipe);
      if (contains(v, "fp8_dpa=")) set(f, "fp8_dpa", contains(v, "fp8_dpa=True") ? "true" : "false");
      if (contains(v, "fp8_mha=")) set(f, "fp8_mha", contains(v, "fp8_mha=True") ? "true" : "false");
    } else {
      c.ignored.push_back(f.key); // core_attention_bias_shape before 1.x, has_score_mod_bprop, ...
    }
  }
  if (fp8_tensor) dtype = "fp8";
  if (dtype) c.settings.emplace_back("qkv_dtype", *dtype);
  return c;
}

// Which process wrote a line, from its prefix: Ray's "(WorkerDict pid=123, ip=...)", torchrun's
// "[rank3]:", "[default0]:"; "" when the prefix names none (one process).
std::string stream_of(std::string_view prefix) {
  for (std::string_view marker : {"pid=", "rank", "default"}) {
    auto at = prefix.find(marker);
    if (at == std::string_view::npos) continue;
    std::size_t end = at + marker.size();
    while (end < prefix.size() && prefix[end] >= '0' && prefix[end] <= '9') ++end;
    if (end > at + marker.size()) return std::string(prefix.substr(at, end - at));
  }
  return {};
}

// "FlashAttention=True (2.7.4), FusedAttention=True (sub-backend 1), UnfusedDotProductAttention=False}"
void read_available(std::string_view text, model::ObservedSelection& o) {
  static const std::pair<std::string_view, std::string_view> k_names[] = {
      {"FlashAttention=", "flash_attention"}, {"FusedAttention=", "fused_attention"}, {"UnfusedDotProductAttention=", "unfused_attention"}};
  o.available.clear();
  o.fused_sub_backend.reset();
  o.flash_version.reset();
  for (const auto& [marker, name] : k_names) {
    std::size_t at = 0;
    // "FusedAttention=" also ends "UnfusedDotProductAttention=": take the one after a separator.
    while ((at = text.find(marker, at)) != std::string_view::npos && at > 0 && text[at - 1] != '{' && text[at - 1] != ' ') ++at;
    if (at == std::string_view::npos) continue;
    std::string_view rest = text.substr(at + marker.size());
    bool yes = rest.starts_with("True");
    o.available[std::string(name)] = yes;
    std::size_t open = rest.find('(');
    std::size_t comma = rest.find_first_of(",}");
    if (!yes || open == std::string_view::npos || open > comma) continue;
    std::string_view inside = rest.substr(open + 1, rest.find(')', open) - open - 1);
    if (name == "fused_attention" && inside.starts_with("sub-backend ")) {
      auto n = inside.substr(12);
      o.fused_sub_backend = n == "0" ? "F16_max512_seqlen" : n == "1" ? "F16_arbitrary_seqlen" : n == "2" ? "FP8" : std::string(n);
    }
    if (name == "flash_attention") o.flash_version = std::string(inside);
  }
}

// "FusedAttention (sub-backend 1)." / "FlashAttention (2.7.4)" / "NoBackend": the backend.
void read_selected(std::string_view text, model::ObservedSelection& o) {
  text = util::trim(text);
  while (!text.empty() && text.back() == '.') text.remove_suffix(1);
  o.selected_known = true;
  o.selected.reset();
  for (std::string_view name : {"FlashAttention", "FusedAttention", "UnfusedDotProductAttention"})
    if (text.starts_with(name)) o.selected = std::string(name);
}

// Strips colour escapes and a trailing '\r' (logs saved from a terminal).
std::string_view clean(std::string_view line, std::string& scratch) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find('\x1b') == std::string_view::npos) return line;
  scratch.clear();
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && !std::isalpha(static_cast<unsigned char>(line[i]))) ++i;
      continue;
    }
    scratch += line[i];
  }
  return scratch;
}

// A Disabling line that names the switch the user set ("... due to NVTE_FLASH_ATTN=0"): the
// environment the run had, which the config line does not carry. Of "NVTE_FLASH_ATTN=0 or
// NVTE_FLASH_ATTN_V2=0" the narrower (last) one: it has the same effect on the backend named.
void env_from_disabling(std::string_view line, std::map<std::string, std::string>& env) {
  auto due = line.find("due to NVTE_");
  if (due == std::string_view::npos) return;
  std::string_view rest = line.substr(line.rfind("NVTE_"));
  auto eq = rest.find('=');
  if (eq == std::string_view::npos) return;
  std::size_t end = eq + 1;
  while (end < rest.size() && rest[end] >= '0' && rest[end] <= '9') ++end;
  if (end == eq + 1) return;
  env["env." + std::string(rest.substr(0, eq))] = std::string(rest.substr(eq + 1, end - eq - 1));
}

struct Block {
  Config config;
  model::ObservedSelection observed;
  std::optional<model::ObservedSelection> earlier; // the previous block of the same config
};

// The Python environment a traceback frame of the job names ('  File "/venv/lib/python3.12/
// site-packages/transformer_engine/..."'): its site-packages directory and the interpreter of
// that layout (<prefix>/bin/pythonX.Y for <prefix>/lib/pythonX.Y/site-packages, a venv or conda
// or a prefix install; /usr/bin/pythonX.Y for Debian's dist-packages). nullopt for other lines.
struct JobPython {
  std::string site_packages;
  std::string executable;
};
std::optional<JobPython> job_python(std::string_view line) {
  auto file = line.find("File \"");
  if (file == std::string_view::npos) return std::nullopt;
  std::string_view path = line.substr(file + 6);
  path = path.substr(0, path.find('"'));
  for (std::string_view dir : {"/site-packages/", "/dist-packages/"}) {
    auto at = path.find(dir);
    if (at == std::string_view::npos) continue;
    std::string_view site = path.substr(0, at + dir.size() - 1);
    std::string_view lib = site.substr(0, at); // <prefix>/lib/pythonX.Y
    auto slash = lib.rfind('/');
    if (slash == std::string_view::npos) return std::nullopt;
    std::string_view version = lib.substr(slash + 1);
    std::string_view prefix = lib.substr(0, slash); // <prefix>/lib
    if (!version.starts_with("python") || !prefix.ends_with("/lib")) return std::nullopt;
    prefix.remove_suffix(4);
    // Debian keeps its interpreter in /usr/bin for /usr/lib and /usr/local/lib alike.
    bool debian = dir == "/dist-packages/";
    std::string bin = debian ? std::string("/usr/bin") : std::string(prefix) + "/bin";
    for (char c : bin + std::string(version))
      if (std::iscntrl(static_cast<unsigned char>(c))) return std::nullopt;
    return JobPython{std::string(site), bin + "/" + std::string(version)};
  }
  return std::nullopt;
}

bool has_verdict(const model::ObservedSelection& o) {
  return o.selected_known || !o.available.empty() || o.raised_no_backend || !o.disabling.empty();
}

// The reader, fed one line at a time (load_te_log streams a file or standard input through it,
// so a long run's log never sits in memory whole): a config line opens or finds its block, the
// lines after it fill the block of their stream.
class LogReader {
public:
  LogReader(std::string_view source, std::string name) : m_source(source), m_name(std::move(name)) {}

  util::Result<void> line(std::string_view raw) {
    ++m_number;
    if (m_pending) return continue_config(raw);
    std::string_view line = clean(raw, m_scratch);
    if (!m_python) m_python = job_python(line);
    std::size_t at = 0;
    if ((at = line.find(k_config)) != std::string_view::npos) {
      ++m_log.config_lines;
      // The stream before reading on: `line` may live in m_scratch.
      Pending config{stream_of(line.substr(0, at)), std::string(line.substr(at + k_config.size())), m_number, 0};
      // A long run logs the same few configs thousands of times: their text finds their block
      // without reading the fields again.
      if (auto seen = m_by_text.find(config.joined); seen != m_by_text.end()) {
        open_block(seen->second, config);
        return {};
      }
      m_pending = std::move(config);
      return try_config();
    }
    if ((at = line.find(k_disabling)) != std::string_view::npos) {
      if (Block* b = block_of(line.substr(0, at))) b->observed.disabling.emplace_back(util::trim(line.substr(at)));
    } else if ((at = line.find(k_available)) != std::string_view::npos) {
      if (Block* b = block_of(line.substr(0, at))) read_available(line.substr(at + k_available.size()), b->observed);
    } else if ((at = line.find(k_selected)) != std::string_view::npos) {
      if (Block* b = block_of(line.substr(0, at))) read_selected(line.substr(at + k_selected.size()), b->observed);
    } else if ((at = line.find(k_no_backend)) != std::string_view::npos) {
      // The ValueError (its traceback's last line, or the message TE repeats in a warning).
      if (Block* b = block_of(line.substr(0, at))) b->observed.raised_no_backend = true;
    } else if ((at = line.find(k_running)) != std::string_view::npos && contains(line.substr(at), " backend")) {
      // DotProductAttention's INFO line, "Running with FusedAttention backend (sub-backend 1)":
      // the backend that ran, where the debug level's "Selected backend" line is missing.
      Block* b = block_of(line.substr(0, at));
      if (b && !b->observed.selected_known) read_selected(line.substr(at + k_running.size()), b->observed);
      if (b) b->observed.selected_known = true;
    } else if (!util::trim(line).empty()) {
      ++m_log.ignored_lines;
    }
    return {};
  }

  util::Result<TeLog> finish() {
    if (m_pending) return not_closed();
    if (m_blocks.empty())
      return invalid_log(m_source + ": no `Running with config=` line: not a TE debug log, or TE ran without "
                                    "NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2 (set both and run the job again)");
    for (std::size_t i = 0; i < m_blocks.size(); ++i) {
      Block& block = m_blocks[i];
      if (!has_verdict(block.observed) && block.earlier) block.observed = std::move(*block.earlier);
      model::ObservedSelection& o = block.observed;
      // A ValueError with no "Selected backend" line: TE found none.
      if (o.raised_no_backend && !o.selected_known) {
        o.selected_known = true;
        o.selected.reset();
      }
      o.parsed_fields = block.config.parsed;
      o.ignored_fields = block.config.ignored;
      o.ignored_lines = m_log.ignored_lines;
      model::Workload w;
      w.name = m_blocks.size() == 1 ? m_name : m_name + "[" + std::to_string(i + 1) + "]";
      for (const auto& [key, value] : block.config.settings) {
        auto set = w.set_text(key, value);
        if (!set) return invalid_log(o.source + ": " + set.error().message);
      }
      // Every value error of the log names its line (audit 2026-12-01 item 22): the checks that
      // completion makes (a positive head_dim_qk, a dropout in [0, 1), a finite number) run here
      // on a copy, before the command completes the workload under its name.
      model::Workload completed = w;
      if (auto done = completed.complete(); !done) return invalid_log(o.source + ": " + done.error().message);
      std::map<std::string, std::string> env;
      for (const auto& line : o.disabling) env_from_disabling(line, env);
      o.node_facts = block.config.node_facts;
      for (auto& [fact, value] : env) {
        o.parsed_fields.push_back("Disabling ... due to " + fact.substr(4) + "=" + value + " -> " + fact + "=" + value);
        o.node_facts.emplace_back(fact, value);
      }
      // TE writes these lines only with its debug logging on: the job ran with both set.
      o.node_facts.emplace_back("env.NVTE_DEBUG", "1");
      o.node_facts.emplace_back("env.NVTE_DEBUG_LEVEL", "2");
      // The job's interpreter, never the one of the machine reading the log (a login node's
      // /usr/bin/python3): the one a traceback names, else a neutral `python`.
      o.node_facts.emplace_back("python.executable", m_python ? m_python->executable : "python");
      o.node_facts.emplace_back("python.site_packages", m_python ? m_python->site_packages : "");
      o.node_facts.emplace_back("python.env_kind", "");
      w.notes.push_back("from TE " + (block.config.te_version.empty() ? std::string("?") : block.config.te_version) + "'s debug log, " +
                        o.source + " (" + std::to_string(o.parsed_fields.size()) + " fields read; -v lists them)");
      m_log.workloads.push_back({std::move(w), std::make_shared<const model::ObservedSelection>(std::move(o))});
    }
    return std::move(m_log);
  }

private:
  // A config line being read: its dictionary may continue on the next lines.
  struct Pending {
    std::string stream; // the process that wrote it
    std::string joined; // the dictionary's text so far
    std::size_t start_line = 0;
    int more = 0; // continuation lines joined
  };
  // Config texts remembered (a cache: a text not in it is read again).
  static constexpr std::size_t k_max_texts = 4096;

  util::Error too_many_configs(std::size_t line) const {
    const std::string cap = std::to_string(util::k_max_explained_records);
    return invalid_log(m_source + ":" + std::to_string(line) + ": more than " + cap + " distinct `Running with config=` dictionaries (limit " +
                   cap + ", the configs-per-log cap); to check the first " + cap + ", pass the log's first " + std::to_string(line - 1) +
                   " lines (head -n " + std::to_string(line - 1) + ")");
  }

  util::Error not_closed() const {
    return invalid_log(m_source + ":" + std::to_string(m_pending->start_line) + ": the `Running with config=` dictionary does not close");
  }

  // A dict that a terminal or a paste broke over lines: the next ones are joined (64 at most).
  util::Result<void> continue_config(std::string_view raw) {
    if (m_pending->joined.size() > util::LineLimits{}.max_line_bytes || ++m_pending->more > 64) return not_closed();
    m_pending->joined += clean(raw, m_scratch);
    return try_config();
  }

  util::Result<void> try_config() {
    Pending& p = *m_pending;
    std::optional<std::vector<ConfigField>> fields = p.joined.starts_with("{") ? parse_dict(p.joined) : std::nullopt;
    if (!fields) {
      if (!p.joined.starts_with("{")) return not_closed();
      return {}; // wait for the next line
    }
    std::size_t index = 0;
    if (auto seen = m_by_text.find(p.joined); seen != m_by_text.end()) {
      index = seen->second;
    } else {
      Config config = read_config(*fields);
      std::string key = config.key();
      if (auto found = m_by_key.find(key); found != m_by_key.end()) {
        index = found->second;
      } else if (m_blocks.size() < util::k_max_explained_records) {
        index = m_blocks.size();
        m_by_key.emplace(std::move(key), index);
        m_blocks.push_back(Block{std::move(config), {}, std::nullopt});
      } else {
        // The cap on configs per log (audit 2026-12-01 item 15: 14 ms of explanation and fix
        // search each, 1,000 configs took 14 s): exit 3 naming it, never a verdict on part of
        // the log. The configs before this line are exactly the ones that would be explained.
        return too_many_configs(p.start_line);
      }
      if (m_by_text.size() < k_max_texts) m_by_text.emplace(p.joined, index);
    }
    open_block(index, p);
    m_pending.reset();
    return {};
  }

  // The config line p (of block index) starts a new block of its stream.
  void open_block(std::size_t index, const Pending& p) {
    m_current[p.stream] = index;
    m_last = index;
    Block& block = m_blocks[index];
    if (has_verdict(block.observed)) block.earlier = std::move(block.observed);
    block.observed = {};
    block.observed.source = m_source + ":" + std::to_string(p.start_line);
  }

  // The block a selection line belongs to: its stream's, else the latest of any; nullptr when
  // none (an ignored line).
  Block* block_of(std::string_view prefix) {
    auto found = m_current.find(stream_of(prefix));
    std::optional<std::size_t> index = found != m_current.end() ? std::optional(found->second) : m_last;
    if (!index) {
      ++m_log.ignored_lines;
      return nullptr;
    }
    return &m_blocks[*index];
  }

  std::string m_source, m_name;
  TeLog m_log;
  std::vector<Block> m_blocks;
  std::unordered_map<std::string, std::size_t> m_by_key;  // the config's meaning -> block
  std::unordered_map<std::string, std::size_t> m_by_text; // the config's text -> block
  std::unordered_map<std::string, std::size_t> m_current; // stream -> block
  std::optional<std::size_t> m_last;                      // the latest block of any stream
  std::optional<Pending> m_pending;
  std::optional<JobPython> m_python; // the job's, where a traceback names it
  std::string m_scratch;             // the current line without colour escapes
  std::size_t m_number = 0;
};

} // namespace

util::Result<TeLog> parse_te_log(std::string_view text, std::string_view source, const std::string& name) {
  LogReader reader(source, name);
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    NVTE_TRY_VOID(reader.line(text.substr(pos, end - pos)));
    pos = end + 1;
  }
  return reader.finish();
}

util::Result<TeLog> load_te_log(const std::filesystem::path& path) {
  const bool standard_input = path == "-";
  LogReader reader(standard_input ? "standard input" : path.string(), standard_input ? "te-log" : path.stem().string());
  NVTE_TRY_VOID(util::read_lines(path, [&](std::string_view line) { return reader.line(line); }));
  return reader.finish();
}

} // namespace workload
