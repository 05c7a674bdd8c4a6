// The engine: evaluates compiled rules against a node (node findings) and against a node plus a
// workload (TE's backend selection, then the workload findings). Facts are read through a
// per-evaluation Frame that caches each slot's lookup, so a rule costs a few pointer reads and
// comparisons; the slow parts (evidence, rendering) only run for rules that fire.
//
// Backend selection models TE's get_attention_backend(): every filter rule whose condition holds
// takes its backend (or FusedAttention sub-backend) out with its message as the reason;
// FusedAttention survives when one of its sub-backends for the workload's dtype survives;
// `deprioritized` filters apply only to the backend that would otherwise be selected, when the next
// backend of the order is available (TE's "FlashAttention yields to FusedAttention"); the first
// available backend of the selection order wins.
#include "rules/loader_internal.hpp"
#include "rules/ruleset_impl.hpp"

#include "util/strings.hpp"

#include <algorithm>

namespace rules {

using detail::Element;
using detail::Rule;
using detail::RuleKind;

namespace {

// The facts visible to rules: an overlay (assumed te.version, explain.*), the workload, the node,
// and the rules database's own default TE release as doctor.assumed_te_version when the node's
// facts do not carry it (check sets it; explain and the rules' test cases get it here).
class View final : public detail::Scope {
public:
  View(const model::Facts& node, const model::Workload* workload, const model::Facts* overlay,
       const std::optional<model::Version>& assumed_te = std::nullopt)
      : m_node(node), m_workload(workload), m_overlay(overlay) {
    if (assumed_te) m_assumed_te = model::Value(*assumed_te);
  }

  const model::Value* get(std::string_view name) const override {
    // The overlay only holds an assumed te.version and explain.*.
    if (m_overlay && (name.starts_with("explain.") || name == "te.version"))
      if (const model::Value* v = m_overlay->get(name)) return v;
    if (name.starts_with("workload.")) return m_workload ? m_workload->get(name.substr(9)) : nullptr;
    const model::Value* v = m_node.get(name);
    if (!v && m_assumed_te && name == "doctor.assumed_te_version") return &*m_assumed_te;
    return v;
  }
  std::size_t count(std::string_view collection) const override { return m_node.count(collection); }

private:
  const model::Facts& m_node;
  const model::Workload* m_workload;
  const model::Facts* m_overlay;
  std::optional<model::Value> m_assumed_te;
};

class Frame final : public detail::Reader {
public:
  Frame(const View& view, const detail::SlotTable& table)
      : m_view(view), m_table(table), m_cache(table.slots().size(), nullptr), m_known(table.slots().size(), 0),
        m_counts(table.collections().size(), 0), m_counted(table.collections().size(), 0) {}

  const model::Value* fact(int slot) override {
    const detail::SlotSpec& spec = m_table.slots()[static_cast<std::size_t>(slot)];
    if (spec.collection < 0) {
      if (!m_known[static_cast<std::size_t>(slot)]) {
        m_cache[static_cast<std::size_t>(slot)] = m_view.get(spec.name);
        m_known[static_cast<std::size_t>(slot)] = 1;
      }
      const model::Value* v = m_cache[static_cast<std::size_t>(slot)];
      if (m_evidence) record(spec.name, v);
      return v;
    }
    const std::string& prefix = m_table.collections()[static_cast<std::size_t>(spec.collection)];
    m_name.assign(prefix).append("[").append(std::to_string(m_element.index)).append("].").append(spec.field);
    const model::Value* v = m_element.collection == spec.collection ? m_view.get(m_name) : nullptr;
    if (m_evidence) record(m_name, v);
    return v;
  }

  std::size_t count(int collection) override {
    auto c = static_cast<std::size_t>(collection);
    if (!m_counted[c]) {
      m_counts[c] = m_view.count(m_table.collections()[c]);
      m_counted[c] = 1;
    }
    return m_counts[c];
  }

  void set_element(Element element) { m_element = element; }
  void track(std::vector<std::pair<std::string, std::string>>* evidence) { m_evidence = evidence; }
  const View& view() const { return m_view; }

private:
  void record(const std::string& name, const model::Value* v) {
    for (const auto& [n, value] : *m_evidence)
      if (n == name) return;
    m_evidence->emplace_back(name, v ? v->to_string() : "absent");
  }

  const View& m_view;
  const detail::SlotTable& m_table;
  std::vector<const model::Value*> m_cache;
  std::vector<unsigned char> m_known;
  std::vector<std::size_t> m_counts;
  std::vector<unsigned char> m_counted;
  Element m_element;
  std::vector<std::pair<std::string, std::string>>* m_evidence = nullptr;
  std::string m_name;
};

bool applies(const RuleSet::Impl& impl, const Rule& rule, Frame& frame) {
  for (const auto& a : rule.applies_to) {
    const model::Value* v = frame.fact(a.slot);
    if (!v && a.key == "te" && impl.default_te_version) {
      if (!a.range.contains(*impl.default_te_version)) return false;
      continue;
    }
    if (!v || !v->is(model::ValueType::version) || !a.range.contains(v->as_version())) return false;
  }
  return true;
}

// The elements (or the single non-collection evaluation) for which the rule's condition holds.
void firing_elements(const Rule& rule, Frame& frame, std::vector<Element>& out) {
  out.clear();
  if (rule.when.collection < 0) {
    frame.set_element({});
    if (detail::evaluate(rule.when, frame)) out.push_back({});
    return;
  }
  for (std::size_t i = 0, n = frame.count(rule.when.collection); i < n; ++i) {
    Element element{rule.when.collection, i};
    frame.set_element(element);
    if (detail::evaluate(rule.when, frame)) out.push_back(element);
  }
}

std::vector<model::Fix> render_fixes(const RuleSet::Impl& impl, const Rule& rule, const View& view, Element element) {
  std::vector<model::Fix> fixes;
  for (std::size_t i = 0; i < rule.fixes.size(); ++i) {
    const auto& fix = rule.fixes[i];
    std::string command = detail::render_template(fix.command, impl.slots, view, element, detail::RenderMode::command);
    // A fix that was only a helper with nothing to do here ({{cudnn_path_fix}}) disappears.
    if (command.empty() && !rule.summary.fixes[i].command.empty()) continue;
    fixes.push_back(model::Fix{fix.kind, std::move(command), fix.description, {}, std::nullopt, {}});
  }
  return fixes;
}

model::Finding make_finding(const RuleSet::Impl& impl, const Rule& rule, Frame& frame, Element element) {
  model::Finding f;
  f.id = rule.summary.id;
  f.severity = rule.summary.severity;
  f.title = rule.summary.title;
  f.area = rule.summary.area;
  f.references = rule.summary.references;
  f.tags = rule.summary.tags;
  frame.set_element(element);
  frame.track(&f.evidence);
  detail::evaluate(rule.when, frame);
  frame.track(nullptr);
  f.message = std::string(util::trim(detail::render_template(rule.message, impl.slots, frame.view(), element, detail::RenderMode::message)));
  f.fixes = render_fixes(impl, rule, frame.view(), element);
  return f;
}

std::vector<model::Finding> node_findings(const RuleSet::Impl& impl, const model::Facts& facts, const Rule* only) {
  View view(facts, nullptr, nullptr, impl.default_te_version);
  Frame frame(view, impl.slots);
  std::vector<model::Finding> findings;
  std::vector<Element> elements;
  for (const auto& rule : impl.rules) {
    if (rule.kind != RuleKind::node || (only && &rule != only)) continue;
    if (!applies(impl, rule, frame)) continue;
    firing_elements(rule, frame, elements);
    for (auto element : elements) findings.push_back(make_finding(impl, rule, frame, element));
  }
  return findings;
}

std::string backend_key(std::string_view selection_name) {
  if (selection_name == "FlashAttention") return "flash_attention";
  if (selection_name == "FusedAttention") return "fused_attention";
  return "unfused_attention";
}

const SelectionOrder& pick_order(const Selection& selection, const std::optional<model::Version>& te) {
  for (const auto& order : selection.orders) {
    if (!order.te) return order;
    if (te && order.te->contains(*te)) return order;
  }
  return selection.orders.front();
}

const std::vector<std::string>* sub_backend_order(const SelectionOrder& order, const model::Workload& workload) {
  const model::Value* dtype = workload.get("qkv_dtype");
  const model::Value* fp8_dpa = workload.get("fp8_dpa");
  std::string key = dtype && dtype->is(model::ValueType::string) ? dtype->as_string() : "default";
  if (fp8_dpa && fp8_dpa->is(model::ValueType::boolean) && fp8_dpa->as_bool()) key = "fp8";
  for (const auto& [name, list] : order.fused_sub_backends)
    if (name == key) return &list;
  if (key == "fp8") return nullptr; // no FP8 sub-backend in this order: FusedAttention cannot run FP8
  for (const auto& [name, list] : order.fused_sub_backends)
    if (name == "default") return &list;
  return nullptr;
}

// explain with an optional restriction to one rule (for the rules' own test cases): a backend
// rule is then the only filter; a workload rule the only workload rule, after the full selection.
model::Explanation explain_impl(const RuleSet::Impl& impl, const model::Facts& node, const model::Workload& workload, const Rule* only) {
  model::Explanation ex;
  ex.workload = workload;
  model::Facts overlay;
  std::optional<model::Version> te = node.get_version("te.version");
  if (te) {
    ex.te_version = te->to_string();
  } else if (impl.default_te_version) {
    te = impl.default_te_version;
    overlay.set("te.version", *te);
    ex.te_version = te->to_string();
    ex.te_version_assumed = true;
  }
  View view(node, &workload, &overlay, impl.default_te_version);
  const SelectionOrder& order = pick_order(impl.selection, te);

  struct Out {
    bool out = false;
    std::vector<model::Reason> reasons;
    std::vector<model::Reason> deprioritized;
  };
  std::map<std::string, Out, std::less<>> backends{{"flash_attention", {}}, {"fused_attention", {}}, {"unfused_attention", {}}};
  std::map<std::string, Out, std::less<>> subs;
  {
    Frame frame(view, impl.slots);
    std::vector<Element> elements;
    for (const auto& rule : impl.rules) {
      if (rule.kind != RuleKind::backend) continue;
      if (only && only->kind == RuleKind::backend && &rule != only) continue;
      if (!applies(impl, rule, frame)) continue;
      firing_elements(rule, frame, elements);
      for (auto element : elements) {
        model::Reason reason;
        reason.rule = rule.summary.id;
        reason.message = std::string(util::trim(detail::render_template(rule.message, impl.slots, view, element, detail::RenderMode::message)));
        reason.fixes = render_fixes(impl, rule, view, element);
        Out& target = rule.sub_backend.empty() ? backends[rule.backend] : subs[rule.sub_backend];
        // A per-GPU rule fires once per GPU; eight identical A100s are one reason, not eight.
        auto same = [&](const model::Reason& r) { return r.rule == reason.rule && r.message == reason.message; };
        if (std::any_of(target.reasons.begin(), target.reasons.end(), same) ||
            std::any_of(target.deprioritized.begin(), target.deprioritized.end(), same))
          continue;
        if (rule.deprioritized) {
          target.deprioritized.push_back(std::move(reason));
        } else {
          target.out = true;
          target.reasons.push_back(std::move(reason));
        }
      }
    }
  }

  // FusedAttention: the first surviving sub-backend for the workload's dtype.
  std::optional<std::string> sub_backend;
  Out& fused = backends["fused_attention"];
  if (const auto* candidates = sub_backend_order(order, workload)) {
    for (const auto& name : *candidates) {
      auto it = subs.find(name);
      if (it == subs.end() || !it->second.out) {
        if (!sub_backend) sub_backend = name;
        continue;
      }
      for (auto& reason : it->second.reasons) fused.reasons.push_back(std::move(reason));
    }
    if (!sub_backend) fused.out = true;
  } else {
    fused.out = true;
    fused.reasons.push_back({"", "no FusedAttention sub-backend handles this dtype in the selection for TE " + ex.te_version, {}});
  }

  // FlashAttention: TE filters flash-attn 2, 3 and 4 one by one and uses the newest that is left.
  std::optional<std::string> flash_sub;
  if (!order.flash_sub_backends.empty()) {
    Out& flash = backends["flash_attention"];
    for (const auto& name : order.flash_sub_backends) {
      auto it = subs.find(name);
      if (it == subs.end() || !it->second.out) {
        if (!flash_sub) flash_sub = name;
        continue;
      }
      for (auto& reason : it->second.reasons) flash.reasons.push_back(std::move(reason));
    }
    if (!flash_sub) flash.out = true;
  }

  for (auto& [key, out] : backends) {
    model::BackendVerdict verdict;
    verdict.available = !out.out;
    verdict.reasons = std::move(out.reasons);
    ex.backends[key] = std::move(verdict);
  }
  for (std::size_t i = 0; i < order.backends.size(); ++i) {
    const std::string& name = order.backends[i];
    std::string key = backend_key(name);
    model::BackendVerdict& verdict = ex.backends[key];
    if (!verdict.available) continue;
    // TE yields for performance only to the next backend of the order (FlashAttention to
    // FusedAttention on Hopper+), and only when that one takes the workload.
    bool next_available = i + 1 < order.backends.size() && ex.backends[backend_key(order.backends[i + 1])].available;
    if (!backends[key].deprioritized.empty() && next_available) {
      verdict.available = false;
      verdict.deprioritized = true;
      for (auto& reason : backends[key].deprioritized) verdict.reasons.push_back(std::move(reason));
      continue;
    }
    ex.selected = name;
    break;
  }
  if (ex.backends["fused_attention"].available) ex.backends["fused_attention"].sub_backend = sub_backend;
  // The generation TE would run also when FlashAttention yields to FusedAttention on Hopper+.
  if (ex.backends["flash_attention"].available || ex.backends["flash_attention"].deprioritized)
    ex.backends["flash_attention"].sub_backend = flash_sub;

  if (only && only->kind == RuleKind::backend) return ex;
  overlay.set("explain.selected", ex.selected.value_or("none"));
  if (ex.backends["fused_attention"].sub_backend) overlay.set("explain.fused_sub_backend", *ex.backends["fused_attention"].sub_backend);
  if (ex.backends["flash_attention"].sub_backend) overlay.set("explain.flash_sub_backend", *ex.backends["flash_attention"].sub_backend);
  for (const auto& [key, verdict] : ex.backends) overlay.set("explain." + key + ".available", verdict.available);

  Frame frame(view, impl.slots);
  std::vector<Element> elements;
  for (const auto& rule : impl.rules) {
    if (rule.kind != RuleKind::workload || (only && &rule != only)) continue;
    if (!applies(impl, rule, frame)) continue;
    firing_elements(rule, frame, elements);
    for (auto element : elements) {
      ex.findings.push_back(make_finding(impl, rule, frame, element));
      ex.findings.back().workload = workload.name;
    }
  }
  return ex;
}

Diagnostic at_location(const detail::Location& at, std::string message, std::string hint = {}) {
  Diagnostic d;
  d.file = at.file;
  d.line = at.line;
  d.column = at.column;
  d.source_line = at.source_line;
  d.message = std::move(message);
  d.hint = std::move(hint);
  return d;
}

} // namespace

std::vector<RuleSummary> RuleSet::rule_summaries() const {
  std::vector<RuleSummary> out;
  for (const auto& rule : m_impl->rules) out.push_back(rule.summary);
  return out;
}

std::size_t RuleSet::size() const { return m_impl->rules.size(); }
const std::string& RuleSet::digest() const { return m_impl->digest; }
const Selection& RuleSet::selection() const { return m_impl->selection; }
const Catalog& RuleSet::catalog() const { return m_impl->catalog; }

std::vector<RuleTestCase> RuleSet::test_cases() const {
  std::vector<RuleTestCase> out;
  for (const auto& rule : m_impl->rules) out.insert(out.end(), rule.tests.begin(), rule.tests.end());
  return out;
}

std::vector<model::Finding> evaluate_node(const RuleSet& rules, const model::Facts& facts) {
  return node_findings(rules.impl(), facts, nullptr);
}

model::Explanation explain(const RuleSet& rules, const model::Facts& node_facts, const model::Workload& workload) {
  return explain_impl(rules.impl(), node_facts, workload, nullptr);
}

std::optional<std::string> run_test_case(const RuleSet& rules, const RuleTestCase& test_case) {
  const auto& impl = rules.impl();
  const Rule* rule = nullptr;
  for (const auto& r : impl.rules)
    if (r.summary.id == test_case.rule_id) rule = &r;
  if (!rule) return "no rule '" + test_case.rule_id + "'";
  bool fired = false;
  std::string seen;
  if (rule->kind == RuleKind::node) {
    auto findings = node_findings(impl, test_case.facts, rule);
    fired = !findings.empty();
    if (fired) seen = findings.front().message;
  } else {
    auto ex = explain_impl(impl, test_case.facts, test_case.workload, rule);
    for (const auto& finding : ex.findings)
      if (finding.id == rule->summary.id) fired = true, seen = finding.message;
    for (const auto& [key, verdict] : ex.backends)
      for (const auto& reason : verdict.reasons)
        if (reason.rule == rule->summary.id) fired = true, seen = key + ": " + reason.message;
    if (!fired && rule->kind == RuleKind::backend)
      seen = "selected " + ex.selected.value_or("none") + " with TE " + ex.te_version;
  }
  std::string where = test_case.file + ":" + std::to_string(test_case.line) + ": ";
  if (test_case.fires && !fired)
    return where + "rule " + rule->summary.id + " did not fire on its 'fires' case #" + std::to_string(test_case.index + 1) +
           (seen.empty() ? "" : " (" + seen + ")");
  if (!test_case.fires && fired)
    return where + "rule " + rule->summary.id + " fired on its 'quiet' case #" + std::to_string(test_case.index + 1) + ": " + seen;
  return std::nullopt;
}

std::vector<Diagnostic> lint(const std::vector<std::filesystem::path>& dirs) {
  std::vector<Diagnostic> diagnostics;
  auto files = detail::read_rule_files(dirs, diagnostics);
  std::shared_ptr<const RuleSet::Impl> loaded = detail::load_impl(files, diagnostics);
  // The rules that loaded are checked even when others did not: one run shows every problem.
  RuleSet rule_set = RuleSet::from_impl(loaded);
  std::vector<Diagnostic> out = std::move(diagnostics);
  for (const auto& rule : loaded->rules) {
    const std::string& id = rule.summary.id;
    if (rule.summary.references.empty())
      out.push_back(at_location(rule.at, "rule " + id + " has no references",
                                "cite TE/cuDNN source at a tag (with #Lnn), an issue or release notes"));
    for (std::size_t i = 0; i < rule.summary.references.size(); ++i) {
      const std::string& ref = rule.summary.references[i];
      if (!ref.starts_with("https://") && !ref.starts_with("http://"))
        out.push_back(at_location(rule.reference_at[i], "reference '" + ref + "' of rule " + id + " is not a URL"));
    }
    if (rule.summary.fires_cases == 0) out.push_back(at_location(rule.at, "rule " + id + " has no 'fires' test case"));
    if (rule.summary.quiet_cases == 0) out.push_back(at_location(rule.at, "rule " + id + " has no 'quiet' test case"));
    for (const auto& test_case : rule.tests) {
      if (auto failure = run_test_case(rule_set, test_case)) {
        Diagnostic d;
        d.file = test_case.file;
        d.line = test_case.line;
        d.column = test_case.column;
        for (const auto& file : files)
          if (file.name == test_case.file) d.source_line = file.line_text(test_case.line);
        std::string where = test_case.file + ":" + std::to_string(test_case.line) + ": ";
        d.message = failure->starts_with(where) ? failure->substr(where.size()) : *failure;
        out.push_back(std::move(d));
      }
    }
  }
  return out;
}

} // namespace rules
