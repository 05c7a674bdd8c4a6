#include "rules/fix_commands.hpp"

#include "rules/templates.hpp"
#include "util/strings.hpp"

#include <algorithm>

namespace rules::detail {

namespace {

class FactsScope final : public Scope {
public:
  explicit FactsScope(const model::Facts& facts) : m_facts(facts) {}
  const model::Value* get(std::string_view name) const override { return m_facts.get(name); }
  std::size_t count(std::string_view collection) const override { return m_facts.count(collection); }

private:
  const model::Facts& m_facts;
};

std::string fact_label(std::string_view fact) {
  if (fact == "cudnn.version") return "cuDNN";
  if (fact == "nccl.version") return "NCCL";
  if (fact == "te.version") return "TransformerEngine";
  if (fact == "flash_attn.version") return "flash-attn";
  if (fact == "flash_attn_3.version") return "flash-attn 3";
  if (fact == "flash_attn_4.version") return "flash-attn 4";
  if (fact == "cudnn_frontend.version") return "cudnn-frontend";
  if (fact == "cublaslt.version") return "cuBLAS";
  // package.<normalized>.version: the distribution's name
  if (fact.starts_with("package.") && fact.ends_with(".version")) {
    std::string name(fact.substr(8, fact.size() - 16));
    std::replace(name.begin(), name.end(), '_', '-');
    return name;
  }
  return std::string(fact);
}

std::string gpu_label(std::string_view sm) {
  if (sm == "80") return "an sm80 GPU (Ampere, e.g. A100)";
  if (sm == "90") return "an sm90 GPU (Hopper, e.g. H100)";
  if (sm == "100") return "an sm100 GPU (Blackwell, e.g. B200)";
  return "an sm" + std::string(sm) + " GPU";
}

bool is_te_argument(std::string_view key) { return key == "cp_comm_type" || key == "attn_input_format" || key == "qkv_interleaved"; }
bool is_recipe_argument(std::string_view key) { return key == "fp8_dpa" || key == "fp8_mha"; }

std::string change_label(const Change& c) {
  switch (c.kind) {
  case ChangeKind::env: return c.value ? "export " + c.name + "=" + *c.value : "unset " + c.name;
  case ChangeKind::workload:
    if (c.name == "attention_backend") return "--attention-backend " + c.value.value_or("");
    if (c.name == "qkv_format" && c.value == "thd") return "packed sequences (qkv_format=thd)";
    if (c.name == "fp8" && c.value == "false") return "BF16 training (fp8=false: no FP8 autocast, no --fp8-format)";
    if (is_recipe_argument(c.name))
      return c.name + "=" + (c.value == "false" ? "False" : c.value == "true" ? "True" : c.value.value_or(""));
    return c.name + "=" + c.value.value_or("");
  case ChangeKind::package: return fact_label(c.package->fact) + " " + c.release->version.to_string();
  case ChangeKind::gpu: return gpu_label(c.value.value_or(""));
  case ChangeKind::requirement: return c.value.value_or(c.name);
  }
  return {};
}

// Splits a command into its `&&` / `;` parts and each part into shell words (quotes removed).
std::vector<std::vector<std::string>> shell_parts(const std::string& command) {
  std::vector<std::vector<std::string>> parts(1);
  std::string word;
  bool in_word = false;
  char quote = 0;
  auto end_word = [&] {
    if (in_word) parts.back().push_back(word);
    word.clear();
    in_word = false;
  };
  for (std::size_t i = 0; i < command.size(); ++i) {
    char c = command[i];
    if (quote) {
      if (c == quote) quote = 0;
      else word += c;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < command.size()) {
      word += command[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      end_word();
    } else if (c == ';' || (c == '&' && i + 1 < command.size() && command[i + 1] == '&')) {
      end_word();
      if (c == '&') ++i;
      parts.emplace_back();
    } else {
      word += c;
      in_word = true;
    }
  }
  end_word();
  std::erase_if(parts, [](const auto& p) { return p.empty(); });
  return parts;
}

} // namespace

long version_step(const model::Version& from, const model::Version& to) {
  long step = 0;
  long weight = 1000000;
  for (std::size_t i = 0; i < 3; ++i, weight /= 100) step += std::abs(to.component(i) - from.component(i)) * weight;
  return step + std::abs(to.component(3) - from.component(3)) / 1000;
}

NodeAbi node_abi(const model::Facts& facts) {
  NodeAbi node;
  for (std::string_view name : {"torch.cuda_version", "cuda.runtime_version", "driver.cuda_version"}) {
    if (auto v = facts.get_version(name)) {
      node.cuda_major = v->major();
      break;
    }
  }
  if (node.cuda_major <= 0) node.cuda_major = 12; // as pip_install(): the wheels most installs use
  node.python = facts.get_version("python.version");
  node.torch = facts.get_version("torch.version");
  node.glibc = facts.get_version("system.glibc_version");
  for (std::size_t i = 0, n = facts.count("gpu"); i < n; ++i)
    node.max_sm = std::max<long>(node.max_sm, facts.get_int("gpu[" + std::to_string(i) + "].sm").value_or(0));
  // CUDA calls reach the forward-compatibility libcuda where one is in use, else the driver's.
  node.driver = facts.get_bool("cuda.compat.in_use") == true && facts.get_version("cuda.compat.libcuda_version")
                    ? facts.get_version("cuda.compat.libcuda_version")
                    : facts.get_version("driver.version");
  return node;
}

namespace {

// What a package install does to the native probe's link facts (native.*, the cuDNN copy
// completeness): TE and flash-attn install with --no-build-isolation (the catalog's pip flags),
// so their extensions are compiled against the installed torch and its symbols resolve; a cuDNN
// wheel installs whole; a cuBLAS wheel of the catalog is the newest and defines what TE calls.
void relink_native(const Package& package, model::Facts& facts) {
  std::string owner;
  if (package.fact == "te.version") owner = "te";
  else if (package.fact == "flash_attn.version") owner = "flash_attn";
  else if (package.fact == "flash_attn_3.version") owner = "flash_attn_3";
  bool cublas = package.library == "cublas" || package.name.starts_with("nvidia-cublas");
  for (std::size_t i = 0, n = facts.count("native.extensions"); i < n; ++i) {
    std::string base = "native.extensions[" + std::to_string(i) + "]";
    if (!owner.empty() && facts.get_string(base + ".package") == owner) facts.set(base + ".torch_symbol_count", model::Value(0L));
    if (cublas) facts.set(base + ".cublaslt_symbol_count", model::Value(0L));
  }
  if (!package.library.empty()) {
    const std::string& lib = package.library;
    auto path = facts.get_string(lib + ".path");
    for (std::size_t i = 0, n = facts.count(lib + ".copies"); i < n; ++i) {
      std::string base = lib + ".copies[" + std::to_string(i) + "]";
      if (path && facts.get_string(base + ".path") == *path && facts.has(base + ".missing_sublibrary_count"))
        facts.set(base + ".missing_sublibrary_count", model::Value(0L));
    }
  }
}

// The packages whose Requires-Dist closure the python probe records (<owner>.requirements.*).
constexpr std::string_view k_requirement_owners[] = {"te", "torch", "flash_attn", "flash_attn_3", "flash_attn_4"};

// The owner whose requirements a package's install brings along (pip installs them).
std::string_view requirement_owner(const Package& package) {
  if (package.fact == "te.version") return "te";
  if (package.fact == "flash_attn.version") return "flash_attn";
  if (package.fact == "flash_attn_3.version") return "flash_attn_3";
  if (package.fact == "flash_attn_4.version") return "flash_attn_4";
  return {};
}

// Rewrites <owner>.requirements.missing[] keeping the entries keep() accepts.
template <typename Keep>
void filter_missing(model::Facts& facts, std::string_view owner, Keep keep) {
  const std::string base = std::string(owner) + ".requirements.missing";
  const std::size_t n = facts.count(base);
  if (n == 0) return;
  static constexpr std::string_view k_fields[] = {"requirement", "name", "required_by", "extra", "found_version"};
  std::vector<std::vector<std::pair<std::string_view, model::Value>>> kept;
  for (std::size_t i = 0; i < n; ++i) {
    std::string entry = base + "[" + std::to_string(i) + "]";
    if (!keep(facts.get_string(entry + ".name").value_or(""), facts.get_string(entry + ".requirement").value_or(""))) continue;
    auto& fields = kept.emplace_back();
    for (auto field : k_fields)
      if (const model::Value* v = facts.get(entry + "." + std::string(field))) fields.emplace_back(field, *v);
  }
  if (kept.size() == n) return;
  facts.erase_prefix(base);
  for (std::size_t i = 0; i < kept.size(); ++i)
    for (auto& [field, value] : kept[i]) facts.set(base + "[" + std::to_string(i) + "]." + std::string(field), std::move(value));
  facts.set(base + "_count", model::Value(static_cast<long>(kept.size())));
}

// A distribution now installed at version: the recorded unmet requirements it meets go.
void meet_requirements(model::Facts& facts, std::string_view distribution, const model::Version& version) {
  std::string wanted = normalize_distribution(distribution);
  for (auto owner : k_requirement_owners) {
    filter_missing(facts, owner, [&](const std::string& name, const std::string& requirement) {
      if (normalize_distribution(name) != wanted) return true;
      auto parsed = parse_requirement(requirement);
      return parsed && parsed->range && !parsed->range->contains(version);
    });
  }
}

// The fact a distribution's version is recorded under: the catalog package's, else package.<name>.
std::string version_fact(const Catalog* catalog, std::string_view normalized) {
  if (catalog)
    if (const Package* p = catalog->find(normalized)) return p->fact;
  std::string name(normalized);
  std::replace(name.begin(), name.end(), '-', '_');
  return "package." + name + ".version";
}

} // namespace

bool apply_change(const Change& c, model::Facts& facts, model::Workload& workload, std::string& why_not, const Catalog* catalog) {
  switch (c.kind) {
  case ChangeKind::env:
    if (c.value) facts.set("env." + c.name, model::Value(*c.value));
    else facts.erase("env." + c.name);
    return true;
  case ChangeKind::workload: {
    auto r = workload.set_text(c.name, c.value.value_or(""));
    if (!r) {
      why_not = r.error().message;
      return false;
    }
    if (c.name == "qkv_format") {
      const std::string& f = *c.value;
      (void)workload.set_text("qkv_layout", f == "thd" ? "thd_thd_thd" : f + "_" + f + "_" + f);
    }
    if (c.name == "qkv_dtype" && *c.value != "fp8") (void)workload.set_text("fp8_dpa", "false");
    return true;
  }
  case ChangeKind::package: {
    const model::Version& v = c.release->version;
    facts.set(c.package->fact, v);
    if (!c.package->library.empty()) {
      const std::string& lib = c.package->library;
      auto site = facts.get_string("python.site_packages");
      if (site) {
        std::string path = *site + "/nvidia/" + lib + "/lib/lib" + lib + ".so." + std::to_string(v.major());
        std::size_t n = facts.count(lib + ".copies"), at = n;
        for (std::size_t i = 0; i < n; ++i)
          if (facts.get_string(lib + ".copies[" + std::to_string(i) + "].path") == path) at = i;
        std::string base = lib + ".copies[" + std::to_string(at) + "]";
        facts.set(base + ".path", path);
        facts.set(base + ".version", v);
        facts.set(base + ".source", "site_packages");
        for (std::string consumer : {"torch.", "te."})
          if (facts.get_string(consumer + lib + ".path") == path) facts.set(consumer + lib + ".version", v);
        facts.set(lib + ".path", path);
      }
    }
    relink_native(*c.package, facts);
    // pip installs what the release requires (a --no-build-isolation build: first, as its own
    // command) and what its own METADATA requires: those unmet requirements are met afterwards.
    if (auto owner = requirement_owner(*c.package); !owner.empty())
      filter_missing(facts, owner, [](const std::string&, const std::string&) { return false; });
    meet_requirements(facts, c.package->name, v);
    NodeAbi node = node_abi(facts);
    for (const auto& requirement : c.release->requirements) {
      std::string fact = version_fact(catalog, requirement.name);
      auto installed = facts.get_version(fact);
      if (installed && (!requirement.range || requirement.range->contains(*installed))) continue;
      const Package* package = nullptr;
      const PackageRelease* pick = catalog ? resolve(*catalog, requirement, node, &package) : nullptr;
      if (!pick) {
        if (package) {
          why_not = c.package->name + " " + v.to_string() + " needs " + requirement.text + ", which has no release for this node";
          return false;
        }
        continue; // a package the catalog does not describe: the model cannot say which pip takes
      }
      facts.set(fact, pick->version);
      meet_requirements(facts, requirement.name, pick->version);
    }
    facts.derive();
    return true;
  }
  case ChangeKind::gpu: {
    long sm = std::atol(c.value.value_or("0").c_str());
    auto r = facts.apply_override("gpu.compute_capability=" + std::to_string(sm / 10) + "." + std::to_string(sm % 10));
    if (!r) {
      why_not = r.error().message;
      return false;
    }
    for (std::size_t i = 0, n = facts.count("gpu"); i < n; ++i) facts.set("gpu[" + std::to_string(i) + "].sm", model::Value(sm));
    facts.derive();
    return true;
  }
  case ChangeKind::requirement: {
    bool met = false;
    for (auto owner : k_requirement_owners)
      filter_missing(facts, owner, [&](const std::string& name, const std::string&) {
        bool same = normalize_distribution(name) == c.name;
        met = met || same;
        return !same;
      });
    if (!met) {
      // Any other package is one the model knows nothing about (what it changes, which version).
      why_not = "the catalog of published versions does not list " + c.name;
      return false;
    }
    facts.derive();
    return true;
  }
  }
  return false;
}

std::vector<std::string> moved_fact_prefixes(const Change& c) {
  switch (c.kind) {
  // An environment variable or another TE release can move which cuDNN copy TE loads: the search
  // relinks cuDNN after either.
  // Both (and the TE release) also move workload keys TE derives from them (NVTE_DPA_FP8_RECIPE
  // turns fp8_dpa off, model/dpa_inputs.hpp).
  case ChangeKind::env: return {"env." + c.name, "cudnn.", "te.cudnn.", "torch.cudnn.", "workload."};
  case ChangeKind::workload: return {"workload."};
  case ChangeKind::gpu: return {"gpu"};
  case ChangeKind::requirement: {
    std::vector<std::string> prefixes;
    for (auto owner : k_requirement_owners) prefixes.emplace_back(std::string(owner) + ".requirements.");
    return prefixes;
  }
  case ChangeKind::package: {
    std::vector<std::string> prefixes{c.name};
    if (c.package && !c.package->library.empty()) {
      const std::string& lib = c.package->library; // its copies, and what TE and torch load
      prefixes.insert(prefixes.end(), {lib + ".", "te." + lib + ".", "torch." + lib + "."});
    }
    if (c.name == "te.version") prefixes.insert(prefixes.end(), {"te.", "cudnn.", "torch.cudnn.", "workload."});
    // A TE, flash-attn or cuBLAS install relinks the native probe's facts (relink_native).
    if (c.name == "te.version" || c.name.starts_with("flash_attn") || (c.package && c.package->name.starts_with("nvidia-cublas")))
      prefixes.emplace_back("native.");
    // The unmet requirements it meets, and the packages its `requires` brings (apply_change).
    for (auto owner : k_requirement_owners) prefixes.emplace_back(std::string(owner) + ".requirements.");
    if (c.release && !c.release->requirements.empty()) prefixes.insert(prefixes.end(), {"package.", "cudnn_frontend."});
    return prefixes;
  }
  }
  return {};
}

std::vector<Change> load_order_steps(const model::Facts& facts, const std::string& library) {
  std::vector<Change> steps;
  auto site = facts.get_string("python.site_packages");
  if (library != "cudnn" || !site) return steps;
  std::string wheel = *site + "/nvidia/cudnn";
  if (facts.get_string("env.CUDNN_PATH") == wheel) return steps;
  if (facts.has("env.CUDNN_HOME")) steps.push_back(Change{ChangeKind::env, "CUDNN_HOME", std::nullopt, nullptr, nullptr});
  steps.push_back(Change{ChangeKind::env, "CUDNN_PATH", wheel, nullptr, nullptr});
  return steps;
}

model::Fix render_changes(const std::vector<Change>& changes, const model::Facts& facts) {
  FactsScope scope(facts);
  NodeAbi node = node_abi(facts);
  model::Fix fix;
  std::vector<std::string> commands, labels, notes;
  int kind_rank = -1;
  auto kind = [&](int rank, const char* name) {
    if (rank > kind_rank) {
      kind_rank = rank;
      fix.kind = name;
    }
  };
  bool install = false;
  // Packing comes with its padding mask, FP8 attention off with fp8_mha, BF16 training with the
  // recipe's attention settings and the dtype: one label for each.
  std::string packed_with;
  bool packing = false;
  std::vector<std::string> workload_keys;
  for (const auto& c : changes) {
    if (c.kind == ChangeKind::workload && c.name == "qkv_format" && c.value == "thd") packing = true;
    if (c.kind == ChangeKind::workload && c.name == "attn_mask_type") packed_with = c.value.value_or("");
    if (c.kind == ChangeKind::workload) workload_keys.push_back("workload." + c.name);
  }
  for (const auto& c : changes) {
    switch (c.kind) {
    case ChangeKind::env:
      commands.push_back(c.value ? "export " + c.name + "=" + util::shell_quote(*c.value) : "unset " + c.name);
      fix.changes.emplace_back("env." + c.name, c.value.value_or("(unset)"));
      if (install && (c.name == "CUDNN_PATH" || c.name == "CUDNN_HOME")) {
        notes.emplace_back(c.value ? "CUDNN_PATH makes TE load the wheel before the copy it finds first now (the load-order model, re-run "
                                     "with the wheel added)"
                                   : "CUDNN_HOME is searched before CUDNN_PATH");
      } else {
        labels.push_back(change_label(c));
        kind(0, "env");
      }
      break;
    case ChangeKind::workload: {
      fix.changes.emplace_back("workload." + c.name, c.value.value_or(""));
      if (c.name == "attention_backend") {
        labels.push_back(change_label(c) + " in the Megatron-LM arguments");
      } else if (c.name == "qkv_format" && c.value == "thd") {
        labels.push_back(packed_with.empty() ? change_label(c) : "packed sequences (qkv_format=thd, attn_mask_type=" + packed_with + ")");
      } else if ((packing && c.name == "attn_mask_type") || companion_change("workload." + c.name, workload_keys)) {
        // said with the packing, with fp8_dpa or with fp8
      } else if (c.name == "fp8") {
        labels.push_back(change_label(c));
      } else {
        labels.push_back(change_label(c) + (is_te_argument(c.name)       ? " in the TE call"
                                            : is_recipe_argument(c.name) ? " in the FP8 recipe (attention in BF16)"
                                                                         : " in the workload"));
      }
      // A change of what is computed or of the model's shape is a counterfactual ("would also
      // run"), not a setting.
      if (counterfactual_class(change_class("workload." + c.name, c.value.value_or("")))) kind(4, "model");
      else kind(1, "config");
      break;
    }
    case ChangeKind::package: {
      install = true;
      std::string requirement = c.package->requirement;
      if (auto at = requirement.find("{version}"); at != std::string::npos) requirement.replace(at, 9, c.release->version.to_string());
      // A build without isolation needs what the release requires installed first (TE >= 2.18
      // builds against the nvidia-cudnn-frontend headers): its own pip command, before.
      bool no_isolation =
          std::find(c.package->pip_flags.begin(), c.package->pip_flags.end(), "--no-build-isolation") != c.package->pip_flags.end();
      if (no_isolation && !c.release->requirements.empty()) {
        std::string first = python_command(scope) + " -m pip install";
        for (const auto& r : c.release->requirements) first += " " + util::shell_quote(r.text);
        commands.push_back(first);
      }
      std::string command = python_command(scope) + " -m pip install";
      for (const auto& flag : c.package->pip_flags) command += " " + util::shell_quote(flag);
      commands.push_back(command + " " + util::shell_quote(requirement));
      fix.changes.emplace_back(c.package->fact, c.release->version.to_string());
      labels.push_back(change_label(c) + " (" + c.package->name + ")");
      if (!prebuilt_for(*c.release, node) && !c.release->build_note.empty())
        notes.push_back("no prebuilt wheel for this node (" + c.release->build_note + ")");
      else if (!c.package->note.empty()) notes.push_back(c.package->note);
      kind(c.package->fact == "te.version" ? 3 : 2, c.package->fact == "te.version" ? "upgrade" : "pip");
      break;
    }
    case ChangeKind::requirement:
      install = true;
      commands.push_back(python_command(scope) + " -m pip install " + util::shell_quote(c.value.value_or(c.name)));
      fix.changes.emplace_back(version_fact(nullptr, c.name), c.value.value_or(c.name));
      labels.push_back(change_label(c) + " (an unmet requirement)");
      kind(2, "pip");
      break;
    case ChangeKind::gpu:
      fix.changes.emplace_back("gpu.sm", c.value.value_or(""));
      labels.push_back(change_label(c));
      kind(5, "hardware");
      break;
    }
  }
  fix.command = util::join(commands, " && ");
  fix.description = "with " + util::join(labels, " and ");
  if (!notes.empty()) fix.description += "; " + util::join(notes, "; ");
  return fix;
}

Interpreted interpret_command(const std::string& command, const Catalog& catalog, const NodeAbi& node) {
  Interpreted out;
  auto fail = [&](std::string why) {
    out.ok = false;
    out.why_not = std::move(why);
    out.changes.clear();
    return out;
  };
  std::vector<std::string> labels;
  bool only_path = true;
  for (const auto& words : shell_parts(command)) {
    if (words[0] == "unset" || words[0] == "export") {
      for (std::size_t i = 1; i < words.size(); ++i) {
        Change c{ChangeKind::env, words[i], std::nullopt, nullptr, nullptr};
        if (words[0] == "export") {
          auto eq = words[i].find('=');
          if (eq == std::string::npos || eq == 0) return fail("`" + command + "` sets no value the model can apply");
          c.name = words[i].substr(0, eq);
          c.value = words[i].substr(eq + 1);
          if (c.value->find('$') != std::string::npos) return fail("the value of " + c.name + " depends on the shell; the model cannot evaluate it");
        }
        if (c.name != "CUDNN_PATH" && c.name != "CUDNN_HOME") only_path = false;
        labels.push_back(change_label(c));
        out.changes.push_back(std::move(c));
      }
      continue;
    }
    only_path = false;
    auto pip = std::find(words.begin(), words.end(), "pip");
    if (pip == words.end()) pip = std::find(words.begin(), words.end(), "pip3");
    if (pip == words.end() || pip + 1 == words.end())
      // One wording for every such command, so a report can say it once for all of them.
      return fail("the model re-evaluates pip installs of catalog packages, environment variables and workload settings only");
    if (pip[1] != "install") return fail("`pip " + pip[1] + "` is not a change the model can apply");
    for (auto it = pip + 2; it != words.end(); ++it) {
      const std::string& word = *it;
      if (word.starts_with("-")) {
        if (word == "--index-url" || word == "-i" || word == "--extra-index-url" || word == "-f" || word == "--find-links" || word == "-c")
          return fail("installs from another index (" + word + "), which the catalog does not describe");
        continue;
      }
      std::size_t name_end = 0;
      while (name_end < word.size() && (std::isalnum(static_cast<unsigned char>(word[name_end])) || word[name_end] == '-' ||
                                        word[name_end] == '_' || word[name_end] == '.'))
        ++name_end;
      std::string name = word.substr(0, name_end);
      std::string spec = word.substr(name_end);
      if (!spec.empty() && spec[0] == '[') {
        auto close = spec.find(']');
        spec = close == std::string::npos ? "" : spec.substr(close + 1);
      }
      const Package* package = catalog.find(name);
      if (!package) {
        // Not a release the catalog describes: apply_change checks that it is an unmet
        // requirement the node records (TE's pydantic), and refuses it otherwise.
        Change c{ChangeKind::requirement, normalize_distribution(name), word, nullptr, nullptr};
        labels.push_back(change_label(c));
        out.changes.push_back(std::move(c));
        continue;
      }
      const PackageRelease* chosen = nullptr;
      if (spec.starts_with("==") && spec.find(',') == std::string::npos && spec.find('*') == std::string::npos) {
        auto v = model::Version::parse(spec.substr(2));
        if (!v) return fail("cannot read the version in " + word);
        for (const auto& r : package->releases)
          if (r.version == *v) chosen = &r;
        if (!chosen) return fail(package->name + " " + v->to_string() + " is not a release the catalog lists as published");
        if (auto why = misfit(catalog, *chosen, node); !why.empty())
          return fail(package->name + " " + v->to_string() + " cannot be used on this node: " + why);
      } else {
        std::optional<model::VersionRange> range;
        if (!spec.empty()) {
          auto parsed = model::VersionRange::parse(spec);
          if (!parsed) return fail("cannot read the version range in " + word);
          range = std::move(*parsed);
        }
        std::string why_none;
        for (const auto& r : package->releases) {
          if ((range && !range->contains(r.version)) || r.version.is_prerelease()) continue;
          if (auto why = misfit(catalog, r, node); !why.empty()) why_none = r.version.to_string() + ": " + why;
          else chosen = &r;
        }
        if (!chosen)
          return fail("no release of " + package->name + " in the catalog matches " + word + " on this node" +
                      (why_none.empty() ? "" : " (" + why_none + ")"));
        out.resolved_version = true;
      }
      Change c{ChangeKind::package, package->fact, chosen->version.to_string(), package, chosen};
      labels.push_back(change_label(c));
      out.changes.push_back(std::move(c));
    }
  }
  if (out.changes.empty()) return fail("the command changes nothing the model can evaluate");
  out.ok = true;
  out.label = util::join(labels, " and ");
  out.only_load_order_step = only_path;
  return out;
}

std::string failure_reason(const std::string& label, const std::string& why_not, bool still_fires, bool no_backend,
                           const std::string& new_problem) {
  if (!why_not.empty()) return "with " + label + ": " + why_not;
  if (still_fires) return "with " + label + " the finding still holds";
  if (no_backend) return "with " + label + " the workload has no attention backend";
  if (!new_problem.empty()) return "with " + label + " another problem appears: " + new_problem;
  return "with " + label + " the model does not predict a working setup";
}

int change_class(std::string_view name, std::string_view value) {
  // FP8 attention emulated in higher precision by the unfused kernel: the last resort of FP8.
  if (name == "env.NVTE_UnfusedDPA_Emulate_FP8") return 5;
  if (name.starts_with("env.")) return 0;
  if (name == "workload.cp_comm_type" || name == "workload.attn_input_format" || name == "workload.qkv_interleaved" ||
      name == "workload.attention_backend" || name == "workload.fp8_dpa" || name == "workload.fp8_mha")
    return 1;
  if (name == "cudnn.version" || name == "nccl.version" || name == "cublaslt.version") return 2;
  if (name.starts_with("flash_attn") || name == "cudnn_frontend.version" || (name.starts_with("package.") && name.ends_with(".version")))
    return 3;
  if (name == "te.version") return 4;
  // Packing sequences into one (thd) changes the batches the model sees (and, with documents that
  // shared a row, what attends to what): a counterfactual. Unpacking keeps each sequence's math.
  if (name == "workload.qkv_format") return value == "thd" ? 6 : 5;
  if (name == "workload.qkv_dtype" || name == "workload.attn_mask_type" || name == "workload.fp8") return 5;
  if (name.starts_with("workload.")) return 6;
  return 7;
}

int outcome_tier(std::string_view backend, bool forced) {
  if (backend == "UnfusedDotProductAttention") return 2;
  if (backend.empty()) return 0;
  return forced ? 1 : 0;
}

bool forces_backend(std::string_view name, std::string_view value) {
  if (name == "env.NVTE_FLASH_ATTN" || name == "env.NVTE_FUSED_ATTN") return value == "0";
  if (name == "workload.attention_backend") return value != "auto";
  return false;
}

int fix_tier(const model::Fix& fix) {
  if (!fix.verified) return k_no_backend_tier;
  bool forced = std::any_of(fix.changes.begin(), fix.changes.end(), [](const auto& c) { return forces_backend(c.first, c.second); });
  return outcome_tier(fix.verified->backend, forced);
}

bool companion_change(std::string_view name, const std::vector<std::string>& names) {
  auto has = [&](std::string_view other) { return std::find(names.begin(), names.end(), other) != names.end(); };
  if (has("workload.fp8")) return name == "workload.fp8_dpa" || name == "workload.fp8_mha" || name == "workload.qkv_dtype";
  if (has("workload.fp8_dpa")) return name == "workload.fp8_mha";
  return false;
}

std::tuple<int, int, std::size_t, int, int, long, int> fix_rank(const model::Fix& fix, const model::Facts& facts) {
  bool cudnn_install = false, packing = false;
  std::vector<std::string> names;
  for (const auto& [name, value] : fix.changes) names.push_back(name);
  for (const auto& [name, value] : fix.changes) {
    cudnn_install = cudnn_install || name == "cudnn.version";
    packing = packing || name == "workload.qkv_format";
  }
  std::size_t count = 0;
  int cost_class = 0;
  int direction = 0; // 0 no version or an upgrade, 1 a downgrade, 2 a downgrade across a major release
  long step = 0;
  for (const auto& [name, value] : fix.changes) {
    // Companions of another change: the load-order step of a wheel, the mask of packing, the
    // FP8 settings that go with FP8 attention or training off.
    if (cudnn_install && (name == "env.CUDNN_PATH" || name == "env.CUDNN_HOME")) continue;
    if (packing && name == "workload.attn_mask_type") continue;
    if (companion_change(name, names)) continue;
    ++count;
    cost_class = std::max(cost_class, change_class(name, value));
    auto to = model::Version::parse(value);
    auto from = facts.get_version(name);
    if (to && from) {
      step += version_step(*from, *to);
      if (*to < *from) direction = std::max(direction, to->major() < from->major() ? 2 : 1);
    }
  }
  int backend = 9;
  if (fix.verified) {
    const std::string& b = fix.verified->backend;
    backend = b == "FlashAttention" ? 0 : b == "FusedAttention" ? 1 : b.empty() ? 3 : 2;
  }
  return {counterfactual_class(cost_class) ? 1 : 0, fix_tier(fix), count, direction, cost_class, step, backend};
}

std::string packed_mask(std::string_view mask) {
  if (mask == "no_mask") return "padding";
  if (mask == "causal") return "padding_causal";
  if (mask == "causal_bottom_right") return "padding_causal_bottom_right";
  return std::string(mask);
}

std::string backend_label(std::string_view key) {
  if (key == "flash_attention") return "FlashAttention";
  if (key == "fused_attention") return "FusedAttention";
  return "UnfusedDotProductAttention";
}

} // namespace rules::detail
