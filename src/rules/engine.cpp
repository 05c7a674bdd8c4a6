// The engine: evaluates compiled rules against a node (node findings) and against a node plus a
// workload (TE's backend selection, then the workload findings). Facts are read through a
// per-evaluation Frame that caches each slot's lookup, so a rule costs a few pointer reads and
// comparisons; the slow parts (evidence, rendering) only run for rules that fire. On a node
// explained many times (a sweep, the bench) each rule's condition is folded with what the node
// decides and the simple tests rules share are made once an explain (engine_frame.hpp, NodeMemo).
//
// Backend selection models TE's get_attention_backend(): every filter rule whose condition holds
// takes its backend (or FusedAttention sub-backend) out with its message as the reason;
// FusedAttention survives when one of its sub-backends for the workload's dtype survives;
// `deprioritized` filters apply only to the backend that would otherwise be selected, when the next
// backend of the order is available (TE's "FlashAttention yields to FusedAttention"); the first
// available backend of the selection order wins. Before any rule, the workload goes through
// model::selector_inputs: what DotProductAttention itself does to its inputs (model/dpa_inputs.hpp).
#include "rules/evaluator.hpp"
#include "rules/engine_frame.hpp"
#include "rules/loader_internal.hpp"
#include "rules/node_rules.hpp"
#include "rules/ruleset_impl.hpp"

#include "model/dpa_inputs.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <charconv>
#include <array>

namespace rules {

using detail::Element;
using detail::Rule;
using detail::RuleKind;

namespace {

using engine::Frame;
using engine::NodeMemo;
using engine::View;

std::size_t rule_index(const RuleSet::Impl& impl, const Rule& rule) { return static_cast<std::size_t>(&rule - impl.rules.data()); }

bool applies_uncached(const RuleSet::Impl& impl, const Rule& rule, Frame& frame) {
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

// Whether the rule's applies_to ranges hold: remembered per node when they read node facts only
// (te.version included: when the node has none it is the database's assumed release).
// The first time on a node; applies() below answers from the memo after that, inline (it runs
// for every rule an explain visits).
[[gnu::noinline]] bool applies_first(const RuleSet::Impl& impl, const Rule& rule, Frame& frame) {
  NodeMemo& memo = frame.memo();
  auto index = static_cast<std::size_t>(&rule - impl.rules.data());
  bool holds = applies_uncached(impl, rule, frame);
  bool node_only = std::all_of(rule.applies_to.begin(), rule.applies_to.end(), [&](const auto& a) {
    return a.slot >= 0 && (memo.state[static_cast<std::size_t>(a.slot)] != 2 ||
                           impl.slots.slots()[static_cast<std::size_t>(a.slot)].name == "te.version");
  });
  if (node_only) memo.applies[index] = holds ? 1 : 0;
  return holds;
}

[[gnu::always_inline]] inline bool applies(const RuleSet::Impl& impl, const Rule& rule, Frame& frame) {
  if (rule.applies_to.empty()) return true;
  signed char known = frame.memo().applies[rule_index(impl, rule)];
  return known >= 0 ? known != 0 : applies_first(impl, rule, frame);
}

// A key naming a test that can guard a rule (NodeMemo::guards): a flag, has(), or a comparison
// of one non-collection slot with another or with a literal or a list of them (boolean,
// integer, number or string, written so that equal keys are equal literals); nullopt for
// anything else. Equal keys are the same test.
std::optional<std::string> guard_key(const RuleSet::Impl& impl, const detail::Condition& c, int node) {
  const detail::Node& n = c.nodes[static_cast<std::size_t>(node)];
  auto slot = [&](const detail::Operand& o) -> std::optional<std::string> {
    if (o.kind != detail::Operand::Kind::fact || impl.slots.slots()[static_cast<std::size_t>(o.index)].collection >= 0) return std::nullopt;
    return "s" + std::to_string(o.index);
  };
  auto literal = [](const model::Value& v) -> std::optional<std::string> {
    if (v.is(model::ValueType::boolean) || v.is(model::ValueType::integer))
      return std::to_string(static_cast<int>(v.type())) + v.to_string();
    if (v.is(model::ValueType::number)) {
      char text[64];
      auto [end, error] = std::to_chars(std::begin(text), std::end(text), v.as_double()); // shortest exact form
      if (error != std::errc{}) return std::nullopt;
      return "n" + std::string(text, end);
    }
    if (v.is(model::ValueType::string)) return "t" + std::to_string(v.as_string().size()) + ":" + v.as_string();
    return std::nullopt;
  };
  switch (n.kind) {
  case detail::NodeKind::fact_true:
  case detail::NodeKind::has: {
    auto s = slot(n.lhs);
    if (!s) return std::nullopt;
    return (n.kind == detail::NodeKind::has ? "h" : "f") + *s;
  }
  case detail::NodeKind::compare: {
    auto s = slot(n.lhs);
    if (!s) return std::nullopt;
    if (auto other = slot(n.rhs)) return "c" + std::to_string(static_cast<int>(n.op)) + *s + "=" + *other;
    if (n.rhs.kind != detail::Operand::Kind::literal) return std::nullopt;
    auto l = literal(n.rhs.literal);
    if (!l) return std::nullopt;
    return "c" + std::to_string(static_cast<int>(n.op)) + *s + "=" + *l;
  }
  case detail::NodeKind::in_list: {
    auto s = slot(n.lhs);
    if (!s) return std::nullopt;
    std::string key = std::string(n.flag ? "L" : "l") + *s;
    for (const auto& item : n.list) {
      auto l = literal(item);
      if (!l) return std::nullopt;
      key += "," + *l;
    }
    return key;
  }
  default: return std::nullopt;
  }
}

// The conjuncts of the subtree at `node` (negated when `negated`): the children of an `and`, of
// a `not` over an `or` (De Morgan: not (a or b) is not a and not b), and so on down; each a node
// and whether it is negated.
void conjuncts_of(const detail::Condition& c, int node, bool negated, std::vector<std::pair<int, bool>>& out) {
  const detail::Node& n = c.nodes[static_cast<std::size_t>(node)];
  if (n.kind == (negated ? detail::NodeKind::any : detail::NodeKind::all)) {
    for (int child : n.children) conjuncts_of(c, child, negated, out);
  } else if (n.kind == detail::NodeKind::negate) {
    conjuncts_of(c, n.children[0], !negated, out);
  } else {
    out.emplace_back(node, negated);
  }
}

// The guard for a test node of `c` (negated or not) in the node's table, added when new.
int intern_guard(NodeMemo& memo, const detail::Condition& c, int node, bool negated, std::string key) {
  if (negated) key = "!" + key;
  auto [it, added] = memo.guard_keys.try_emplace(std::move(key), static_cast<int>(memo.guards.size()));
  if (added) {
    NodeMemo::Guard guard;
    guard.negated = negated;
    guard.test = c.nodes[static_cast<std::size_t>(node)];
    memo.guards.push_back(std::move(guard));
    memo.guard_stamp.push_back(0);
    memo.guard_value.push_back(0);
  }
  return it->second;
}

// The rule's plan (NodeMemo::Plan), worked out the first time the rule is folded for a database.
const NodeMemo::Plan& plan_of(const RuleSet::Impl& impl, NodeMemo& memo, std::size_t index) {
  NodeMemo::Plan& plan = memo.plans[index];
  if (plan.known) return plan;
  const detail::Condition& c = impl.rules[index].when;
  plan.fixed = detail::fixed_nodes(c, memo.fixed_slots);
  plan.guard.assign(c.nodes.size(), -1);
  plan.guard_negated.assign(c.nodes.size(), -1);
  for (std::size_t node = 0; node < c.nodes.size(); ++node) {
    if (plan.fixed[node]) continue; // folded away on every node
    if (auto key = guard_key(impl, c, static_cast<int>(node))) {
      plan.guard[node] = intern_guard(memo, c, static_cast<int>(node), false, *key);
      plan.guard_negated[node] = intern_guard(memo, c, static_cast<int>(node), true, std::move(*key));
    }
  }
  plan.known = true;
  return plan;
}

// A group's guards, rest and leaf guards from its folded condition and the rule's plan.
void add_guards(const NodeMemo::Plan& plan, NodeMemo::Folded& group, const std::vector<int>& origin) {
  const detail::Condition& c = group.when;
  if (c.root < 0) return;
  auto guard_of = [&](int node, bool negated) {
    int from = origin[static_cast<std::size_t>(node)];
    if (from < 0) return -1;
    return (negated ? plan.guard_negated : plan.guard)[static_cast<std::size_t>(from)];
  };
  std::vector<std::pair<int, bool>> tests;
  conjuncts_of(c, c.root, false, tests);
  for (auto [node, negated] : tests) {
    if (int g = guard_of(node, negated); g >= 0) group.guards.push_back(g);
    else group.rest.emplace_back(node, negated);
  }
  group.leaf_guard.assign(c.nodes.size(), -1);
  for (std::size_t node = 0; node < c.nodes.size(); ++node) group.leaf_guard[node] = guard_of(static_cast<int>(node), false);
}

// The subtree at `node` of a group's folded condition: its simple tests through the node's
// guards (each made once an explain), the rest by the evaluator.
bool evaluate_folded(const NodeMemo::Folded& group, int node, Frame& frame) {
  if (int g = group.leaf_guard[static_cast<std::size_t>(node)]; g >= 0) return frame.guard(static_cast<std::size_t>(g));
  const detail::Node& n = group.when.nodes[static_cast<std::size_t>(node)];
  switch (n.kind) {
  case detail::NodeKind::all:
    return std::all_of(n.children.begin(), n.children.end(), [&](int child) { return evaluate_folded(group, child, frame); });
  case detail::NodeKind::any:
    return std::any_of(n.children.begin(), n.children.end(), [&](int child) { return evaluate_folded(group, child, frame); });
  case detail::NodeKind::negate: return !evaluate_folded(group, n.children[0], frame);
  default: return detail::evaluate_node_with(group.when, node, frame);
  }
}

// Whether the rule can fire on this node for some workload: its condition folded with what the
// node decides, per element of its collection (NodeMemo::folded), the first time on a node
// (explain's backend and workload rules only: node rules are read through a View without the
// assumed TE release, so the same slot can read differently there).
[[gnu::noinline]] bool fold_first(const RuleSet::Impl& impl, const Rule& rule, Frame& frame) {
  auto index = rule_index(impl, rule);
  const NodeMemo::Plan& plan = plan_of(impl, frame.memo(), index); // memo.plans is not resized below
  std::vector<NodeMemo::Folded> groups;
  // Per outcome of the node's subtrees seen, its group (-1: the condition folded to false).
  std::vector<std::pair<std::vector<unsigned char>, int>> seen;
  std::vector<unsigned char> decisions;
  auto add = [&](Element element) {
    frame.set_element(element);
    decisions.clear();
    // The same outcomes for the node's subtrees build the same folded condition: eight alike
    // GPUs are folded once.
    detail::fold_decisions(rule.when, plan.fixed, frame, decisions);
    for (const auto& [outcomes, group] : seen)
      if (outcomes == decisions) {
        if (group >= 0) groups[static_cast<std::size_t>(group)].elements.push_back(element);
        return;
      }
    detail::Folded folded = detail::fold(rule.when, plan.fixed, frame);
    if (folded.constant == 0) {
      seen.emplace_back(decisions, -1);
      return;
    }
    seen.emplace_back(decisions, static_cast<int>(groups.size()));
    NodeMemo::Folded group{std::move(folded.when), {element}, {}, {}, {}};
    add_guards(plan, group, folded.origin);
    groups.push_back(std::move(group));
  };
  if (rule.when.collection < 0) add({});
  else
    for (std::size_t i = 0, n = frame.count(rule.when.collection); i < n; ++i) add({rule.when.collection, i});
  NodeMemo& memo = frame.memo();
  const bool holds = !groups.empty();
  memo.node_holds[index] = holds ? 1 : 0;
  memo.folded[index] = std::move(groups);
  return holds;
}

[[gnu::always_inline]] inline bool can_fire(const RuleSet::Impl& impl, const Rule& rule, Frame& frame) {
  signed char known = frame.memo().node_holds[rule_index(impl, rule)];
  return known >= 0 ? known != 0 : fold_first(impl, rule, frame);
}

// Calls fn(rule) for every rule of kind (backend or workload) in database order that can still
// fire on the frame's node: all of them the first time, afterwards those that what the node alone
// decides (a memoised applies_to or folded condition) did not rule out (NodeMemo::live), less
// those whose guard is false for the frame's workload (NodeMemo::live_guard).
template <typename Fn>
void for_live_rules(const RuleSet::Impl& impl, RuleKind kind, Frame& frame, Fn fn) {
  const int k = kind == RuleKind::backend ? 0 : 1;
  std::size_t next = 0; // the first rule not walked yet
  if (frame.memo().live_known[k]) {
    // The memo is read again each time: were it rebound meanwhile (a frame of another node on
    // this thread), the list is gone and the walk goes on over every rule after the last one.
    for (std::size_t i = 0;; ++i) {
      NodeMemo& memo = frame.memo();
      if (!memo.live_known[k] || i >= memo.live[k].size()) break;
      std::size_t r = memo.live[k][i];
      int guard = memo.live_guard[k][i];
      next = r + 1;
      // A rule whose guard is false cannot fire: passed over without a visit.
      if (guard >= 0 && !frame.guard(static_cast<std::size_t>(guard))) continue;
      fn(impl.rules[r]);
    }
    if (frame.memo().live_known[k]) return;
  }
  for (std::size_t r = next; r < impl.rules.size(); ++r)
    if (impl.rules[r].kind == kind) fn(impl.rules[r]);
  NodeMemo& memo = frame.memo();
  // Only once the rules are folded (NodeMemo::folding): before, none is ruled out.
  if (!memo.folding()) return;
  auto& live = memo.live[k];
  live.clear();
  memo.live_guard[k].clear();
  for (std::size_t r = 0; r < impl.rules.size(); ++r)
    if (impl.rules[r].kind == kind && memo.applies[r] != 0 && memo.node_holds[r] != 0) {
      live.push_back(r);
      // The first guard of the rule's one folded condition (for a rule over a collection with
      // several, none: they need not share one).
      const auto& groups = memo.folded[r];
      memo.live_guard[k].push_back(groups.size() == 1 && !groups.front().guards.empty() ? groups.front().guards.front() : -1);
    }
  memo.live_known[k] = true;
}

// The elements of a rule of the explain that fire for the frame's workload, once can_fire said
// it can: each group's folded condition evaluated once (NodeMemo::folded), in element order.
void explain_firing(const RuleSet::Impl& impl, const Rule& rule, Frame& frame, std::vector<Element>& out) {
  out.clear();
  const auto& groups = frame.memo().folded[rule_index(impl, rule)];
  for (const auto& group : groups) {
    frame.set_element(group.elements.front());
    if (!std::all_of(group.guards.begin(), group.guards.end(), [&](int g) { return frame.guard(static_cast<std::size_t>(g)); })) continue;
    if (std::all_of(group.rest.begin(), group.rest.end(),
                    [&](std::pair<int, bool> test) { return evaluate_folded(group, test.first, frame) != test.second; }))
      out.insert(out.end(), group.elements.begin(), group.elements.end());
  }
  if (groups.size() > 1) std::sort(out.begin(), out.end(), [](Element a, Element b) { return a.index < b.index; });
}

// Whether a rule of the explain fires for the frame's workload, `out` its elements: through its
// folded condition once the node has been explained often enough (NodeMemo::folding), before
// that by evaluating its condition, so that a node explained a few times (check's workloads, the
// fix search's candidates) does not pay for folding every rule.
void firing_elements(const Rule& rule, Frame& frame, std::vector<Element>& out);
bool fires(const RuleSet::Impl& impl, const Rule& rule, Frame& frame, std::vector<Element>& out) {
  if (!applies(impl, rule, frame)) return false;
  if (frame.memo().folding()) {
    if (!can_fire(impl, rule, frame)) return false;
    explain_firing(impl, rule, frame, out);
  } else {
    firing_elements(rule, frame, out);
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
    fixes.push_back(model::Fix{fix.kind, std::move(command), fix.description, {}, std::nullopt, {}, false});
  }
  return fixes;
}

// A backend filter's reason for the element it fired for: its message and fixes rendered, or,
// when they read only the node (NodeMemo::renders_per_node), as they rendered on an earlier
// explain on this node.
void render_reason(const RuleSet::Impl& impl, const Rule& rule, Frame& frame, Element element, model::Reason& reason) {
  auto index = static_cast<std::size_t>(&rule - impl.rules.data());
  auto render = [&] {
    reason.message =
        std::string(util::trim(detail::render_template(rule.message, impl.slots, frame.view(), element, detail::RenderMode::message)));
    reason.fixes = render_fixes(impl, rule, frame.view(), element);
  };
  const unsigned char per_node = frame.memo().renders_per_node[index];
  if (!per_node) return render();
  auto slot = element.collection < 0 ? 0 : element.index;
  auto& cached = frame.memo().rendered[index];
  if (cached.size() <= slot) cached.resize(slot + 1);
  if (!cached[slot]) {
    render();
    cached[slot] = NodeMemo::Rendered{per_node == 1 ? reason.message : std::string(), reason.fixes};
    return;
  }
  if (per_node == 1) reason.message = cached[slot]->message;
  else
    reason.message =
        std::string(util::trim(detail::render_template(rule.message, impl.slots, frame.view(), element, detail::RenderMode::message)));
  reason.fixes = cached[slot]->fixes;
}

model::Finding make_finding(const RuleSet::Impl& impl, const Rule& rule, Frame& frame, Element element) {
  model::Finding f;
  f.id = rule.summary.id;
  f.severity = rule.summary.severity;
  f.impact = rule.summary.impact;
  f.verdict = rule.summary.verdict;
  f.verdict_backends = rule.summary.verdict_backends;
  f.explains = rule.summary.explains;
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

// "0-7", "0, 2, 5": GPU indices as a short list.
std::string index_list(const std::vector<std::size_t>& indices) {
  std::string out;
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(indices[i]) + (j > i ? "-" + std::to_string(indices[j]) : "");
    i = j + 1;
  }
  return out;
}

// One finding per rule for GPUs that are alike: a per-GPU rule firing on eight identical A100s
// says it once and names the GPUs. Alike is the same evidence once the element's index is taken
// out of the fact names ("gpu[3].sm" = 80 is "gpu.sm" = 80), so different GPUs stay apart.
// Other collections (library copies) are different things each and keep a finding per element.
void add_findings(const RuleSet::Impl& impl, const Rule& rule, Frame& frame, const std::vector<Element>& elements,
                  std::vector<model::Finding>& out) {
  const bool per_gpu =
      rule.when.collection >= 0 && elements.size() > 1 && impl.slots.collections()[static_cast<std::size_t>(rule.when.collection)] == "gpu";
  if (!per_gpu) {
    for (auto element : elements) out.push_back(make_finding(impl, rule, frame, element));
    return;
  }
  struct Group {
    std::vector<std::pair<std::string, std::string>> key;
    std::size_t finding;
    std::vector<std::size_t> indices;
  };
  std::vector<Group> groups;
  for (auto element : elements) {
    model::Finding f = make_finding(impl, rule, frame, element);
    std::vector<std::pair<std::string, std::string>> key;
    const std::string indexed = "gpu[" + std::to_string(element.index) + "]";
    for (const auto& [name, value] : f.evidence)
      key.emplace_back(name.starts_with(indexed) ? "gpu" + name.substr(indexed.size()) : name, value);
    auto same = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.key == key; });
    if (same != groups.end()) {
      same->indices.push_back(element.index);
      continue;
    }
    groups.push_back({std::move(key), out.size(), {element.index}});
    out.push_back(std::move(f));
  }
  for (const auto& g : groups) {
    if (g.indices.size() < 2) continue;
    model::Finding& f = out[g.finding];
    std::string list = index_list(g.indices);
    f.message += "\n(This holds for GPUs " + list + ", " + std::to_string(g.indices.size()) + " of " +
                 std::to_string(frame.count(rule.when.collection)) + ".)";
    f.evidence.emplace_back("gpu.indices", list);
  }
}

std::vector<model::Finding> node_findings(const RuleSet::Impl& impl, const model::Facts& facts, const Rule* only) {
  View view(facts, nullptr, nullptr, impl.default_te_version);
  Frame frame(view, impl);
  std::vector<model::Finding> findings;
  std::vector<Element> elements;
  for (const auto& rule : impl.rules) {
    if (rule.kind != RuleKind::node || (only && &rule != only)) continue;
    if (!applies(impl, rule, frame)) continue;
    firing_elements(rule, frame, elements);
    add_findings(impl, rule, frame, elements, findings);
  }
  return findings;
}

} // namespace

void detail::node_rules_fire(const RuleSet::Impl& impl, const model::Facts& facts, const std::vector<std::size_t>& rules,
                             std::vector<unsigned char>& out) {
  View view(facts, nullptr, nullptr, impl.default_te_version);
  Frame frame(view, impl);
  std::vector<Element> elements;
  out.assign(rules.size(), 0);
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const Rule& rule = impl.rules[rules[i]];
    if (!applies(impl, rule, frame)) continue;
    firing_elements(rule, frame, elements);
    out[i] = elements.empty() ? 0 : 1;
  }
}

namespace {

// The backends of an explanation, in its map's order, and a backend's place among them.
constexpr std::string_view k_backend_keys[] = {"flash_attention", "fused_attention", "unfused_attention"};
std::size_t backend_index(std::string_view key) {
  if (key == k_backend_keys[0]) return 0;
  return key == k_backend_keys[1] ? 1 : 2;
}

// "explain.<backend>.available" for the three backends of an explanation.
std::string_view available_name(std::string_view key) {
  if (key == "flash_attention") return "explain.flash_attention.available";
  if (key == "fused_attention") return "explain.fused_attention.available";
  return "explain.unfused_attention.available";
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
model::Explanation explain_impl(const RuleSet::Impl& impl, const model::Facts& node, const model::Workload& given, const Rule* only) {
  model::Explanation ex;
  engine::Overlay overlay;
  std::optional<model::Version> te = node.get_version("te.version");
  if (te) {
    ex.te_version = te->to_string();
  } else if (impl.default_te_version) {
    te = impl.default_te_version;
    overlay.set("te.version", *te);
    ex.te_version = te->to_string();
    ex.te_version_assumed = true;
  }
  // The rules see what DotProductAttention hands the selector (model/dpa_inputs.hpp).
  ex.workload = model::selector_inputs(given, node, te);
  const model::Workload& workload = ex.workload; // ex.workload is not changed below
  View view(node, &workload, &overlay, impl.default_te_version);
  const SelectionOrder& order = pick_order(impl.selection, te);

  struct Out {
    bool out = false;
    std::vector<model::Reason> reasons;
    std::vector<model::Reason> deprioritized;
  };
  // The three backends in the explanation's order (the loader takes no other backend: k_backends),
  // and the sub-backends that filters took out, by name (a few; not iterated).
  std::array<Out, 3> backends;
  std::vector<std::pair<std::string_view, Out>> subs;
  auto sub = [&](std::string_view name) -> Out* {
    for (auto& [n, out] : subs)
      if (n == name) return &out;
    return nullptr;
  };
  // One frame for both phases: what it read of the workload stays valid, the overlay is re-read.
  Frame frame(view, impl);
  frame.memo().count_explain();
  std::vector<Element> elements;
  {
    for_live_rules(impl, RuleKind::backend, frame, [&](const Rule& rule) {
      if (only && only->kind == RuleKind::backend && &rule != only) return;
      if (!rule.while_backend.empty()) {
        const Out* in = rule.while_sub.empty() ? &backends[backend_index(rule.while_backend)] : sub(rule.while_sub);
        if (in && in->out) return;
      }
      if (!fires(impl, rule, frame, elements)) return;
      for (auto element : elements) {
        model::Reason reason;
        reason.rule = rule.summary.id;
        render_reason(impl, rule, frame, element, reason);
        Out* target_sub = rule.sub_backend.empty() ? nullptr : sub(rule.sub_backend);
        if (!rule.sub_backend.empty() && !target_sub) target_sub = &subs.emplace_back(rule.sub_backend, Out{}).second;
        Out& target = target_sub ? *target_sub : backends[backend_index(rule.backend)];
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
    });
  }

  // FusedAttention: the first surviving sub-backend for the workload's dtype.
  std::optional<std::string> sub_backend;
  Out& fused = backends[backend_index("fused_attention")];
  if (const auto* candidates = sub_backend_order(order, workload)) {
    for (const auto& name : *candidates) {
      Out* it = sub(name);
      if (!it || !it->out) {
        if (!sub_backend) sub_backend = name;
        continue;
      }
      for (auto& reason : it->reasons) fused.reasons.push_back(std::move(reason));
    }
    if (!sub_backend) fused.out = true;
  } else {
    fused.out = true;
    fused.reasons.push_back({"", "no FusedAttention sub-backend handles this dtype in the selection for TE " + ex.te_version, {}});
  }

  // FlashAttention: TE filters flash-attn 2, 3 and 4 one by one and uses the newest that is left.
  std::optional<std::string> flash_sub;
  if (!order.flash_sub_backends.empty()) {
    Out& flash = backends[backend_index("flash_attention")];
    for (const auto& name : order.flash_sub_backends) {
      Out* it = sub(name);
      if (!it || !it->out) {
        if (!flash_sub) flash_sub = name;
        continue;
      }
      for (auto& reason : it->reasons) flash.reasons.push_back(std::move(reason));
    }
    if (!flash_sub) flash.out = true;
  }

  for (std::size_t b = 0; b < backends.size(); ++b) {
    model::BackendVerdict verdict;
    verdict.available = !backends[b].out;
    verdict.reasons = std::move(backends[b].reasons);
    ex.backends.emplace_hint(ex.backends.end(), k_backend_keys[b], std::move(verdict));
  }
  for (std::size_t i = 0; i < order.backends.size(); ++i) {
    const std::string& name = order.backends[i];
    std::string key = backend_key(name);
    model::BackendVerdict& verdict = ex.backends[key];
    if (!verdict.available) continue;
    // TE yields for performance only to the next backend of the order (FlashAttention to
    // FusedAttention on Hopper+), and only when that one takes the workload.
    bool next_available = i + 1 < order.backends.size() && ex.backends[backend_key(order.backends[i + 1])].available;
    Out& out = backends[backend_index(key)];
    if (!out.deprioritized.empty() && next_available) {
      verdict.available = false;
      verdict.deprioritized = true;
      for (auto& reason : out.deprioritized) verdict.reasons.push_back(std::move(reason));
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
  for (const auto& [key, verdict] : ex.backends) overlay.set(available_name(key), verdict.available);
  overlay.reasons_of(&ex); // ex.backends is not changed below

  frame.reread_overlay();
  for_live_rules(impl, RuleKind::workload, frame, [&](const Rule& rule) {
    if (only && &rule != only) return;
    if (!fires(impl, rule, frame, elements)) return;
    std::size_t before = ex.findings.size();
    add_findings(impl, rule, frame, elements, ex.findings);
    for (std::size_t i = before; i < ex.findings.size(); ++i) ex.findings[i].workload = workload.name;
  });
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
  detail::require_some_rules(*loaded, dirs, diagnostics);
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
