// Megatron-LM arguments -> attention workloads.
//
// Two front ends fill one table of settings, keyed by the argument's name (--num-query-groups;
// a recipe's num_query_groups is the same TransformerConfig field): the launch-script reader
// (workload::script_words, then argparse's rules: "--name value", "--name=value", flags, nargs+
// lists, the last occurrence winning) and the YAML recipe reader. One back end turns the table
// into workloads the way Megatron-Core builds TEDotProductAttention: heads and query groups,
// kv_channels or hidden_size / heads, MLA's qk_head_dim + qk_pos_emb_head_dim, sbhd tensors, the
// mask of the model kind, Megatron's own defaults (attention_dropout 0.1, fp32 without --bf16 or
// --fp16, attention_backend auto), the sliding window of the layers is_layer_window_attention
// picks, and context parallelism with its per-layer communication type. Megatron's own start-up
// assertions on these values are errors here too, with the arguments named.
#include "workload/megatron.hpp"

#include "util/file.hpp"
#include "util/input_guard.hpp"
#include "util/yaml_load.hpp"
#include "workload/layer_limit.hpp"
#include "util/strings.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace workload {

namespace {

util::Error invalid_args(const std::string& message) { return util::Error{util::ErrorKind::invalid, message}; }

enum class ArgType { flag, integer, number, choice, choices, integers, window, pattern, text };

struct ArgSpec {
  std::string_view name; // as on the command line, without "--"
  ArgType type;
  std::vector<std::string_view> choices;
};

// The arguments the doctor reads; everything else is ignored.
const std::vector<ArgSpec> k_args = {
    {"num-attention-heads", ArgType::integer, {}},
    {"group-query-attention", ArgType::flag, {}},
    {"num-query-groups", ArgType::integer, {}},
    {"kv-channels", ArgType::integer, {}},
    {"hidden-size", ArgType::integer, {}},
    {"num-layers", ArgType::integer, {}},
    {"encoder-num-layers", ArgType::integer, {}},
    {"decoder-num-layers", ArgType::integer, {}},
    {"seq-length", ArgType::integer, {}},
    {"encoder-seq-length", ArgType::integer, {}},
    {"decoder-seq-length", ArgType::integer, {}},
    {"micro-batch-size", ArgType::integer, {}},
    {"attention-dropout", ArgType::number, {}},
    {"bf16", ArgType::flag, {}},
    {"fp16", ArgType::flag, {}},
    {"fp8-format", ArgType::choice, {"e4m3", "hybrid"}},
    {"fp8-recipe", ArgType::choice, {"tensorwise", "delayed", "mxfp8", "blockwise", "custom"}},
    {"fp8-dot-product-attention", ArgType::flag, {}},
    {"attention-backend", ArgType::choice, {"flash", "fused", "unfused", "local", "auto"}},
    {"context-parallel-size", ArgType::integer, {}},
    {"cp-comm-type", ArgType::choices, {"p2p", "all_gather", "a2a", "a2a+p2p"}},
    {"hierarchical-context-parallel-sizes", ArgType::integers, {}},
    {"multi-latent-attention", ArgType::flag, {}},
    {"qk-head-dim", ArgType::integer, {}},
    {"qk-pos-emb-head-dim", ArgType::integer, {}},
    {"v-head-dim", ArgType::integer, {}},
    {"window-size", ArgType::window, {}},
    {"window-attn-skip-freq", ArgType::pattern, {}},
    {"linear-attention-freq", ArgType::pattern, {}},
    {"softmax-type", ArgType::choice, {"vanilla", "off-by-one", "learnable"}},
    {"deterministic-mode", ArgType::flag, {}},
    {"transformer-impl", ArgType::choice, {"transformer_engine", "local", "inference_optimized"}},
    {"hybrid-override-pattern", ArgType::text, {}},
    {"hybrid-layer-pattern", ArgType::text, {}},
    // Packed sequences, as recipes say it: NeMo's data.*.packed_sequence, Megatron-Bridge's
    // dataset.packed_sequence_specs.packed_sequence_size, verl's model.use_remove_padding.
    {"packed-sequence", ArgType::flag, {}},
    {"packed-sequence-size", ArgType::integer, {}},
    {"use-remove-padding", ArgType::flag, {}},
};

const ArgSpec* find_arg(std::string_view name) {
  for (const auto& spec : k_args)
    if (spec.name == name) return &spec;
  return nullptr;
}

// A setting as found: its values (one, or a list), where it was written, and how.
struct Setting {
  std::vector<std::string> values;
  std::string where; // "train.sh:42" or "recipe.yaml:12:3"
  std::string as;    // "--seq-length" or "model.seq_length"
};

struct Run {
  std::map<std::string, Setting, std::less<>> settings; // by argument name
  std::string kind = "gpt";                             // pretrain_<kind>.py: gpt, bert, t5, mamba, hybrid
  std::vector<std::string> ignored;                     // arguments the doctor does not read
  std::vector<std::string> notes;
  std::string source;
  bool recipe = false; // a YAML recipe: settings are named by their keys, not as arguments
};

// How to name a setting in a note: as written, else as the run would write it.
std::string label(const Run& run, std::string_view name) {
  if (auto it = run.settings.find(name); it != run.settings.end()) return it->second.as;
  if (!run.recipe) return "--" + std::string(name);
  std::string key(name);
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
}

std::string setting_where(const Setting& s) { return s.where + ": " + s.as; }

// --- typed values ---------------------------------------------------------------------------

util::Result<std::int64_t> integer(const Setting& s, std::size_t i = 0) {
  auto v = util::parse_int(util::trim(s.values.at(i)));
  if (!v) return invalid_args(setting_where(s) + ": '" + s.values.at(i) + "' is not an integer");
  return static_cast<std::int64_t>(*v);
}

util::Result<std::int64_t> positive(const Setting& s) {
  auto v = NVTE_TRY(integer(s));
  if (v <= 0) return invalid_args(setting_where(s) + ": must be positive, got " + std::to_string(v));
  return v;
}

util::Result<double> number(const Setting& s) {
  auto v = util::parse_double(util::trim(s.values.at(0)));
  if (!v || !std::isfinite(*v)) return invalid_args(setting_where(s) + ": '" + s.values.at(0) + "' is not a number");
  return *v;
}

util::Result<bool> boolean(const Setting& s) {
  std::string v = util::to_lower(util::trim(s.values.at(0)));
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no") return false;
  return invalid_args(setting_where(s) + ": '" + s.values.at(0) + "' is not true or false");
}

util::Result<std::string> choice(const Setting& s, const ArgSpec& spec, std::size_t i = 0) {
  std::string v(util::trim(s.values.at(i)));
  if (auto dot = v.rfind('.'); dot != std::string::npos && v.rfind("AttnBackend.", 0) == 0) v = v.substr(dot + 1); // AttnBackend.fused
  for (auto c : spec.choices)
    if (c == v) return v;
  std::vector<std::string> allowed(spec.choices.begin(), spec.choices.end());
  return invalid_args(setting_where(s) + ": '" + v + "' is not one of " + util::join(allowed, ", "));
}

// Megatron's layer patterns: an integer N, or a Python list expression of 0/1 such as
// "([1]*3+[0]*1)*3" (only digits, commas, brackets, parentheses, + and *, as Megatron checks).
class PatternParser {
public:
  explicit PatternParser(std::string_view text) : m_text(text) {}

  std::optional<std::vector<std::int64_t>> parse() {
    auto v = sum();
    skip();
    if (!v || m_pos != m_text.size()) return std::nullopt;
    return v;
  }

private:
  void skip() {
    while (m_pos < m_text.size() && m_text[m_pos] == ' ') ++m_pos;
  }
  std::optional<std::int64_t> integer() {
    skip();
    std::size_t start = m_pos;
    while (m_pos < m_text.size() && std::isdigit(static_cast<unsigned char>(m_text[m_pos]))) ++m_pos;
    if (start == m_pos) return std::nullopt;
    auto v = util::parse_int(m_text.substr(start, m_pos - start));
    return v ? std::optional<std::int64_t>(*v) : std::nullopt;
  }
  std::optional<std::vector<std::int64_t>> atom() {
    skip();
    if (m_pos < m_text.size() && m_text[m_pos] == '(') {
      if (++m_depth > 32) return std::nullopt;
      ++m_pos;
      auto v = sum();
      --m_depth;
      skip();
      if (!v || m_pos >= m_text.size() || m_text[m_pos] != ')') return std::nullopt;
      ++m_pos;
      return v;
    }
    if (m_pos < m_text.size() && m_text[m_pos] == '[') {
      ++m_pos;
      std::vector<std::int64_t> out;
      skip();
      if (m_pos < m_text.size() && m_text[m_pos] == ']') {
        ++m_pos;
        return out;
      }
      for (;;) {
        auto v = integer();
        if (!v) return std::nullopt;
        out.push_back(*v);
        skip();
        if (m_pos < m_text.size() && m_text[m_pos] == ',') {
          ++m_pos;
          continue;
        }
        if (m_pos < m_text.size() && m_text[m_pos] == ']') {
          ++m_pos;
          return out;
        }
        return std::nullopt;
      }
    }
    return std::nullopt;
  }
  std::optional<std::vector<std::int64_t>> product() {
    auto v = atom();
    if (!v) return std::nullopt;
    for (;;) {
      skip();
      if (m_pos >= m_text.size() || m_text[m_pos] != '*') return v;
      ++m_pos;
      auto n = integer();
      if (!n || *n < 0 || *n > 100000 || v->size() * static_cast<std::size_t>(*n) > 1000000) return std::nullopt;
      std::vector<std::int64_t> repeated;
      for (std::int64_t k = 0; k < *n; ++k) repeated.insert(repeated.end(), v->begin(), v->end());
      v = std::move(repeated);
    }
  }
  std::optional<std::vector<std::int64_t>> sum() {
    auto v = product();
    if (!v) return std::nullopt;
    for (;;) {
      skip();
      if (m_pos >= m_text.size() || m_text[m_pos] != '+') return v;
      ++m_pos;
      auto rhs = product();
      if (!rhs) return std::nullopt;
      v->insert(v->end(), rhs->begin(), rhs->end());
    }
  }
  std::string_view m_text;
  std::size_t m_pos = 0;
  int m_depth = 0;
};

// A per-layer pattern: either an integer frequency or a list (one entry per layer).
struct Pattern {
  std::optional<std::int64_t> every;
  std::vector<std::int64_t> list;
};

util::Result<Pattern> pattern(const Setting& s) {
  Pattern p;
  if (s.values.size() > 1) {
    for (std::size_t i = 0; i < s.values.size(); ++i) p.list.push_back(NVTE_TRY(integer(s, i)));
    return p;
  }
  std::string v(util::trim(s.values.at(0)));
  if (auto n = util::parse_int(v)) {
    if (*n <= 0) return invalid_args(setting_where(s) + ": must be positive, got " + v);
    p.every = *n;
    return p;
  }
  auto list = PatternParser(v).parse();
  if (!list) return invalid_args(setting_where(s) + ": '" + v + "' is neither an integer nor a list pattern such as ([1]*3+[0]*1)*3");
  p.list = std::move(*list);
  return p;
}

// --- the launch-script front end --------------------------------------------------------------

struct ArgToken {
  std::string text;
  int line = 0;
  std::string unknown; // why its value cannot be known, or empty
};

// Words that hold several arguments (a string variable, a heredoc's command) split on blanks;
// each piece keeps the reason its value is unknown (the first unknown, in the word's order, that
// touches it), and an unknown that expanded to nothing stays as an empty token where it was.
// Near-linear in pieces and unknowns: a word that expanded to many thousand pieces with as many
// unknown stretches is what a few KB of nested variables make (a fuzzer's timeout, 2026-11-29),
// and pieces × unknowns of them took seconds.
std::vector<ArgToken> arg_tokens(const std::vector<workload::ScriptWord>& words) {
  std::vector<ArgToken> out;
  for (const auto& w : words) {
    const workload::TextPieces pieces = workload::pieces_between(w.text, " \t\n\r");
    const std::size_t n = pieces.size();
    auto inside = [&](std::size_t p) {
      auto [first, last] = workload::pieces_touched(pieces, p, p);
      return first < last;
    };
    // Each unknown names the pieces it touches that no earlier unknown named; open[i] skips to the
    // next piece without a reason (path-halving), so no piece is looked at twice.
    std::vector<const std::string*> why(n, nullptr);
    std::vector<std::size_t> open(n + 1);
    for (std::size_t i = 0; i <= n; ++i) open[i] = i;
    auto next_open = [&](std::size_t i) {
      while (open[i] != i) i = open[i] = open[open[i]];
      return i;
    };
    for (const auto& u : w.unknown) {
      auto [first, last] = workload::pieces_touched(pieces, u.begin, u.end);
      for (std::size_t i = next_open(first); i < last; i = next_open(i + 1)) {
        why[i] = &u.why;
        open[i] = i + 1;
      }
    }
    // (position, token): the pieces, and the unknown values that expanded to nothing between them.
    std::vector<std::pair<std::size_t, ArgToken>> ordered;
    ordered.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& [b, e] = pieces[i];
      ordered.push_back({b, {w.text.substr(b, e - b), w.line, why[i] ? *why[i] : std::string()}});
    }
    for (const auto& u : w.unknown)
      if (u.begin == u.end && !inside(u.begin)) ordered.push_back({u.begin, {"", w.line, u.why}});
    std::stable_sort(ordered.begin(), ordered.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (auto& [pos, token] : ordered) out.push_back(std::move(token));
  }
  return out;
}

bool is_option(const ArgToken& t) {
  const std::string& s = t.text;
  return s.size() >= 2 && s[0] == '-' && (std::isalpha(static_cast<unsigned char>(s[1])) || s[1] == '-');
}

util::Result<Run> read_script(std::string_view text, std::string_view source, const workload::ScriptEnvironment& environment) {
  auto words = NVTE_TRY(workload::script_words(text, source, environment));
  auto tokens = arg_tokens(words);
  Run run;
  run.source = std::string(source);
  std::set<std::string> ignored;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const ArgToken& t = tokens[i];
    auto slash = t.text.rfind('/');
    std::string base = t.text.substr(slash == std::string::npos ? 0 : slash + 1);
    if (base.rfind("pretrain_", 0) == 0 && util::ends_with(base, ".py")) run.kind = base.substr(9, base.size() - 12);
    if (t.text.rfind("--", 0) != 0 || t.text.size() <= 2) continue;
    std::string name = t.text.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    std::replace(name.begin(), name.end(), '_', '-');
    const ArgSpec* spec = find_arg(name);
    if (!spec) {
      ignored.insert("--" + name);
      continue;
    }
    Setting s;
    s.where = std::string(source) + ":" + std::to_string(t.line);
    s.as = "--" + name;
    if (!t.unknown.empty()) return invalid_args(setting_where(s) + ": " + t.unknown);
    if (spec->type == ArgType::flag) {
      if (inline_value) return invalid_args(setting_where(s) + ": takes no value (it is a flag), got '" + *inline_value + "'");
      s.values = {"true"};
      run.settings[name] = s;
      continue;
    }
    if (inline_value) {
      s.values = {*inline_value};
    } else {
      bool many = spec->type == ArgType::choices || spec->type == ArgType::integers;
      std::size_t j = i + 1;
      while (j < tokens.size() && !is_option(tokens[j])) {
        if (!tokens[j].unknown.empty()) {
          s.where = std::string(source) + ":" + std::to_string(tokens[j].line);
          return invalid_args(setting_where(s) + ": its value is unknown: " + tokens[j].unknown);
        }
        s.values.push_back(tokens[j].text);
        ++j;
        if (!many) break;
      }
      if (s.values.empty()) return invalid_args(setting_where(s) + ": has no value");
      i = j - 1;
    }
    // The same value passed again (a command built from the arrays that wrote it) keeps where it
    // was first written; another value replaces it, as in argparse.
    if (auto it = run.settings.find(name); it != run.settings.end() && it->second.values == s.values) continue;
    run.settings[name] = s;
  }
  if (!ignored.empty()) {
    std::vector<std::string> some(ignored.begin(), ignored.end());
    if (some.size() > 5) some.resize(5);
    run.notes.push_back(std::to_string(ignored.size()) + " argument" + (ignored.size() == 1 ? "" : "s") +
                        " that do not shape attention ignored (" + util::join(some, ", ") + (ignored.size() > 5 ? ", …" : "") + ")");
  }
  return run;
}

// --- the YAML recipe front end ----------------------------------------------------------------

// Recipe keys that differ from the argument's name.
std::string argument_for_key(const std::string& key) {
  if (key == "fp8") return "fp8-format";
  if (key == "sequence_length") return "seq-length";
  if (key == "fp8_dot_product_attention") return "fp8-dot-product-attention";
  std::string name = key;
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

// Which of several places naming the same field wins: mixed precision settings where they are
// configured, the model's config, then anything else (dataset, train, data).
int rank(const std::string& path, const std::string& argument) {
  bool precision = argument == "bf16" || argument == "fp16" || argument == "fp8-format" || argument == "fp8-recipe" ||
                   argument == "fp8-dot-product-attention";
  if (precision && (path.find("mixed_precision") != std::string::npos || path.find("plugins") != std::string::npos)) return 0;
  if (path.rfind("model", 0) == 0) return 1;
  return 2;
}

struct Candidate {
  int rank = 3;
  Setting setting;
};

void walk(const YAML::Node& node, const std::string& path, std::string_view source, std::map<std::string, Candidate>& found,
          std::string& model_target) {
  if (!node.IsMap()) return;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) continue;
    std::string key = entry.first.Scalar();
    std::string here = path.empty() ? key : path + "." + key;
    const YAML::Node& value = entry.second;
    if (key == "_target_" && path == "model" && value.IsScalar()) model_target = value.Scalar();
    if (key == "_target_" && path == "model.config" && value.IsScalar() && model_target.empty()) model_target = value.Scalar();
    if (value.IsMap()) {
      walk(value, here, source, found, model_target);
      continue;
    }
    std::string argument = argument_for_key(key);
    bool precision_string = key == "precision" && value.IsScalar();
    if (!find_arg(argument) && !precision_string) continue;
    if (value.IsNull() || (value.IsScalar() && (value.Scalar() == "null" || value.Scalar() == "~" || value.Scalar().empty()))) continue;
    Setting s;
    s.where = std::string(source) + ":" + std::to_string(value.Mark().line + 1) + ":" + std::to_string(value.Mark().column + 1);
    s.as = here;
    if (value.IsSequence()) {
      for (const auto& item : value) s.values.push_back(item.IsScalar() ? item.Scalar() : std::string("?"));
    } else if (value.IsScalar()) {
      s.values = {value.Scalar()};
    } else {
      continue;
    }
    if (precision_string) {
      // NeMo 2's MegatronMixedPrecision(precision="bf16-mixed").
      std::string p = util::to_lower(s.values[0]);
      argument = p.find("bf16") != std::string::npos ? "bf16" : (p.find("16") != std::string::npos ? "fp16" : "");
      if (argument.empty()) continue;
      s.values = {"true"};
    }
    int r = rank(here, argument);
    auto it = found.find(argument);
    if (it == found.end() || r < it->second.rank) found[argument] = {r, s};
  }
}

// A recipe is a few hundred nodes; walk() visits aliased nodes once per alias.
const util::InputLimits k_recipe_limits{4u << 20, util::k_max_input_depth, 100'000};

util::Result<Run> read_yaml(std::string_view text, std::string_view source) {
  // walk() recurses into every value and follows aliases: the input layer refuses alias cycles,
  // a tree deeper than 64 and more than its node budget with aliases expanded (billion laughs).
  YAML::Node root = NVTE_TRY(util::load_yaml(text, source, k_recipe_limits));
  if (!root.IsMap()) return util::Error{util::ErrorKind::parse, std::string(source) + ": a recipe must be a YAML mapping"};
  Run run;
  run.source = std::string(source);
  std::map<std::string, Candidate> found;
  std::string target;
  try {
    walk(root, "", source, found, target);
  } catch (const YAML::Exception& e) {
    return util::Error{util::ErrorKind::parse, std::string(source) + ": " + e.msg};
  }
  for (auto& [argument, candidate] : found) {
    const ArgSpec* spec = find_arg(argument);
    if (spec && spec->type == ArgType::flag) {
      // A recipe writes booleans: false is the flag not given.
      if (!NVTE_TRY(boolean(candidate.setting))) continue;
    }
    run.settings[argument] = candidate.setting;
  }
  // A recipe's num_query_groups is the TransformerConfig field itself: no separate GQA switch
  // (and multi-latent attention ignores it).
  if (run.settings.count("num-query-groups") && !run.settings.count("multi-latent-attention"))
    run.settings["group-query-attention"] = {{"true"}, run.settings["num-query-groups"].where, "num_query_groups"};
  run.recipe = true;
  std::string lower = util::to_lower(target);
  if (lower.find("t5") != std::string::npos) run.kind = "t5";
  else if (lower.find("bert") != std::string::npos) run.kind = "bert";
  else if (lower.find("mamba") != std::string::npos || lower.find("hybrid") != std::string::npos) run.kind = "hybrid";
  if (!target.empty()) run.notes.push_back("model: " + target);
  return run;
}

// --- settings -> workloads --------------------------------------------------------------------

const Setting* get(const Run& run, std::string_view name) {
  auto it = run.settings.find(name);
  return it == run.settings.end() ? nullptr : &it->second;
}

util::Result<void> set_text(model::Workload& w, std::string_view key, const std::string& value) {
  if (auto done = w.set_text(key, value); !done) return done.error();
  return {};
}

// The TE attention backend Megatron asks for (--attention-backend, default auto); an error when
// the run does not use TransformerEngine's attention at all.
util::Result<std::string> te_attention_backend(const Run& run) {
  if (const Setting* impl = get(run, "transformer-impl")) {
    std::string v = NVTE_TRY(choice(*impl, *find_arg("transformer-impl")));
    if (v != "transformer_engine")
      return invalid_args(setting_where(*impl) + " " + v +
                          " builds Megatron-Core's own layers, not TransformerEngine's: there is no TE attention to explain");
  }
  std::string backend = "auto";
  if (const Setting* b = get(run, "attention-backend")) {
    backend = NVTE_TRY(choice(*b, *find_arg("attention-backend")));
    if (backend == "local")
      return invalid_args(setting_where(*b) +
                          " local runs Megatron-Core's own PyTorch attention, not TransformerEngine's: there is no TE attention to "
                          "explain (flash, fused, unfused or auto use TE)");
  }
  return backend;
}

// Heads, query groups and head dimensions (multi-latent attention, GQA, --kv-channels or
// --hidden-size / heads) into base.
util::Result<void> attention_shape(const Run& run, model::Workload& base, std::vector<std::string>& notes) {
  const std::string& src = run.source;
  const Setting* heads_s = get(run, "num-attention-heads");
  if (!heads_s) return invalid_args(src + ": no " + label(run, "num-attention-heads") + "; the attention shape is unknown");
  const std::int64_t heads = NVTE_TRY(positive(*heads_s));
  NVTE_TRY_VOID(set_text(base, "num_heads", std::to_string(heads)));

  if (get(run, "multi-latent-attention")) {
    auto dim_or = [&](std::string_view arg, std::int64_t fallback) -> util::Result<std::int64_t> {
      const Setting* s = get(run, arg);
      return s ? positive(*s) : util::Result<std::int64_t>(fallback);
    };
    std::int64_t qk = NVTE_TRY(dim_or("qk-head-dim", 128));
    std::int64_t rope = NVTE_TRY(dim_or("qk-pos-emb-head-dim", 64));
    std::int64_t v = NVTE_TRY(dim_or("v-head-dim", 128));
    if (get(run, "group-query-attention"))
      return invalid_args(setting_where(*get(run, "group-query-attention")) +
                          ": Megatron-LM refuses group query attention with --multi-latent-attention");
    NVTE_TRY_VOID(set_text(base, "head_dim_qk", std::to_string(qk + rope)));
    NVTE_TRY_VOID(set_text(base, "head_dim_v", std::to_string(v)));
    NVTE_TRY_VOID(set_text(base, "num_gqa_groups", std::to_string(heads)));
    notes.push_back("multi-latent attention: head_dim_qk = qk_head_dim + qk_pos_emb_head_dim = " + std::to_string(qk) + " + " +
                    std::to_string(rope) + " = " + std::to_string(qk + rope) + ", head_dim_v = v_head_dim = " + std::to_string(v) +
                    (get(run, "qk-head-dim") && get(run, "qk-pos-emb-head-dim") && get(run, "v-head-dim") ? "" : " (Megatron's defaults for those not given)") +
                    "; K and V expanded to all " + std::to_string(heads) + " heads" +
                    (get(run, "kv-channels") ? "; " + label(run, "kv-channels") + " does not apply" : std::string()));
  } else {
    std::int64_t groups = heads;
    if (const Setting* g = get(run, "group-query-attention"); g) {
      const Setting* n = get(run, "num-query-groups");
      groups = n ? NVTE_TRY(positive(*n)) : 1; // argparse default of --num-query-groups
      if (!n) notes.emplace_back("--group-query-attention without --num-query-groups: Megatron's default of 1 group (multi-query)");
    } else if (get(run, "num-query-groups") && heads != NVTE_TRY(integer(*get(run, "num-query-groups")))) {
      notes.push_back("--num-query-groups has no effect without --group-query-attention: K and V keep " + std::to_string(heads) + " heads");
    }
    if (heads % groups != 0)
      return invalid_args(setting_where(*heads_s) + " " + std::to_string(heads) + " is not divisible by --num-query-groups " +
                          std::to_string(groups));
    NVTE_TRY_VOID(set_text(base, "num_gqa_groups", std::to_string(groups)));
    std::int64_t dim = 0;
    if (const Setting* kv = get(run, "kv-channels")) {
      dim = NVTE_TRY(positive(*kv));
    } else if (const Setting* hidden = get(run, "hidden-size")) {
      std::int64_t h = NVTE_TRY(positive(*hidden));
      if (h % heads != 0)
        return invalid_args(setting_where(*hidden) + " " + std::to_string(h) + " is not divisible by --num-attention-heads " +
                            std::to_string(heads) + " (Megatron-LM asserts this without --kv-channels)");
      dim = h / heads;
      notes.push_back("head_dim = --hidden-size / --num-attention-heads = " + std::to_string(h) + " / " + std::to_string(heads) + " = " +
                      std::to_string(dim));
    } else {
      return invalid_args(src + ": neither " + label(run, "kv-channels") + " nor " + label(run, "hidden-size") +
                          "; the head dimension is unknown");
    }
    NVTE_TRY_VOID(set_text(base, "head_dim_qk", std::to_string(dim)));
    NVTE_TRY_VOID(set_text(base, "head_dim_v", std::to_string(dim)));
  }
  return {};
}

// Sequence lengths and the micro-batch into base; returns the sequence length.
util::Result<std::int64_t> lengths(const Run& run, model::Workload& base) {
  const std::string& src = run.source;
  // Lengths: GPT's --seq-length; T5's encoder / decoder lengths.
  std::int64_t seq = 0;
  if (const Setting* s = get(run, "seq-length")) seq = NVTE_TRY(positive(*s));
  else if (const Setting* s2 = get(run, "encoder-seq-length")) seq = NVTE_TRY(positive(*s2));
  if (seq == 0) return invalid_args(src + ": no " + label(run, "seq-length") + "; the sequence length is unknown");
  NVTE_TRY_VOID(set_text(base, "max_seqlen_q", std::to_string(seq)));
  NVTE_TRY_VOID(set_text(base, "max_seqlen_kv", std::to_string(seq)));

  if (const Setting* b = get(run, "micro-batch-size")) {
    std::int64_t batch = NVTE_TRY(positive(*b));
    NVTE_TRY_VOID(set_text(base, "batch_size", std::to_string(batch)));
  }
  return seq;
}

// The attention dtype and FP8 settings into base.
util::Result<void> precision(const Run& run, model::Workload& base, std::vector<std::string>& notes) {
  // Precision: Megatron trains in fp32 unless --bf16 or --fp16.
  const Setting* bf16 = get(run, "bf16");
  const Setting* fp16 = get(run, "fp16");
  if (bf16 && fp16)
    return invalid_args(setting_where(*fp16) + ": Megatron-LM refuses --fp16 together with --bf16 (" + setting_where(*bf16) + ")");
  if (bf16) NVTE_TRY_VOID(set_text(base, "qkv_dtype", "bf16"));
  else if (fp16) NVTE_TRY_VOID(set_text(base, "qkv_dtype", "fp16"));
  else {
    NVTE_TRY_VOID(set_text(base, "qkv_dtype", "fp32"));
    notes.push_back("neither " + label(run, "bf16") + " nor " + label(run, "fp16") + ": Megatron-LM trains in fp32");
  }
  if (const Setting* f = get(run, "fp8-format")) {
    std::string format = NVTE_TRY(choice(*f, *find_arg("fp8-format")));
    NVTE_TRY_VOID(set_text(base, "fp8", "true"));
    std::string recipe = "delayed";
    if (const Setting* r = get(run, "fp8-recipe")) recipe = NVTE_TRY(choice(*r, *find_arg("fp8-recipe")));
    static const std::map<std::string, std::string> k_recipes = {
        {"delayed", "delayed"}, {"tensorwise", "current"}, {"mxfp8", "mxfp8"}, {"blockwise", "block"}};
    if (auto it = k_recipes.find(recipe); it != k_recipes.end()) NVTE_TRY_VOID(set_text(base, "fp8_recipe", it->second));
    bool dpa = get(run, "fp8-dot-product-attention") != nullptr;
    if (dpa) NVTE_TRY_VOID(set_text(base, "fp8_dpa", "true"));
    notes.push_back(label(run, "fp8-format") + " " + format + " with the " + recipe + " recipe" +
                    (recipe == "custom" ? " (modelled as TE's default recipe)" : "") +
                    (dpa ? ": attention runs in FP8 (fp8_dot_product_attention)" : ": the linear layers run in FP8; attention stays in " +
                                                                                       base.get("qkv_dtype")->as_string()));
  }
  return {};
}

// The argument that says the run packs sequences (NeMo's packed_sequence, verl's
// use_remove_padding, a Megatron-Bridge packed_sequence_size above 0), or nullptr.
util::Result<const Setting*> packed_setting(const Run& run) {
  const Setting* packed = get(run, "packed-sequence") ? get(run, "packed-sequence") : get(run, "use-remove-padding");
  if (const Setting* size = get(run, "packed-sequence-size"); size && NVTE_TRY(integer(*size)) > 0) packed = size;
  return packed;
}

// Dropout, softmax, determinism, the backend switches and Megatron-Core's fixed layout into base.
util::Result<void> attention_settings(const Run& run, const std::string& backend, model::Workload& base, std::vector<std::string>& notes) {
  double dropout = 0.1;
  if (const Setting* d = get(run, "attention-dropout")) {
    dropout = NVTE_TRY(number(*d));
    if (dropout < 0 || dropout >= 1)
      return invalid_args(setting_where(*d) + ": must be in [0, 1), got " + get(run, "attention-dropout")->values[0]);
  } else {
    notes.push_back("no " + label(run, "attention-dropout") + ": Megatron's default 0.1");
  }
  NVTE_TRY_VOID(set_text(base, "attention_dropout", std::to_string(dropout)));
  if (const Setting* s = get(run, "softmax-type")) {
    std::string softmax = NVTE_TRY(choice(*s, *find_arg("softmax-type")));
    NVTE_TRY_VOID(set_text(base, "softmax_type", softmax));
  }
  if (get(run, "deterministic-mode")) NVTE_TRY_VOID(set_text(base, "deterministic", "true"));
  NVTE_TRY_VOID(set_text(base, "attention_backend", backend));
  static const std::map<std::string, std::string> k_switches = {
      {"auto", "NVTE_FLASH_ATTN=1 NVTE_FUSED_ATTN=1 NVTE_UNFUSED_ATTN=1"},
      {"flash", "NVTE_FLASH_ATTN=1 NVTE_FUSED_ATTN=0 NVTE_UNFUSED_ATTN=0"},
      {"fused", "NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=1 NVTE_UNFUSED_ATTN=0"},
      {"unfused", "NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0 NVTE_UNFUSED_ATTN=1"}};
  notes.push_back(label(run, "attention-backend") + (get(run, "attention-backend") ? " " : " not set: Megatron's default ") +
                  backend + ": Megatron sets " + k_switches.at(backend) + " before TE selects a backend, and stops if one is already set otherwise");
  NVTE_TRY_VOID(set_text(base, "is_training", "true"));
  // Packed sequences: Megatron-Core then passes PackedSeqParams (cu_seqlens) and TE gets thd with a
  // padding causal mask. Where the arguments do not say, the note says how to check that variant.
  const Setting* packed = NVTE_TRY(packed_setting(run));
  if (packed) {
    NVTE_TRY_VOID(set_text(base, "qkv_format", "thd"));
    notes.push_back(packed->as + " (" + packed->where + "): packed sequences, Megatron-Core passes cu_seqlens: qkv_format thd with "
                    "attn_mask_type padding_causal");
  } else {
    NVTE_TRY_VOID(set_text(base, "qkv_format", "sbhd"));
    notes.emplace_back("Megatron-Core passes [s, b, h, d] tensors: qkv_format sbhd");
  }
  return {};
}

struct ContextParallel {
  std::int64_t size = 1;
  std::vector<std::string> types; // one, or one per layer
};

// --context-parallel-size and its communication types; checked as Megatron-LM checks them.
util::Result<ContextParallel> context_parallel(const Run& run, std::int64_t seq, model::Workload& base, std::vector<std::string>& notes) {
  // Context parallelism.
  std::int64_t cp = 1;
  if (const Setting* c = get(run, "context-parallel-size")) cp = NVTE_TRY(positive(*c));
  std::vector<std::string> cp_types = {"p2p"};
  if (const Setting* t = get(run, "cp-comm-type")) {
    cp_types.clear();
    for (std::size_t i = 0; i < t->values.size(); ++i) cp_types.push_back(NVTE_TRY(choice(*t, *find_arg("cp-comm-type"), i)));
  }
  if (cp > 1) {
    NVTE_TRY_VOID(set_text(base, "cp_size", std::to_string(cp)));
    const Setting* seq_s = get(run, "seq-length") ? get(run, "seq-length") : get(run, "encoder-seq-length");
    if (seq % (2 * cp) != 0)
      return invalid_args(setting_where(*seq_s) + " " + std::to_string(seq) + " is not a multiple of 2 * --context-parallel-size " +
                          std::to_string(cp) + ": Megatron-LM refuses it (each rank holds two chunks of the sequence)");
    if (const Setting* h = get(run, "hierarchical-context-parallel-sizes")) {
      std::int64_t product = 1;
      for (std::size_t k = 0; k < h->values.size(); ++k) {
        auto size = NVTE_TRY(integer(*h, k));
        if (size <= 0) return invalid_args(setting_where(*h) + ": sizes must be positive");
        if (__builtin_mul_overflow(product, size, &product)) return invalid_args(setting_where(*h) + ": sizes too large");
      }
      if (product != cp)
        return invalid_args(setting_where(*h) + ": the sizes multiply to " + std::to_string(product) + ", not --context-parallel-size " +
                            std::to_string(cp) + " (Megatron-LM requires them to)");
    }
    if (std::find(cp_types.begin(), cp_types.end(), "a2a+p2p") != cp_types.end() && !get(run, "hierarchical-context-parallel-sizes"))
      return invalid_args(setting_where(*get(run, "cp-comm-type")) +
                          " a2a+p2p needs --hierarchical-context-parallel-sizes, which Megatron-LM requires");
    notes.push_back("context parallelism: " + label(run, "seq-length") + " " + std::to_string(seq) + " over " + std::to_string(cp) +
                    " ranks (" + label(run, "context-parallel-size") + "), each holding " +
                    std::to_string(seq / cp) + " tokens in two chunks of " + std::to_string(seq / (2 * cp)) +
                    "; TE models the whole sequence (max_seqlen " + std::to_string(seq) + ")");
  }
  return ContextParallel{cp, cp_types};
}

// One kind of attention layer: windowed or not, its CP type, and the layers that have it.
struct Variant {
  bool windowed = false;
  std::string cp_type;
  std::vector<std::int64_t> layers;
};

// Which layers attend how: the distinct variants, and the layers that are not TE attention.
struct LayerPlan {
  std::int64_t layers = 0;
  bool per_layer = false;
  std::optional<std::pair<std::int64_t, std::int64_t>> window;
  std::vector<Variant> variants;
  std::int64_t without = 0;
  std::string without_is;
};

util::Result<LayerPlan> megatron_layer_plan(const Run& run, const std::vector<std::string>& cp_types) {
  const std::string& src = run.source;
  // Which layers attend how.
  std::int64_t layers = 0;
  if (const Setting* l = get(run, "num-layers")) {
    layers = NVTE_TRY(positive(*l));
    // The per-layer plan below holds one entry per layer.
    if (layers > k_max_layers)
      return invalid_args(setting_where(*l) + ": " + std::to_string(layers) + " layers is more than any model has (limit " +
                          std::to_string(k_max_layers) + ")");
  }
  std::optional<std::pair<std::int64_t, std::int64_t>> window;
  if (const Setting* w = get(run, "window-size")) {
    std::string text(util::trim(w->values.size() == 1 ? w->values[0] : w->values[0] + "," + w->values[1]));
    if (!text.empty() && text.front() == '(') text.erase(0, 1);
    if (!text.empty() && text.back() == ')') text.pop_back();
    auto parts = util::split(text, ',');
    auto left = parts.size() == 2 ? util::parse_int(util::trim(parts[0])) : std::nullopt;
    auto right = parts.size() == 2 ? util::parse_int(util::trim(parts[1])) : std::nullopt;
    if (!left || !right || *left < -1 || *right < -1)
      return invalid_args(setting_where(*w) + ": '" + w->values[0] + "' is not LEFT,RIGHT (e.g. 4096,0)");
    window = std::make_pair(static_cast<std::int64_t>(*left), static_cast<std::int64_t>(*right));
  }
  std::optional<Pattern> skip;
  if (const Setting* f = get(run, "window-attn-skip-freq")) skip = NVTE_TRY(pattern(*f));
  std::optional<Pattern> linear;
  if (const Setting* f = get(run, "linear-attention-freq")) linear = NVTE_TRY(pattern(*f));
  const Setting* hybrid = get(run, "hybrid-override-pattern");
  if (!hybrid) hybrid = get(run, "hybrid-layer-pattern");

  bool per_layer = (window && skip) || cp_types.size() > 1 || linear || hybrid;
  // Megatron's hybrid pattern: one symbol per layer ('*' attention, '+' MLA, 'D' DeepSeek sparse
  // attention, 'M' Mamba, 'G' gated delta net, '-' MLP, 'E' MoE), '|' between pipeline stages,
  // and after '/' the multi-token-prediction layers.
  std::string hybrid_text;
  if (hybrid) {
    for (char c : hybrid->values[0]) {
      if (c == '/') break;
      if (c == '|' || c == ' ') continue;
      if (std::string_view("*+DMG-E").find(c) == std::string_view::npos)
        return invalid_args(setting_where(*hybrid) + ": '" + std::string(1, c) + "' is not a layer symbol (* + D M G - E, | and /)");
      hybrid_text += c;
    }
    layers = static_cast<std::int64_t>(hybrid_text.size());
    if (layers > k_max_layers)
      return invalid_args(setting_where(*hybrid) + ": " + std::to_string(layers) + " layers is more than any model has (limit " +
                          std::to_string(k_max_layers) + ")");
  }
  if (per_layer && layers == 0) return invalid_args(src + ": per-layer attention settings need --num-layers");
  if (cp_types.size() > 1 && static_cast<std::int64_t>(cp_types.size()) != layers)
    return invalid_args(setting_where(*get(run, "cp-comm-type")) + ": " + std::to_string(cp_types.size()) + " types for " +
                        std::to_string(layers) + " layers (one, or one per layer)");

  // Layer i (1-based, as Megatron counts) -> (attends?, windowed?, cp type).
  std::vector<Variant> variants;
  std::int64_t without = 0;
  std::string without_is;
  std::int64_t count = per_layer ? layers : 1;
  for (std::int64_t n = 1; n <= count; ++n) {
    if (hybrid) {
      char symbol = hybrid_text[static_cast<std::size_t>(n - 1)];
      if (symbol != '*' && symbol != '+') {
        ++without;
        without_is = symbol == 'D' ? "DeepSeek sparse attention, Mamba, MLP or MoE" : "Mamba, gated delta net, MLP or MoE";
        continue;
      }
    }
    if (linear) {
      bool la = linear->every ? (n % *linear->every != 0) : (static_cast<std::size_t>(n - 1) < linear->list.size() && linear->list[static_cast<std::size_t>(n - 1)] != 0);
      if (la) {
        ++without;
        without_is = "linear attention";
        continue;
      }
    }
    bool windowed = false;
    if (window) {
      if (!skip) windowed = true;
      else if (skip->every) windowed = n % *skip->every != 0;
      else windowed = static_cast<std::size_t>(n - 1) < skip->list.size() && skip->list[static_cast<std::size_t>(n - 1)] != 0;
    }
    std::string type = cp_types.size() == 1 ? cp_types[0] : cp_types[static_cast<std::size_t>(n - 1)];
    auto it = std::find_if(variants.begin(), variants.end(), [&](const Variant& v) { return v.windowed == windowed && v.cp_type == type; });
    if (it == variants.end()) {
      variants.push_back({windowed, type, {}});
      it = variants.end() - 1;
    }
    it->layers.push_back(n);
  }
  if (variants.empty())
    return invalid_args(src + ": none of the " + std::to_string(layers) + " layers is attention (" + without_is +
                        "): TransformerEngine's attention has nothing to run");
  if (skip && skip->list.size() > 0 && static_cast<std::int64_t>(skip->list.size()) != layers)
    return invalid_args(setting_where(*get(run, "window-attn-skip-freq")) + ": a pattern of " + std::to_string(skip->list.size()) +
                        " entries for " + std::to_string(layers) + " layers");

  return LayerPlan{layers, per_layer, window, variants, without, without_is};
}

// One workload per attention role of the model kind (T5 has three) and per layer variant.
util::Result<std::vector<model::Workload>> expand(const Run& run, const std::string& name, const model::Workload& base,
                                                  const std::vector<std::string>& notes, const LayerPlan& plan, std::int64_t seq,
                                                  const ContextParallel& context) {
  const std::vector<Variant>& variants = plan.variants;
  const std::vector<std::string>& cp_types = context.types;
  const std::int64_t cp = context.size;
  const std::int64_t layers = plan.layers;
  const bool per_layer = plan.per_layer;
  const auto& window = plan.window;
  const std::int64_t without = plan.without;
  const std::string& without_is = plan.without_is;
  bool windows_differ = std::any_of(variants.begin(), variants.end(), [](const Variant& v) { return v.windowed; }) &&
                        std::any_of(variants.begin(), variants.end(), [](const Variant& v) { return !v.windowed; });
  bool types_differ = cp_types.size() > 1 &&
                      std::any_of(variants.begin(), variants.end(), [&](const Variant& v) { return v.cp_type != variants[0].cp_type; });

  // The model kind decides masks (and T5 its three attentions).
  std::vector<std::tuple<std::string, std::string, std::string>> roles; // label, mask, note
  if (run.kind == "t5") {
    roles = {{"encoder", "padding", "encoder self-attention: bidirectional, padding mask"},
             {"decoder", "padding_causal", "decoder self-attention: causal with padding"},
             {"cross", "padding", "decoder cross-attention to the encoder output"}};
  } else if (run.kind == "bert") {
    roles = {{"", "padding", "BERT: bidirectional attention with a padding mask"}};
  } else {
    roles = {{"", "causal", ""}};
  }

  const bool packed = NVTE_TRY(packed_setting(run)) != nullptr;
  std::vector<model::Workload> out;
  for (const auto& [role, mask, role_note] : roles) {
    for (const auto& v : variants) {
      model::Workload w = base;
      std::vector<std::string> suffix;
      if (!role.empty()) suffix.push_back(role);
      if (windows_differ) suffix.emplace_back(v.windowed ? "sliding" : "global");
      if (types_differ) suffix.push_back("cp-" + v.cp_type);
      w.name = suffix.empty() ? name : name + "/" + util::join(suffix, "-");
      w.notes = notes;
      NVTE_TRY_VOID(set_text(w, "attn_mask_type", packed && mask == "causal" ? std::string("padding_causal") : mask));
      if (!packed)
        w.notes.insert(w.notes.begin(), "packing unknown (the arguments do not say); packed batches: --workload-set "
                                        "qkv_format=thd --workload-set attn_mask_type=padding_causal");
      if (!role_note.empty()) w.notes.insert(w.notes.begin(), role_note);
      if (run.kind == "t5") {
        auto length = [&](std::string_view arg) -> util::Result<std::int64_t> {
          const Setting* s = get(run, arg);
          return s ? positive(*s) : util::Result<std::int64_t>(seq);
        };
        std::int64_t enc = NVTE_TRY(length("encoder-seq-length"));
        std::int64_t dec = NVTE_TRY(length("decoder-seq-length"));
        NVTE_TRY_VOID(set_text(w, "max_seqlen_q", std::to_string(role == "encoder" ? enc : dec)));
        NVTE_TRY_VOID(set_text(w, "max_seqlen_kv", std::to_string(role == "decoder" ? dec : enc)));
      }
      if (v.windowed) {
        std::string left = std::to_string(window->first), right = std::to_string(window->second);
        NVTE_TRY_VOID(set_text(w, "window_size", left + "," + right));
        w.notes.push_back("--window-size " + left + "," + right + " -> window_size " + left + "," + right);
      }
      if (cp > 1) NVTE_TRY_VOID(set_text(w, "cp_comm_type", v.cp_type));
      if (per_layer) {
        std::vector<std::string> shown;
        for (std::size_t k = 0; k < v.layers.size() && k < 6; ++k) shown.push_back(std::to_string(v.layers[k]));
        w.notes.insert(w.notes.begin(), std::string(variants.size() > 1 ? (v.windowed ? "windowed" : "full") + std::string(" attention") : "attention") +
                                            " in " + std::to_string(v.layers.size()) + " of " + std::to_string(layers) + " layers (" +
                                            util::join(shown, ", ") + (v.layers.size() > 6 ? ", …" : "") + "; Megatron counts from 1)");
      }
      if (without > 0) w.notes.push_back(std::to_string(without) + " of " + std::to_string(layers) + " layers are " + without_is + ", not TE attention");
      w.notes.insert(w.notes.end(), run.notes.begin(), run.notes.end());
      out.push_back(std::move(w));
    }
  }
  return out;
}

util::Result<std::vector<model::Workload>> build(const Run& run, const std::string& name) {
  if (run.settings.empty()) return invalid_args(run.source + ": no Megatron-LM arguments found (--num-attention-heads, --seq-length, ...)");
  std::string backend = NVTE_TRY(te_attention_backend(run));
  model::Workload base;
  std::vector<std::string> notes;
  NVTE_TRY_VOID(attention_shape(run, base, notes));
  std::int64_t seq = NVTE_TRY(lengths(run, base));
  NVTE_TRY_VOID(precision(run, base, notes));
  NVTE_TRY_VOID(attention_settings(run, backend, base, notes));
  ContextParallel cp = NVTE_TRY(context_parallel(run, seq, base, notes));
  LayerPlan plan = NVTE_TRY(megatron_layer_plan(run, cp.types));
  return expand(run, name, base, notes, plan, seq, cp);
}

} // namespace

util::Result<std::vector<model::Workload>> parse_megatron_script(std::string_view text, std::string_view source,
                                                                 const workload::ScriptEnvironment& environment, const std::string& name) {
  auto run = NVTE_TRY(read_script(text, source, environment));
  return build(run, name);
}

util::Result<std::vector<model::Workload>> parse_megatron_yaml(std::string_view text, std::string_view source, const std::string& name) {
  auto run = NVTE_TRY(read_yaml(text, source));
  return build(run, name);
}

util::Result<std::vector<model::Workload>> load_megatron_args(const std::filesystem::path& path,
                                                              const workload::ScriptEnvironment& environment) {
  auto text = NVTE_TRY(util::read_file(path, 4u << 20));
  std::string ext = util::to_lower(path.extension().string());
  std::string name = path.stem().string();
  if (ext == ".yaml" || ext == ".yml") return parse_megatron_yaml(text, path.string(), name);
  return parse_megatron_script(text, path.string(), environment, name);
}

} // namespace workload
