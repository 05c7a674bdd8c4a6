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
// available backend of the selection order wins. Before any rule, the workload goes through
// model::selector_inputs: what DotProductAttention itself does to its inputs (model/dpa_inputs.hpp).
#include "rules/loader_internal.hpp"
#include "rules/ruleset_impl.hpp"

#include "model/dpa_inputs.hpp"
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
    if (node_only(name)) return m_node.get(name);
    // The overlay only holds an assumed te.version and explain.*.
    if (m_overlay && (name.starts_with("explain.") || name == "te.version"))
      if (const model::Value* v = m_overlay->get(name)) return v;
    if (name.starts_with("workload.")) return m_workload ? m_workload->get(name.substr(9)) : nullptr;
    const model::Value* v = m_node.get(name);
    if (!v && m_assumed_te && name == "doctor.assumed_te_version") return &*m_assumed_te;
    return v;
  }
  std::size_t count(std::string_view collection) const override { return m_node.count(collection); }
  const model::Facts& node() const { return m_node; }
  const model::Workload* workload() const { return m_workload; }

  // Whether get(name) reads the node's facts alone (not the workload, the overlay or the assumed
  // TE release, which come from the workload, the selection and the database); get() routes by it.
  static bool node_only(std::string_view name) {
    return !name.starts_with("workload.") && !name.starts_with("explain.") && name != "te.version" &&
           name != "doctor.assumed_te_version";
  }

private:
  const model::Facts& m_node;
  const model::Workload* m_workload;
  const model::Facts* m_overlay;
  std::optional<model::Value> m_assumed_te;
};

// What explain learns from the node's facts alone, kept from one explain to the next while the
// facts and the database stay the same: explain runs one node against many workloads (a sweep,
// check's workloads, the fix search's workload changes), and looking each node fact (GPU
// elements included) up in the map and checking each rule's TE/cuDNN range again per explain
// was a fifth of its time (bench: 69.6k -> 87k explains/s with the string fast paths). One per
// thread, for the last (facts, database) pair seen; the stamps make a stale entry impossible to
// hit (a changed, copied, moved or freed Facts has a new stamp, every loaded database its own id).
struct NodeMemo {
  std::uint64_t facts_stamp = 0;
  std::uint64_t database = 0;               // RuleSet::Impl::id
  std::vector<const model::Value*> values;  // per slot
  std::vector<unsigned char> state;         // per slot; 0: not looked up, 1: looked up, 2: not a node fact
  std::vector<unsigned char> fresh_state;   // state before any lookup, worked out once per database
  std::vector<signed char> applies;         // per rule; -1: not known, else whether its applies_to holds
  // Per rule of the explain (backend and workload rules), on this node: whether it can fire for
  // some workload (-1: not known), and what decides it for a workload. That is its condition
  // with everything the node decides (node facts, te.version, GPU facts per element) folded in
  // (detail::fold): what is left reads the workload and explain.* only. A rule over a collection
  // (per GPU) has one such condition per group of elements that folded alike (eight identical
  // GPUs are one group), holding its elements in order. A rule whose folded conditions are all
  // false is never evaluated again for any workload on this node: on one node most version- and
  // GPU-gated rules are out, and of the rest only the workload's part is evaluated.
  struct Folded {
    detail::Condition when;
    std::vector<Element> elements; // one empty element for a rule not over a collection
  };
  std::vector<signed char> node_holds;
  std::vector<std::vector<Folded>> folded;
  std::vector<unsigned char> fixed_slots; // per slot: node_determined (worked out per database)
  // Per kind of explain rule (backend, workload), once an explain has walked them on this node:
  // the rules it did not rule out by what the node alone decides (applies_to, node conjuncts), in
  // database order. Later explains walk these only: on one node most rules are out for good.
  std::vector<std::size_t> live[2];
  bool live_known[2] = {false, false};
  // The slots whose value the explain's overlay decides (te.version, explain.*): what a frame
  // must read again once the backend selection has set explain.* (worked out per database).
  std::vector<int> overlay_slots;
  // The workload.* slots, by key ("max_seqlen_q") in the workload map's order: a frame looks them
  // all up in one walk of the map (Frame::read_workload) instead of one map search each, which
  // was a twelfth of an explain (string comparisons).
  std::vector<std::pair<std::string_view, int>> workload_slots;
  // The keys of the last workload map walked, in order, with the slot each one is (-1: none) and
  // the workload slots it lacks: the next workload's map has the same keys most of the time
  // (complete() fills every key), and then one equality test per key replaces the ordered walk.
  struct Layout {
    std::vector<std::string> keys;
    std::vector<int> slot_at;
    std::vector<int> absent;
  } layout;
  // Per rule of the explain whose message and fix commands read no workload.* and no explain.*
  // name (worked out once per database): what they render to on this node, per element of its
  // collection (one entry without), once a workload made it fire. A filter's reason renders the
  // same for every workload then, and rendering was a quarter of an explain.
  struct Rendered {
    std::string message;
    std::vector<model::Fix> fixes;
  };
  std::vector<unsigned char> renders_per_node;
  std::vector<std::vector<std::optional<Rendered>>> rendered;
  std::vector<long> counts;                 // per collection; -1: not counted yet
  // Per collection slot ("gpu.sm"), per element: the fact, nullptr, or unknown() before the lookup.
  std::vector<std::vector<const model::Value*>> elements;

  // Whether a slot's value, as the explain's View reads it, is fixed by the node and the database
  // (for a collection-relative name such as gpu.sm: by the node and the element): a node fact
  // (collections and their counts included), or te.version and doctor.assumed_te_version, which
  // are the node's or else the database's default release. Never workload.* or explain.*.
  static bool node_determined(const detail::SlotSpec& spec) {
    if (spec.collection >= 0) return true;
    return View::node_only(spec.name) || spec.name == "te.version" || spec.name == "doctor.assumed_te_version";
  }

  static const model::Value* unknown() {
    static const model::Value marker;
    return &marker;
  }

  bool bound(const model::Facts& facts, const RuleSet::Impl& impl) const {
    return facts_stamp == facts.stamp() && database == impl.id;
  }

  // Bumped by every bind to other facts or another database: a frame that saw this generation
  // knows the memo is still its own with one comparison (Frame::memo, on every fact read).
  std::uint64_t generation = 0;

  void bind(const model::Facts& facts, const RuleSet::Impl& impl) {
    if (bound(facts, impl)) return;
    ++generation;
    const auto& slots = impl.slots.slots();
    if (database != impl.id) {
      database = impl.id;
      fresh_state.assign(slots.size(), 0);
      fixed_slots.assign(slots.size(), 0);
      for (std::size_t i = 0; i < slots.size(); ++i) fixed_slots[i] = node_determined(slots[i]) ? 1 : 0;
      for (std::size_t i = 0; i < slots.size(); ++i)
        if (slots[i].collection >= 0 || !View::node_only(slots[i].name)) fresh_state[i] = 2;
      renders_per_node.assign(impl.rules.size(), 0);
      for (std::size_t r = 0; r < impl.rules.size(); ++r) {
        const detail::Rule& rule = impl.rules[r];
        auto per_node = [](const detail::Template& t) { return !t.reads_workload && !t.reads_explain; };
        renders_per_node[r] = rule.kind != detail::RuleKind::node && per_node(rule.message) &&
                              std::all_of(rule.fixes.begin(), rule.fixes.end(), [&](const auto& fix) { return per_node(fix.command); });
      }
      overlay_slots.clear();
      workload_slots.clear();
      layout = {};
      for (std::size_t i = 0; i < slots.size(); ++i)
        if (slots[i].collection < 0 && slots[i].name.starts_with("workload."))
          workload_slots.emplace_back(std::string_view(slots[i].name).substr(9), static_cast<int>(i));
      std::sort(workload_slots.begin(), workload_slots.end());
      for (std::size_t i = 0; i < slots.size(); ++i)
        if (slots[i].collection < 0 && (slots[i].name.starts_with("explain.") || slots[i].name == "te.version"))
          overlay_slots.push_back(static_cast<int>(i));
    }
    facts_stamp = facts.stamp();
    values.assign(slots.size(), nullptr);
    state = fresh_state;
    applies.assign(impl.rules.size(), -1);
    node_holds.assign(impl.rules.size(), -1);
    for (auto& f : folded) f.clear();
    folded.resize(impl.rules.size());
    for (auto& r : rendered) r.clear();
    rendered.resize(impl.rules.size());
    for (int k = 0; k < 2; ++k) {
      live[k].clear();
      live_known[k] = false;
    }
    counts.assign(impl.slots.collections().size(), -1);
    for (auto& e : elements) e.clear();
    elements.resize(slots.size());
  }
};

NodeMemo& node_memo(const model::Facts& facts, const RuleSet::Impl& impl) {
  thread_local NodeMemo memo;
  memo.bind(facts, impl);
  return memo;
}

// The per-frame cache of the slots that are not node facts, kept per thread so that a frame
// allocates nothing: an entry is the frame's only when it carries the frame's epoch (a new one
// per frame, so frames never see each other's entries, also when they interleave).
struct FrameCache {
  std::vector<const model::Value*> values;
  std::vector<std::uint64_t> epochs;
  std::uint64_t last_epoch = 0;

  std::uint64_t open(std::size_t slots) {
    if (values.size() < slots) {
      values.resize(slots, nullptr);
      epochs.resize(slots, 0);
    }
    return ++last_epoch;
  }
};

FrameCache& frame_cache() {
  thread_local FrameCache cache;
  return cache;
}

class Frame final : public detail::Reader {
public:
  Frame(const View& view, const RuleSet::Impl& impl)
      : m_view(view), m_impl(impl), m_table(impl.slots), m_memo(node_memo(view.node(), impl)), m_cache(frame_cache()),
        m_epoch(m_cache.open(m_table.slots().size())), m_generation(m_memo.generation) {}

  // The thread's memo for this frame's node, bound again if another frame took it meanwhile.
  [[gnu::always_inline]] NodeMemo& memo() {
    if (m_memo.generation != m_generation) [[unlikely]]
      rebind();
    return m_memo;
  }

  const model::Value* fact(int slot) override {
    const detail::SlotSpec& spec = m_table.slots()[static_cast<std::size_t>(slot)];
    if (spec.collection >= 0) [[unlikely]]
      return element_fact(slot, spec);
    auto i = static_cast<std::size_t>(slot);
    NodeMemo& memo = this->memo();
    if (memo.state[i] != 2) {
      if (memo.state[i] == 0) [[unlikely]]
        load_node(memo, i, spec);
      if (m_evidence) record(spec.name, memo.values[i]);
      return memo.values[i];
    }
    if (m_cache.epochs[i] != m_epoch) [[unlikely]]
      load(i, spec);
    const model::Value* v = m_cache.values[i];
    if (m_evidence) record(spec.name, v);
    return v;
  }

  // A collection-relative slot ("gpu.sm") for the frame's element; out of line as load().
  [[gnu::noinline]] const model::Value* element_fact(int slot, const detail::SlotSpec& spec) {
    if (m_element.collection != spec.collection) {
      if (m_evidence) record(element_name(spec), nullptr);
      return nullptr;
    }
    // Collections are the node's (GPUs, library copies): their elements are remembered too.
    auto& known = memo().elements[static_cast<std::size_t>(slot)];
    if (known.size() <= m_element.index) known.resize(m_element.index + 1, NodeMemo::unknown());
    const model::Value*& v = known[m_element.index];
    if (v == NodeMemo::unknown()) v = m_view.get(element_name(spec));
    if (m_evidence) record(element_name(spec), v);
    return v;
  }

  // Collections are the node's: their sizes are remembered with its facts.
  std::size_t count(int collection) override {
    auto c = static_cast<std::size_t>(collection);
    NodeMemo& memo = this->memo();
    if (memo.counts[c] < 0) memo.counts[c] = static_cast<long>(m_view.count(m_table.collections()[c]));
    return static_cast<std::size_t>(memo.counts[c]);
  }

  // Forgets what the frame read of the overlay (te.version, explain.*), which the caller changed.
  // Belt and braces today: the loader keeps explain.* out of backend rules, so the selection
  // phase never read it, and te.version's overlay entry is not set again.
  void reread_overlay() {
    for (int slot : memo().overlay_slots) m_cache.epochs[static_cast<std::size_t>(slot)] = 0;
  }

  void set_element(Element element) { m_element = element; }
  void track(std::vector<std::pair<std::string, std::string>>* evidence) { m_evidence = evidence; }
  const View& view() const { return m_view; }

private:
  // Kept out of line so that memo()'s check inlines into every fact read.
  [[gnu::noinline]] void rebind() {
    m_memo.bind(m_view.node(), m_impl);
    m_generation = m_memo.generation;
  }

  // A slot that is not a node fact into the frame's cache. Out of line, as rebind(): fact() runs
  // ~150 times an explain, and inlined this made its every call save and restore registers.
  [[gnu::noinline]] void load_node(NodeMemo& memo, std::size_t i, const detail::SlotSpec& spec) {
    memo.values[i] = m_view.node().get(spec.name);
    memo.state[i] = 1;
  }
  [[gnu::noinline]] void load(std::size_t i, const detail::SlotSpec& spec) {
    if (!m_read_workload) read_workload();
    if (m_cache.epochs[i] == m_epoch) return;
    m_cache.values[i] = m_view.get(spec.name);
    m_cache.epochs[i] = m_epoch;
  }

  // Every workload.* slot into the frame's cache, as View::get reads it (the workload's value or
  // nullptr), in one walk of the workload's map.
  void read_workload() {
    m_read_workload = true;
    const model::Workload* workload = m_view.workload();
    if (!workload) return; // no workload.* slot is read without one, and get() says nullptr
    auto set = [&](int slot, const model::Value* v) {
      auto i = static_cast<std::size_t>(slot);
      m_cache.values[i] = v;
      m_cache.epochs[i] = m_epoch;
    };
    NodeMemo::Layout& layout = memo().layout;
    const auto& values = workload->values;
    if (layout.keys.size() == values.size() && !layout.keys.empty()) {
      std::size_t pos = 0;
      bool same = true;
      for (auto it = values.begin(); it != values.end(); ++it, ++pos) {
        if (it->first != layout.keys[pos]) {
          same = false;
          break;
        }
        if (layout.slot_at[pos] >= 0) set(layout.slot_at[pos], &it->second);
      }
      if (same) {
        for (int slot : layout.absent) set(slot, nullptr);
        return;
      }
    }
    // Another set of keys: the ordered walk of the map and the database's sorted slots, which
    // becomes the layout for the next workload.
    layout.keys.clear();
    layout.slot_at.clear();
    layout.absent.clear();
    for (const auto& [key, value] : values) {
      layout.keys.push_back(key);
      layout.slot_at.push_back(-1);
    }
    std::size_t pos = 0;
    for (const auto& [key, slot] : memo().workload_slots) {
      while (pos < layout.keys.size() && std::string_view(layout.keys[pos]) < key) ++pos;
      if (pos < layout.keys.size() && layout.keys[pos] == key) {
        layout.slot_at[pos] = slot;
        set(slot, &values.find(key)->second);
      } else {
        layout.absent.push_back(slot);
        set(slot, nullptr);
      }
    }
  }

  const std::string& element_name(const detail::SlotSpec& spec) {
    const std::string& prefix = m_table.collections()[static_cast<std::size_t>(spec.collection)];
    m_name.assign(prefix).append("[").append(std::to_string(m_element.index)).append("].").append(spec.field);
    return m_name;
  }

  void record(const std::string& name, const model::Value* v) {
    for (const auto& [n, value] : *m_evidence)
      if (n == name) return;
    m_evidence->emplace_back(name, v ? v->to_string() : "absent");
  }

  const View& m_view;
  const RuleSet::Impl& m_impl;
  const detail::SlotTable& m_table;
  NodeMemo& m_memo;
  FrameCache& m_cache; // slots that are not node facts
  std::uint64_t m_epoch;
  std::uint64_t m_generation; // of m_memo when it was last bound to this frame's node
  Element m_element;
  bool m_read_workload = false; // read_workload() done
  std::vector<std::pair<std::string, std::string>>* m_evidence = nullptr;
  std::string m_name;
};

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

// Whether the rule can fire on this node for some workload: its condition folded with what the
// node decides, per element of its collection (NodeMemo::folded), the first time on a node
// (explain's backend and workload rules only: node rules are read through a View without the
// assumed TE release, so the same slot can read differently there).
[[gnu::noinline]] bool fold_first(const RuleSet::Impl& impl, const Rule& rule, Frame& frame) {
  std::vector<NodeMemo::Folded> groups;
  std::vector<std::vector<unsigned char>> keys; // per group, the outcomes of the node's subtrees
  std::vector<unsigned char> decisions;
  auto add = [&](Element element) {
    frame.set_element(element);
    decisions.clear();
    detail::Condition when = detail::fold(rule.when, frame.memo().fixed_slots, frame, &decisions);
    if (detail::folded_constant(when) == 0) return;
    // The same outcomes for the node's subtrees build the same folded condition.
    for (std::size_t g = 0; g < groups.size(); ++g)
      if (keys[g] == decisions) {
        groups[g].elements.push_back(element);
        return;
      }
    keys.push_back(decisions);
    groups.push_back({std::move(when), {element}});
  };
  if (rule.when.collection < 0) add({});
  else
    for (std::size_t i = 0, n = frame.count(rule.when.collection); i < n; ++i) add({rule.when.collection, i});
  NodeMemo& memo = frame.memo();
  auto index = rule_index(impl, rule);
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
// decides (a memoised applies_to or node-conjunct result) did not rule out (NodeMemo::live).
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
      fn(impl.rules[r]);
      next = r + 1;
    }
    if (frame.memo().live_known[k]) return;
  }
  for (std::size_t r = next; r < impl.rules.size(); ++r)
    if (impl.rules[r].kind == kind) fn(impl.rules[r]);
  NodeMemo& memo = frame.memo();
  auto& live = memo.live[k];
  live.clear();
  for (std::size_t r = 0; r < impl.rules.size(); ++r)
    if (impl.rules[r].kind == kind && memo.applies[r] != 0 && memo.node_holds[r] != 0) live.push_back(r);
  memo.live_known[k] = true;
}

// The elements of a rule of the explain that fire for the frame's workload, once can_fire said
// it can: each group's folded condition evaluated once (NodeMemo::folded), in element order.
void explain_firing(const RuleSet::Impl& impl, const Rule& rule, Frame& frame, std::vector<Element>& out) {
  out.clear();
  const auto& groups = frame.memo().folded[rule_index(impl, rule)];
  for (const auto& group : groups) {
    frame.set_element(group.elements.front());
    if (detail::evaluate(group.when, frame)) out.insert(out.end(), group.elements.begin(), group.elements.end());
  }
  if (groups.size() > 1) std::sort(out.begin(), out.end(), [](Element a, Element b) { return a.index < b.index; });
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
  if (!frame.memo().renders_per_node[index]) return render();
  auto slot = element.collection < 0 ? 0 : element.index;
  auto& cached = frame.memo().rendered[index];
  if (cached.size() <= slot) cached.resize(slot + 1);
  if (!cached[slot]) {
    render();
    cached[slot] = NodeMemo::Rendered{reason.message, reason.fixes};
    return;
  }
  reason.message = cached[slot]->message;
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
  std::map<std::string, Out, std::less<>> backends{{"flash_attention", {}}, {"fused_attention", {}}, {"unfused_attention", {}}};
  std::map<std::string, Out, std::less<>> subs;
  // One frame for both phases: what it read of the workload stays valid, the overlay is re-read.
  Frame frame(view, impl);
  std::vector<Element> elements;
  {
    for_live_rules(impl, RuleKind::backend, frame, [&](const Rule& rule) {
      if (only && only->kind == RuleKind::backend && &rule != only) return;
      if (!rule.while_backend.empty()) {
        auto out = [](const auto& map, const std::string& name) {
          auto it = map.find(name);
          return it != map.end() && it->second.out;
        };
        if (rule.while_sub.empty() ? out(backends, rule.while_backend) : out(subs, rule.while_sub)) return;
      }
      if (!applies(impl, rule, frame) || !can_fire(impl, rule, frame)) return;
      explain_firing(impl, rule, frame, elements);
      for (auto element : elements) {
        model::Reason reason;
        reason.rule = rule.summary.id;
        render_reason(impl, rule, frame, element, reason);
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
    });
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
  std::string reasons;
  for (const auto& [key, verdict] : ex.backends)
    for (const auto& reason : verdict.reasons) reasons += "\n" + key + ": " + reason.message;
  overlay.set("explain.reasons", reasons);

  frame.reread_overlay();
  for_live_rules(impl, RuleKind::workload, frame, [&](const Rule& rule) {
    if (only && &rule != only) return;
    if (!applies(impl, rule, frame) || !can_fire(impl, rule, frame)) return;
    explain_firing(impl, rule, frame, elements);
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
