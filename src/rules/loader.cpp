// The YAML side of the rules database: finds and reads the files, validates one file's tree (libyaml's,
// yaml_tree.hpp) against the schema of docs/rules-format.md, compiles its conditions and templates,
// and turns each problem into a Diagnostic that points into the file (source_file.cpp maps offsets
// and libyaml marks to lines and columns, inside scalars too). database_load.cpp parses the files
// and puts their compiled rules together.
#include "rules/loader_internal.hpp"

#include "rules/ruleset_impl.hpp"
#include "rules/yaml_tree.hpp"
#include "model/fact_catalog.hpp"
#include "model/selftest_summary.hpp"
#include "util/edit_distance.hpp"
#include "util/file.hpp"
#include "util/logging.hpp"
#include "util/parallel.hpp"
#include "util/input_guard.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

namespace rules {
namespace detail {

namespace {

using Node = YamlNode;

constexpr std::string_view k_rule_keys[] = {"id",       "title",   "severity",   "impact",     "verdict", "verdict_backends",
                                            "explains", "area",    "applies_to", "when",       "backend", "effect",
                                            "while_in", "message", "fixes",      "references", "tags",    "tests"};
constexpr std::string_view k_fix_kinds[] = {"pip", "env", "config", "hardware", "upgrade", "debug", "model"};
constexpr std::string_view k_backends[] = {"flash_attention", "fused_attention", "unfused_attention"};
constexpr std::string_view k_sub_backends[] = {"F16_max512_seqlen", "F16_arbitrary_seqlen", "FP8"};
// FlashAttention's flash-attn generations, which TE filters one by one (use_flash_attention_2/3/4).
constexpr std::string_view k_flash_sub_backends[] = {"FlashAttention2", "FlashAttention3", "FlashAttention4"};
constexpr std::string_view k_selection_backends[] = {"FlashAttention", "FusedAttention", "UnfusedDotProductAttention"};
const std::pair<std::string_view, std::string_view> k_applies_to[] = {
    {"te", "te.version"},         {"cudnn", "cudnn.version"}, {"torch", "torch.version"},          {"cuda", "cuda.runtime_version"},
    {"driver", "driver.version"}, {"nccl", "nccl.version"},   {"flash_attn", "flash_attn.version"}};

template <std::size_t N>
bool one_of(std::string_view value, const std::string_view (&set)[N]) {
  return std::find(std::begin(set), std::end(set), value) != std::end(set);
}
template <std::size_t N>
std::string list_of(const std::string_view (&set)[N]) {
  std::vector<std::string> names(std::begin(set), std::end(set));
  return util::join(names, ", ");
}

bool valid_id(std::string_view id) {
  if (id.empty() || id.front() == '-' || id.back() == '-' || id.size() > 100) return false;
  char previous = 0;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok || (c == '-' && previous == '-')) return false;
    previous = c;
  }
  return true;
}

std::string yaml_error_message(const std::string& msg) {
  std::string m = msg;
  if (!m.empty()) m[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(m[0])));
  return "malformed YAML: " + m;
}

class FileLoader {
public:
  FileLoader(const SourceFile& file, RuleSet::Impl& impl, std::vector<Diagnostic>& diagnostics, Registry& registry, TestCases tests)
      : m_file(file), m_impl(impl), m_diagnostics(diagnostics), m_registry(registry), m_tests(tests) {}

  void run(const ParsedFile& parsed) {
    if (!parsed.document) {
      const YamlError& problem = parsed.problem;
      m_diagnostics.push_back(
          m_file.at_mark(problem.mark.line, problem.mark.column, problem.limit ? problem.message : yaml_error_message(problem.message)));
      return;
    }
    walk(parsed.document->root());
  }

private:
  void error(const Node& node, std::string message, std::string hint = {}) {
    m_diagnostics.push_back(m_file.at_mark(node.Mark().line, node.Mark().column, std::move(message), std::move(hint)));
  }

  Location location(const Node& node) const {
    Diagnostic d = m_file.at_mark(node.Mark().line, node.Mark().column, "");
    return {d.file, d.line, d.column, d.source_line};
  }

  // The scalar at node, or nullopt with a diagnostic naming key.
  std::optional<std::string> scalar(const Node& node, std::string_view key) {
    if (!node.IsScalar()) {
      error(node, "'" + std::string(key) + "' must be a single value");
      return std::nullopt;
    }
    return node.Scalar();
  }

  std::vector<std::string> string_list(const Node& node, std::string_view key, std::vector<Location>* where = nullptr) {
    std::vector<std::string> out;
    if (!node.IsSequence()) {
      error(node, "'" + std::string(key) + "' must be a list");
      return out;
    }
    for (const auto& item : node) {
      if (auto s = scalar(item, key)) {
        out.push_back(*s);
        if (where) where->push_back(location(item));
      }
    }
    return out;
  }

  // Appends expression/template errors as diagnostics inside the scalar at node.
  void source_errors(const Node& node, const std::string& value, const std::vector<SourceError>& errors) {
    std::size_t start = m_file.mark_offset(node.Mark().line, node.Mark().column);
    for (const auto& e : errors) {
      std::size_t begin = m_file.value_offset(start, value, e.offset);
      std::size_t end = m_file.value_offset(start, value, std::min(e.offset + e.length, value.size()));
      std::size_t length = end > begin ? end - begin : e.length;
      m_diagnostics.push_back(m_file.at_offset(begin, length, e.message, e.hint));
    }
  }

  void walk(const Node& root) {
    if (root.IsNull()) return; // an empty file holds no rules
    if (!root.IsMap()) {
      error(root, "a rules file is a mapping with 'rules:' and optionally 'selection:' or 'packages:'");
      return;
    }
    for (const auto& entry : root) {
      std::string key = entry.first.Scalar();
      if (key == "rules") {
        if (!entry.second.IsSequence()) {
          if (!entry.second.IsNull()) error(entry.second, "'rules' must be a list of rules");
          continue;
        }
        for (const auto& rule : entry.second) load_rule(rule);
      } else if (key == "selection") {
        load_selection(entry.first, entry.second);
      } else if (key == "packages") {
        load_packages(entry.second);
      } else {
        error(entry.first, "unknown top-level key '" + key + "'", "a rules file has 'rules:', 'selection:' and 'packages:'");
      }
    }
  }

  void load_rule(const Node& node) {
    if (!node.IsMap()) {
      error(node, "a rule must be a mapping (id:, title:, severity:, when:, message:, ...)");
      return;
    }
    Rule rule;
    rule.at = location(node);
    rule.summary.file = m_file.name;
    rule.summary.line = rule.at.line;
    std::size_t before = m_diagnostics.size();
    std::map<std::string, Node> fields;
    for (const auto& entry : node) {
      std::string key = entry.first.Scalar();
      if (!one_of(key, k_rule_keys)) {
        std::string hint;
        for (auto known : k_rule_keys)
          if (util::edit_distance(key, known, 2) <= 2) hint = "did you mean '" + std::string(known) + "'?";
        error(entry.first, "unknown rule key '" + key + "'", hint.empty() ? "keys: " + list_of(k_rule_keys) : hint);
        continue;
      }
      if (fields.count(key)) error(entry.first, "duplicate key '" + key + "'");
      fields[key] = entry.second;
    }
    for (std::string_view required : {"id", "title", "severity", "when", "message"}) {
      if (!fields.count(std::string(required))) error(node, "rule without '" + std::string(required) + "'");
    }

    if (auto it = fields.find("id"); it != fields.end()) {
      if (auto id = scalar(it->second, "id")) {
        rule.summary.id = *id;
        rule.at = location(it->second);
        rule.summary.line = rule.at.line;
        if (!valid_id(*id)) {
          error(it->second, "invalid rule id '" + *id + "'", "lowercase letters and digits in words joined by '-': cudnn-too-old");
        } else if (auto seen = m_registry.ids.find(*id); seen != m_registry.ids.end()) {
          error(it->second, "duplicate rule id '" + *id + "'",
                "first defined at " + seen->second.file + ":" + std::to_string(seen->second.line));
        } else {
          m_registry.ids.emplace(*id, rule.at);
        }
      }
    }
    if (auto it = fields.find("title"); it != fields.end())
      if (auto s = scalar(it->second, "title")) rule.summary.title = *s;
    if (auto it = fields.find("severity"); it != fields.end()) {
      if (auto s = scalar(it->second, "severity")) {
        if (auto severity = model::parse_severity(*s)) rule.summary.severity = *severity;
        else error(it->second, "unknown severity '" + *s + "'", "error, warning or info");
      }
    }
    if (auto it = fields.find("impact"); it != fields.end())
      if (auto s = scalar(it->second, "impact")) {
        if (auto impact = model::parse_impact(*s)) rule.summary.impact = *impact;
        else error(it->second, "unknown impact '" + *s + "'", "wrong_results or runtime_failure");
      }
    rule.summary.area = std::filesystem::path(m_file.relative).stem().string();
    if (auto it = fields.find("area"); it != fields.end())
      if (auto s = scalar(it->second, "area")) rule.summary.area = *s;

    if (auto it = fields.find("applies_to"); it != fields.end()) load_applies_to(it->second, rule);

    if (auto it = fields.find("when"); it != fields.end()) {
      if (auto text = scalar(it->second, "when")) {
        rule.summary.when = *text;
        std::vector<SourceError> errors;
        auto condition = compile_condition(*text, m_impl.slots, errors);
        source_errors(it->second, *text, errors);
        if (condition) rule.when = std::move(*condition);
      }
    }
    if (auto it = fields.find("backend"); it != fields.end()) {
      if (auto s = scalar(it->second, "backend")) {
        rule.summary.backend = *s;
        auto dot = s->find('.');
        std::string backend = s->substr(0, dot);
        std::string sub = dot == std::string::npos ? "" : s->substr(dot + 1);
        bool known_sub = dot == std::string::npos || (backend == "fused_attention" && one_of(sub, k_sub_backends)) ||
                         (backend == "flash_attention" && one_of(sub, k_flash_sub_backends));
        if (!one_of(backend, k_backends) || !known_sub)
          error(it->second, "unknown backend '" + *s + "'",
                "one of " + list_of(k_backends) + ", fused_attention.<" + list_of(k_sub_backends) + ">, flash_attention.<" +
                    list_of(k_flash_sub_backends) + ">");
        rule.backend = backend;
        rule.sub_backend = sub;
      }
    }
    if (auto it = fields.find("effect"); it != fields.end()) {
      if (auto s = scalar(it->second, "effect")) {
        rule.summary.effect = *s;
        if (*s != "unavailable" && *s != "deprioritized") error(it->second, "unknown effect '" + *s + "'", "unavailable or deprioritized");
        else if (rule.backend.empty()) error(it->second, "'effect' only applies to rules with 'backend:'");
        else if (*s == "deprioritized" && !rule.sub_backend.empty())
          error(it->second, "a sub-backend cannot be deprioritized, only made unavailable");
        rule.deprioritized = *s == "deprioritized";
      }
    } else if (!rule.backend.empty()) {
      rule.summary.effect = "unavailable";
    }
    if (auto it = fields.find("while_in"); it != fields.end()) {
      if (auto s = scalar(it->second, "while_in")) {
        auto dot = s->find('.');
        rule.while_backend = s->substr(0, dot);
        rule.while_sub = dot == std::string::npos ? "" : s->substr(dot + 1);
        bool known = one_of(rule.while_backend, k_backends) &&
                     (rule.while_sub.empty() || one_of(rule.while_sub, k_sub_backends) || one_of(rule.while_sub, k_flash_sub_backends));
        if (!known) error(it->second, "unknown backend '" + *s + "'", "a backend or backend.<sub-backend>, as in 'backend:'");
        else if (rule.backend.empty()) error(it->second, "'while_in' only applies to rules with 'backend:'");
      }
    }

    bool templates_read_workload = false;
    bool templates_read_explain = false;
    auto compile = [&](const Node& at, const std::string& text) -> Template {
      std::vector<SourceError> errors;
      auto t = compile_template(text, m_impl.slots, errors);
      source_errors(at, text, errors);
      if (!t) return {};
      templates_read_workload |= t->reads_workload;
      templates_read_explain |= t->reads_explain;
      return std::move(*t);
    };
    if (auto it = fields.find("message"); it != fields.end()) {
      if (auto s = scalar(it->second, "message")) {
        rule.summary.message = *s;
        rule.message = compile(it->second, *s);
      }
    }
    if (auto it = fields.find("fixes"); it != fields.end()) {
      if (!it->second.IsSequence()) error(it->second, "'fixes' must be a list of {kind, command, description}");
      else
        for (const auto& fix : it->second) {
          if (!fix.IsMap()) {
            error(fix, "a fix is a mapping {kind, command, description}");
            continue;
          }
          CompiledFix compiled;
          model::Fix raw;
          for (const auto& entry : fix) {
            std::string key = entry.first.Scalar();
            auto value = scalar(entry.second, key);
            if (!value) continue;
            if (key == "kind") {
              raw.kind = *value;
              if (!one_of(*value, k_fix_kinds)) error(entry.second, "unknown fix kind '" + *value + "'", list_of(k_fix_kinds));
            } else if (key == "command") {
              raw.command = *value;
              compiled.command = compile(entry.second, *value);
            } else if (key == "description") {
              raw.description = *value;
            } else {
              error(entry.first, "unknown fix key '" + key + "'", "kind, command, description");
            }
          }
          if (raw.kind.empty()) error(fix, "fix without 'kind'");
          if (raw.command.empty() && raw.description.empty()) error(fix, "fix without 'command' or 'description'");
          compiled.kind = raw.kind;
          compiled.description = raw.description;
          rule.fixes.push_back(std::move(compiled));
          rule.summary.fixes.push_back(std::move(raw));
        }
    }
    if (auto it = fields.find("references"); it != fields.end())
      rule.summary.references = string_list(it->second, "references", &rule.reference_at);
    if (auto it = fields.find("tags"); it != fields.end()) rule.summary.tags = string_list(it->second, "tags");

    // Which phase the rule belongs to.
    if (!rule.backend.empty()) {
      rule.kind = RuleKind::backend;
      if (rule.when.reads_explain || templates_read_explain)
        error(fields.count("when") ? fields["when"] : node, "a backend filter cannot read explain.* (it runs before the selection)");
    } else if (rule.when.reads_workload || rule.when.reads_explain || templates_read_workload || templates_read_explain) {
      rule.kind = RuleKind::workload;
    }
    rule.summary.kind = rule.kind == RuleKind::backend ? "backend" : rule.kind == RuleKind::workload ? "workload" : "node";
    load_verdict(fields, rule);

    if (auto it = fields.find("tests"); it != fields.end()) load_tests(it->second, rule);
    if (m_tests == TestCases::compile) {
      rule.summary.fires_cases =
          static_cast<std::size_t>(std::count_if(rule.tests.begin(), rule.tests.end(), [](const auto& t) { return t.fires; }));
      rule.summary.quiet_cases = rule.tests.size() - rule.summary.fires_cases;
    }

    if (m_diagnostics.size() == before) m_impl.rules.push_back(std::move(rule));
  }

  // `verdict:` what the finding means for the verdict of the workloads it concerns, and
  // `verdict_backends:` (node rules) which selected backends it concerns. A workload rule without
  // `verdict:` takes its default from severity and impact (model/verdict.hpp); a backend filter
  // has none (it changes the selection itself).
  void load_verdict(std::map<std::string, Node>& fields, Rule& rule) {
    auto& summary = rule.summary;
    if (rule.kind == RuleKind::workload) {
      if (summary.severity == model::Severity::error) summary.verdict = model::VerdictEffect::fails;
      else if (summary.severity == model::Severity::warning && summary.impact != model::Impact::none)
        summary.verdict = model::VerdictEffect::at_risk;
    }
    if (auto it = fields.find("verdict"); it != fields.end()) {
      if (auto s = scalar(it->second, "verdict")) {
        if (*s == "none") summary.verdict = model::VerdictEffect::none;
        else if (auto effect = model::parse_verdict_effect(*s)) summary.verdict = *effect;
        else error(it->second, "unknown verdict '" + *s + "'", "fails, at_risk, unknown or none");
        if (rule.kind == RuleKind::backend) error(it->second, "'verdict' does not apply to a backend filter (it changes the selection)");
      }
    }
    if (auto it = fields.find("verdict_backends"); it != fields.end()) {
      summary.verdict_backends = string_list(it->second, "verdict_backends");
      for (const auto& b : summary.verdict_backends)
        if (!one_of(b, k_selection_backends))
          error(it->second, "unknown backend '" + b + "' in verdict_backends", list_of(k_selection_backends));
      if (summary.verdict == model::VerdictEffect::none) error(it->second, "'verdict_backends' needs 'verdict:'");
    }
    // `explains:` the self-test failure classes this finding explains (model/selftest_summary.hpp).
    if (auto it = fields.find("explains"); it != fields.end()) {
      summary.explains = string_list(it->second, "explains");
      for (const auto& c : summary.explains)
        if (!one_of(c, model::k_selftest_failure_classes))
          error(it->second, "unknown self-test failure class '" + c + "' in explains", list_of(model::k_selftest_failure_classes));
    }
  }

  void load_applies_to(const Node& node, Rule& rule) {
    if (!node.IsMap()) {
      error(node, "'applies_to' must be a mapping such as {te: \">=1.10,<2.1\"}");
      return;
    }
    for (const auto& entry : node) {
      std::string key = entry.first.Scalar();
      const auto* known = std::find_if(std::begin(k_applies_to), std::end(k_applies_to), [&](const auto& p) { return p.first == key; });
      if (known == std::end(k_applies_to)) {
        error(entry.first, "unknown applies_to key '" + key + "'", "te, cudnn, torch, cuda, driver, nccl, flash_attn");
        continue;
      }
      auto text = scalar(entry.second, key);
      if (!text) continue;
      auto range = model::VersionRange::parse(*text);
      if (!range) {
        error(entry.second, range.error().message);
        continue;
      }
      SourceError unused;
      auto spec = resolve_fact(known->second, m_impl.slots, unused);
      rule.applies_to.push_back({key, m_impl.slots.intern(*spec), std::move(*range)});
      rule.summary.applies_to.emplace_back(key, *text);
    }
  }

  void load_tests(const Node& node, Rule& rule) {
    if (!node.IsMap()) {
      error(node, "'tests' must be a mapping with 'fires:' and 'quiet:' lists");
      return;
    }
    for (const auto& entry : node) {
      std::string key = entry.first.Scalar();
      if (key != "fires" && key != "quiet") {
        error(entry.first, "unknown tests key '" + key + "'", "fires, quiet");
        continue;
      }
      if (!entry.second.IsSequence()) {
        error(entry.second, "'" + key + "' must be a list of fact maps");
        continue;
      }
      if (m_tests == TestCases::count) {
        auto& counter = key == "fires" ? rule.summary.fires_cases : rule.summary.quiet_cases;
        counter += entry.second.size();
        continue;
      }
      std::size_t index = 0;
      for (const auto& item : entry.second) {
        if (auto c = load_case(item)) {
          c->rule_id = rule.summary.id;
          c->fires = key == "fires";
          c->index = index;
          rule.tests.push_back(std::move(*c));
        }
        ++index;
      }
    }
  }

  // A flat map of facts and workload.* keys, typed like --set / --workload-set.
  std::optional<RuleTestCase> load_case(const Node& item) {
    if (!item.IsMap()) {
      error(item, "a test case is a flat mapping of fact names to values");
      return std::nullopt;
    }
    RuleTestCase c;
    Location at = location(item);
    c.file = at.file;
    c.line = at.line;
    c.column = at.column;
    bool ok = true;
    for (const auto& entry : item) {
      std::string key = entry.first.Scalar();
      auto value = scalar(entry.second, key);
      if (!value) {
        ok = false;
        continue;
      }
      if (key.starts_with("workload.")) {
        if (auto r = c.workload.set_text(key.substr(9), *value); !r) {
          error(entry.first, r.error().message);
          ok = false;
        }
      } else if (auto r = c.facts.apply_override(key + "=" + *value); !r) {
        std::string message = r.error().message;
        if (message.starts_with("--set")) message = "test case" + message.substr(5);
        error(entry.first, message);
        ok = false;
      }
    }
    c.facts.derive();
    c.workload.name = "test case";
    if (auto r = c.workload.complete(); !r) {
      error(item, "test case workload: " + r.error().message);
      ok = false;
    }
    if (!ok) return std::nullopt;
    return c;
  }

  std::vector<std::string> name_list(const Node& node, std::string_view key, const std::string_view* allowed_begin,
                                     const std::string_view* allowed_end) {
    std::vector<std::string> out;
    if (!node.IsSequence()) {
      error(node, "'" + std::string(key) + "' must be a list");
      return out;
    }
    for (const auto& item : node) {
      auto s = scalar(item, key);
      if (!s) continue;
      if (std::find(allowed_begin, allowed_end, *s) == allowed_end) {
        std::vector<std::string> names(allowed_begin, allowed_end);
        error(item, "unknown name '" + *s + "' in " + std::string(key), "one of " + util::join(names, ", "));
        continue;
      }
      out.push_back(*s);
    }
    return out;
  }

  void load_selection(const Node& key_node, const Node& node) {
    if (m_registry.selection_at) {
      error(key_node, "a second 'selection:' block",
            "the first is at " + m_registry.selection_at->file + ":" + std::to_string(m_registry.selection_at->line));
      return;
    }
    m_registry.selection_at = location(key_node);
    if (!node.IsMap()) {
      error(node, "'selection' must be a mapping with default_te_version and orders");
      return;
    }
    Selection selection;
    for (const auto& entry : node) {
      std::string key = entry.first.Scalar();
      if (key == "default_te_version") {
        auto s = scalar(entry.second, key);
        if (!s) continue;
        auto v = model::Version::parse(*s);
        if (!v) error(entry.second, v.error().message);
        else {
          selection.default_te_version = v->to_string();
          m_impl.default_te_version = *v;
        }
      } else if (key == "newest_te_modelled") {
        if (auto s = scalar(entry.second, key)) {
          if (auto v = model::Version::parse(*s)) selection.newest_te_modelled = v->to_string();
          else error(entry.second, v.error().message);
        }
      } else if (key == "modelled_sms") {
        if (!entry.second.IsSequence()) error(entry.second, "'modelled_sms' is a list of sm numbers (90, 100, ...)");
        else
          for (const auto& item : entry.second) {
            auto sm = scalar(item, key);
            auto n = sm ? util::parse_int(*sm) : std::nullopt;
            if (n) selection.modelled_sms.push_back(static_cast<long>(*n));
            else error(item, "'modelled_sms' is a list of sm numbers (90, 100, ...)");
          }
      } else if (key == "orders") {
        if (!entry.second.IsSequence()) {
          error(entry.second, "'orders' must be a list");
          continue;
        }
        for (const auto& order_node : entry.second) {
          if (!order_node.IsMap()) {
            error(order_node, "an order is a mapping {te, backends, fused_sub_backends, flash_sub_backends}");
            continue;
          }
          SelectionOrder order;
          for (const auto& field : order_node) {
            std::string name = field.first.Scalar();
            if (name == "te") {
              if (auto s = scalar(field.second, name)) {
                auto range = model::VersionRange::parse(*s);
                if (!range) error(field.second, range.error().message);
                else order.te = std::move(*range);
              }
            } else if (name == "backends") {
              order.backends = name_list(field.second, name, std::begin(k_selection_backends), std::end(k_selection_backends));
            } else if (name == "fused_sub_backends") {
              if (!field.second.IsMap()) {
                error(field.second, "'fused_sub_backends' maps a dtype (fp8, default, bf16, ...) to a list of sub-backends");
                continue;
              }
              for (const auto& sub : field.second) {
                std::string dtype = sub.first.Scalar();
                if (dtype != "default" && dtype != "fp8" && dtype != "bf16" && dtype != "fp16" && dtype != "fp32")
                  error(sub.first, "unknown dtype key '" + dtype + "'", "default, fp8, bf16, fp16, fp32");
                order.fused_sub_backends.emplace_back(dtype,
                                                      name_list(sub.second, dtype, std::begin(k_sub_backends), std::end(k_sub_backends)));
              }
            } else if (name == "flash_sub_backends") {
              order.flash_sub_backends = name_list(field.second, name, std::begin(k_flash_sub_backends), std::end(k_flash_sub_backends));
            } else {
              error(field.first, "unknown order key '" + name + "'", "te, backends, fused_sub_backends, flash_sub_backends");
            }
          }
          if (order.backends.empty()) error(order_node, "an order without 'backends'");
          selection.orders.push_back(std::move(order));
        }
      } else {
        error(entry.first, "unknown selection key '" + key + "'", "default_te_version, newest_te_modelled, modelled_sms, orders");
      }
    }
    m_impl.selection = std::move(selection);
  }

  // ---- the catalog of installable versions (`packages:`) ----------------------------------------
  static bool is_url(const std::string& s) { return s.starts_with("https://") || s.starts_with("http://"); }

  std::optional<model::VersionRange> range_field(const Node& node, std::string_view key) {
    auto s = scalar(node, key);
    if (!s) return std::nullopt;
    auto range = model::VersionRange::parse(*s);
    if (!range) {
      error(node, std::string(key) + ": " + range.error().message);
      return std::nullopt;
    }
    return std::move(*range);
  }

  std::optional<bool> bool_field(const Node& node, std::string_view key) {
    auto s = scalar(node, key);
    if (!s) return std::nullopt;
    if (*s == "true") return true;
    if (*s == "false") return false;
    error(node, "'" + std::string(key) + "' must be true or false");
    return std::nullopt;
  }

  std::vector<long> majors_field(const Node& node, std::string_view key) {
    std::vector<long> out;
    auto one = [&](const Node& item) {
      auto s = scalar(item, key);
      if (!s) return;
      auto n = util::parse_int(*s);
      if (!n || *n <= 0) error(item, "'" + std::string(key) + "' takes CUDA majors such as 12");
      else out.push_back(*n);
    };
    if (node.IsSequence()) {
      for (const auto& item : node) one(item);
    } else {
      one(node);
    }
    return out;
  }

  std::optional<model::Version> version_field(const Node& node, std::string_view key) {
    auto s = scalar(node, key);
    if (!s) return std::nullopt;
    auto v = model::Version::parse(*s);
    if (!v) {
      error(node, std::string(key) + ": " + v.error().message);
      return std::nullopt;
    }
    return std::move(*v);
  }

  // `driver: 525.60.13` (every CUDA major) or `driver: {"12": 525.60.13, "12/sm100": 570.26}`:
  // per CUDA major, optionally only on GPUs of at least that SM.
  std::vector<DriverFloor> driver_field(const Node& node) {
    std::vector<DriverFloor> out;
    if (!node.IsMap()) {
      if (auto v = version_field(node, "driver")) out.push_back({0, 0, *v});
      return out;
    }
    for (const auto& entry : node) {
      std::string key = entry.first.Scalar();
      std::string major_text = key, sm_text;
      if (auto slash = key.find("/sm"); slash != std::string::npos) {
        major_text = key.substr(0, slash);
        sm_text = key.substr(slash + 3);
      }
      auto major = util::parse_int(major_text);
      auto sm = sm_text.empty() ? std::optional<long long>(0) : util::parse_int(sm_text);
      if (!major || *major <= 0 || !sm || *sm < 0) {
        error(entry.first, "driver floors are keyed by CUDA major, optionally /smNNN", "driver: {\"12\": 525.60.13, \"12/sm100\": 570.26}");
        continue;
      }
      if (auto v = version_field(entry.second, "driver")) out.push_back({static_cast<long>(*major), static_cast<long>(*sm), *v});
    }
    return out;
  }

  std::vector<PackageRequirement> requirements_field(const Node& node) {
    std::vector<PackageRequirement> out;
    for (const auto& text : string_list(node, "requires")) {
      if (auto r = parse_requirement(text)) out.push_back(std::move(*r));
      else error(node, "requires: cannot read '" + text + "' as a requirement", "name and version range: nvidia-cudnn-frontend>=1.25.0");
    }
    return out;
  }

  // A release's fields; `defaults` is the package level (every release field may be given there).
  bool release_field(const std::string& key, const Node& value, PackageRelease& r) {
    if (key == "cuda") r.cuda_majors = majors_field(value, key);
    else if (key == "glibc") r.glibc = version_field(value, key);
    else if (key == "driver") r.driver = driver_field(value);
    else if (key == "requires") r.requirements = requirements_field(value);
    else if (key == "python") r.python = range_field(value, key);
    else if (key == "torch") r.torch = range_field(value, key);
    else if (key == "prebuilt") {
      if (auto b = bool_field(value, key)) r.prebuilt = *b;
    } else if (key == "prebuilt_torch") r.prebuilt_torch = range_field(value, key);
    else if (key == "prebuilt_python") r.prebuilt_python = range_field(value, key);
    else if (key == "build") {
      if (auto s = scalar(value, key)) r.build_note = *s;
    } else if (key == "source") {
      if (auto s = scalar(value, key)) {
        r.source = *s;
        if (!is_url(*s)) error(value, "source '" + *s + "' is not a URL", "cite the page the entry was taken from (https://...)");
      }
    } else {
      return false;
    }
    return true;
  }

  void load_packages(const Node& node) {
    if (!node.IsSequence()) {
      error(node, "'packages' must be a list of packages {name, fact, requirement, releases}");
      return;
    }
    for (const auto& item : node) {
      if (!item.IsMap()) {
        error(item, "a package is a mapping {name, fact, requirement, releases, ...}");
        continue;
      }
      Package package;
      PackageRelease defaults;
      package.file = m_file.name;
      package.line = location(item).line;
      std::size_t before = m_diagnostics.size();
      const Node* releases = nullptr;
      for (const auto& entry : item) {
        std::string key = entry.first.Scalar();
        if (key == "name" || key == "fact" || key == "library" || key == "requirement" || key == "note") {
          auto s = scalar(entry.second, key);
          if (!s) continue;
          if (key == "name") package.name = *s;
          else if (key == "fact") package.fact = *s;
          else if (key == "library") package.library = *s;
          else if (key == "requirement") package.requirement = *s;
          else package.note = *s;
        } else if (key == "pip_flags") {
          package.pip_flags = string_list(entry.second, key);
        } else if (key == "on_index") {
          if (auto b = bool_field(entry.second, key)) package.on_index = *b;
        } else if (key == "releases") {
          releases = &entry.second;
        } else if (!release_field(key, entry.second, defaults)) {
          error(entry.first, "unknown package key '" + key + "'",
                "name, fact, library, requirement, pip_flags, on_index, note, releases, and release defaults: "
                "cuda, python, torch, glibc, driver, requires, prebuilt, prebuilt_torch, prebuilt_python, build, source");
        }
      }
      if (package.name.empty()) error(item, "package without 'name'");
      if (m_registry.packages.count(normalize_distribution(package.name)))
        error(item, "package '" + package.name + "' is listed twice",
              "first at " + m_registry.packages[normalize_distribution(package.name)]);
      else if (!package.name.empty())
        m_registry.packages[normalize_distribution(package.name)] = m_file.name + ":" + std::to_string(package.line);
      if (package.fact.empty()) {
        error(item, "package without 'fact' (the fact an install sets, e.g. cudnn.version)");
      } else {
        const model::FactSpec* spec = model::find_fact_spec(package.fact);
        if (!spec || spec->type != model::ValueType::version)
          error(item, "package fact '" + package.fact + "' is not a version fact of the catalog");
      }
      if (package.requirement.empty()) error(item, "package without 'requirement'", "e.g. nvidia-cudnn-cu12=={version}");
      else if (package.on_index && package.requirement.find("{version}") == std::string::npos)
        error(item, "package requirement must contain {version} (or the package says on_index: false)",
              "e.g. nvidia-cudnn-cu12=={version}");
      if (!package.library.empty() && package.library != "cudnn" && package.library != "nccl")
        error(item, "unknown library '" + package.library + "'", "cudnn or nccl (shared-library wheels), or leave it out");
      if (!releases || !releases->IsSequence() || releases->size() == 0) {
        error(item, "package '" + package.name + "' without 'releases'");
      } else {
        for (const auto& r : *releases) {
          PackageRelease release = defaults;
          release.line = location(r).line;
          std::optional<std::string> version_text;
          if (r.IsScalar()) {
            version_text = r.Scalar();
          } else if (r.IsMap()) {
            for (const auto& entry : r) {
              std::string key = entry.first.Scalar();
              if (key == "version") version_text = scalar(entry.second, key);
              else if (!release_field(key, entry.second, release))
                error(entry.first, "unknown release key '" + key + "'",
                      "version, cuda, python, torch, glibc, driver, requires, prebuilt, prebuilt_torch, build, source");
            }
          } else {
            error(r, "a release is a version or a mapping {version, source, ...}");
            continue;
          }
          if (!version_text) {
            error(r, "release without 'version'");
            continue;
          }
          auto v = model::Version::parse(*version_text);
          if (!v) {
            error(r, v.error().message);
            continue;
          }
          release.version = std::move(*v);
          if (release.source.empty())
            error(r, "release " + *version_text + " of " + package.name + " has no source", "source: the URL it was taken from");
          if (!release.prebuilt && release.build_note.empty())
            error(r, "release " + *version_text + " builds from source but says nothing of the build", "build: what users report it costs");
          for (const auto& seen : package.releases)
            if (seen.version == release.version) error(r, "release " + *version_text + " of " + package.name + " is listed twice");
          package.releases.push_back(std::move(release));
        }
        std::sort(package.releases.begin(), package.releases.end(), [](const auto& a, const auto& b) { return a.version < b.version; });
      }
      if (m_diagnostics.size() == before) m_impl.catalog.packages.push_back(std::move(package));
    }
  }

  const SourceFile& m_file;
  RuleSet::Impl& m_impl;
  std::vector<Diagnostic>& m_diagnostics;
  Registry& m_registry;
  TestCases m_tests;
};

} // namespace

void compile_file(const SourceFile& file, const ParsedFile& parsed, RuleSet::Impl& impl, std::vector<Diagnostic>& diagnostics,
                  Registry& registry, TestCases tests) {
  FileLoader(file, impl, diagnostics, registry, tests).run(parsed);
}

namespace {

// What a directory entry that is not a regular file is, for the diagnostic.
std::string entry_kind(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto link = fs::symlink_status(path, ec);
  auto target = fs::status(path, ec);
  std::string via = fs::is_symlink(link) ? "a symlink to " : "";
  if (fs::is_symlink(link) && !fs::exists(target)) return "a dangling symlink";
  if (fs::is_fifo(target)) return via + "a FIFO";
  if (fs::is_character_file(target) || fs::is_block_file(target)) return via + "a device";
  if (fs::is_socket(target)) return via + "a socket";
  if (fs::is_directory(target)) return via + "a directory";
  return via + "not a regular file";
}

// The rules directories as a diagnostic names them all.
std::string joined(const std::vector<std::filesystem::path>& dirs) {
  std::vector<std::string> names;
  names.reserve(dirs.size());
  for (const auto& dir : dirs) names.push_back(dir.string());
  return util::join(names, ", ");
}

// What the walk of one rules directory may still spend: the tree caps of util/input_guard.hpp
// (the walk-depth and walk-entries caps every recursive walk of a tree keeps, then the
// rule-files and rules-size caps); past one the load is an error naming it and the directory.
struct RulesWalk {
  std::size_t entries = 0;
  std::size_t files = 0;
  bool stopped = false;
};

void over_cap(RulesWalk& walk, const std::filesystem::path& where, const std::string& what, std::vector<Diagnostic>& diagnostics) {
  walk.stopped = true;
  diagnostics.push_back({where.string(), 0, 0, 1, what, {}, {}});
}

// Every *.yaml below dir (relative to root, '/'-separated), in no particular order. Nothing is
// skipped in silence: an unreadable directory and a *.yaml that is not a regular file are
// diagnostics, so a rules set with a hole in it cannot pass for a smaller one (audit 2026-11-25,
// items 13 and 14). readdir's d_type says what most entries are: only links and entries of an
// unknown type are asked with a stat (a stat, a readlink per component and a canonical path per
// file were a third of loading the shipped rules).
void collect_rule_files(const std::filesystem::path& dir, const std::string& prefix, std::size_t depth, RulesWalk& walk,
                        std::vector<std::string>& relative, std::vector<Diagnostic>& diagnostics) {
  namespace fs = std::filesystem;
  auto entries = util::list_directory_entries(dir);
  if (!entries) {
    diagnostics.push_back({dir.string(), 0, 0, 1, "cannot read rules directory: " + entries.error().message, {}, {}});
    return;
  }
  walk.entries += entries->size();
  if (walk.entries > util::k_max_walk_entries)
    return over_cap(walk, dir,
                    "rules directories of " + util::past_cap("entries", util::k_max_walk_entries, "walk-entries cap") +
                        "; point the rules option at a directory that holds only rules",
                    diagnostics);
  for (const auto& entry : *entries) {
    if (walk.stopped) return;
    fs::path path = dir / entry.name;
    std::error_code ec;
    bool directory = entry.type == util::EntryType::directory;
    if (entry.type == util::EntryType::unknown) directory = fs::is_directory(fs::symlink_status(path, ec));
    // Directories are entered; symlinks to directories are not (as before: a rules tree is one tree).
    if (directory) {
      if (depth >= util::k_max_walk_depth) {
        over_cap(walk, path,
                 "rules directories nested " + util::past_cap("levels deep", util::k_max_walk_depth, "walk-depth cap") +
                     "; keep rules files fewer levels down",
                 diagnostics);
        return;
      }
      collect_rule_files(path, prefix + entry.name + "/", depth + 1, walk, relative, diagnostics);
      continue;
    }
    if (fs::path(entry.name).extension() != ".yaml") continue;
    if (entry.type != util::EntryType::regular && !fs::is_regular_file(fs::status(path, ec))) {
      diagnostics.push_back({path.string(), 0, 0, 1, "not a regular file (" + entry_kind(path) + "): not read as rules", {}, {}});
      continue;
    }
    if (++walk.files > util::k_max_rule_files)
      return over_cap(walk, dir, util::past_cap("rules files", util::k_max_rule_files, "rule-files cap") + "; put more rules in each file",
                      diagnostics);
    relative.push_back(prefix + entry.name);
  }
}

} // namespace

// The files are read on up to four threads (what compiling them uses): the reads, and the line
// index each file gets, were a quarter of loading the shipped rules on one.
std::vector<SourceFile> read_rule_files(const std::vector<std::filesystem::path>& dirs, std::vector<Diagnostic>& diagnostics) {
  struct Wanted {
    std::filesystem::path path;
    std::string relative;
    std::optional<SourceFile> file;
    std::string problem;
  };
  std::vector<Wanted> wanted;
  for (const auto& dir : dirs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
      diagnostics.push_back(
          {dir.string(), 0, 0, 1, "cannot read rules directory: " + (ec ? ec.message() : std::string("not a directory")), {}, {}});
      continue;
    }
    RulesWalk walk;
    std::vector<std::string> relative;
    collect_rule_files(dir, "", 0, walk, relative, diagnostics);
    if (walk.stopped) return {};
    std::sort(relative.begin(), relative.end());
    for (auto& rel : relative) wanted.push_back({dir / rel, std::move(rel), std::nullopt, {}});
  }
  // The rules-size cap is kept while reading: past it no thread reads another file, so what is
  // held stays within the cap and a file per thread.
  std::atomic<std::size_t> bytes{0};
  std::atomic<bool> over{false};
  util::parallel_for(wanted.size(), std::min(util::available_cpus(), k_compile_threads), [&](std::size_t i) {
    auto& w = wanted[i];
    if (over.load()) return;
    auto text = util::read_file(w.path, util::k_max_rule_file_bytes);
    if (!text) {
      // The diagnostic names the file; the reader's message does too.
      w.problem = text.error().message;
      if (w.problem.starts_with(w.path.string() + ": ")) w.problem.erase(0, w.path.string().size() + 2);
      return;
    }
    if (bytes.fetch_add(text->size()) + text->size() > util::k_max_rules_bytes) {
      over.store(true);
      return;
    }
    w.file.emplace(w.path.string(), w.relative, std::move(*text));
  });
  if (over.load()) {
    diagnostics.push_back(
        {joined(dirs),
         0,
         0,
         1,
         "rules files of " + util::past_cap("bytes together", util::k_max_rules_bytes, "rules-size cap") + "; load fewer rules",
         {},
         {}});
    return {};
  }
  std::vector<SourceFile> files;
  files.reserve(wanted.size());
  for (auto& w : wanted) {
    if (w.file) files.push_back(std::move(*w.file));
    else diagnostics.push_back({w.path.string(), 0, 0, 1, w.problem, {}, {}});
  }
  return files;
}

// "Nothing evaluated" is never OK: a rules set that loaded no rule at all is an error.
void require_some_rules(const RuleSet::Impl& impl, const std::vector<std::filesystem::path>& dirs, std::vector<Diagnostic>& diagnostics) {
  if (!impl.rules.empty() || !diagnostics.empty()) return;
  diagnostics.push_back({joined(dirs), 0, 0, 1, "no rules loaded: no *.yaml file here defines a rule", {}, {}});
}

} // namespace detail

LoadResult RuleSet::load(const std::vector<std::filesystem::path>& dirs, TestCases tests) {
  std::vector<Diagnostic> diagnostics;
  util::log::Laps laps("rules"); // -vv: where loading the rules goes
  auto files = detail::read_rule_files(dirs, diagnostics);
  laps.lap("files listed and read (" + std::to_string(files.size()) + ")");
  auto impl = detail::load_impl(files, diagnostics, tests);
  laps.lap("compiled and merged");
  detail::require_some_rules(*impl, dirs, diagnostics);
  LoadResult result;
  result.diagnostics = std::move(diagnostics);
  if (result.diagnostics.empty()) result.rules = RuleSet::from_impl(std::move(impl));
  return result;
}

LoadResult RuleSet::load_text(std::string_view text, std::string file) {
  std::vector<detail::SourceFile> files;
  std::string relative = std::filesystem::path(file).filename().string();
  files.emplace_back(std::move(file), std::move(relative), std::string(text));
  return detail::load_files(files, {});
}

} // namespace rules
