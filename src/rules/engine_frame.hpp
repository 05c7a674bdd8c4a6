// The engine's view of the facts and its per-evaluation frame (internal to src/rules, included by
// engine.cpp only): what rules read, the memo of what a node decides kept from one explain to the
// next (NodeMemo), and the Frame every condition of an explain reads its facts through.
#pragma once

#include "rules/condition.hpp"
#include "rules/evaluator.hpp"
#include "rules/ruleset_impl.hpp"
#include "rules/templates.hpp"

#include "model/explanation.hpp"
#include "model/facts.hpp"
#include "model/workload.hpp"

#include <algorithm>
#include <unordered_map>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rules::engine {

using detail::Element;

// What explain lays over the node's facts: an assumed te.version and, for the workload rules,
// explain.* (the selection). A handful of entries found by name (a map of strings was a twentieth
// of an explain); explain.reasons, read by few rules, is joined when first read.
class Overlay {
public:
  // `name` is a literal (or outlives the overlay).
  void set(std::string_view name, model::Value value) {
    for (std::size_t i = 0; i < m_size; ++i)
      if (m_names[i] == name) {
        m_values[i] = std::move(value);
        return;
      }
    if (m_size == k_capacity) return; // never: explain sets at most seven names
    m_names[m_size] = name;
    m_values[m_size++] = std::move(value);
  }
  // explain.reasons: each reason of each backend of `ex` ("\nkey: message"), once first read.
  void reasons_of(const model::Explanation* ex) { m_reasons_of = ex; }

  const model::Value* get(std::string_view name) const {
    for (std::size_t i = 0; i < m_size; ++i)
      if (m_names[i] == name) return &m_values[i];
    if (m_reasons_of && name == "explain.reasons") {
      if (!m_reasons) {
        std::string reasons;
        for (const auto& [key, verdict] : m_reasons_of->backends)
          for (const auto& reason : verdict.reasons) reasons += "\n" + key + ": " + reason.message;
        m_reasons = model::Value(std::move(reasons));
      }
      return &*m_reasons;
    }
    return nullptr;
  }

private:
  static constexpr std::size_t k_capacity = 8;
  std::array<std::string_view, k_capacity> m_names{};
  std::array<model::Value, k_capacity> m_values{};
  std::size_t m_size = 0;
  const model::Explanation* m_reasons_of = nullptr;
  mutable std::optional<model::Value> m_reasons;
};

// The facts visible to rules: an overlay (assumed te.version, explain.*), the workload, the node,
// and the rules database's own default TE release as doctor.assumed_te_version when the node's
// facts do not carry it (check sets it; explain and the rules' test cases get it here).
class View final : public detail::Scope {
public:
  View(const model::Facts& node, const model::Workload* workload, const Overlay* overlay,
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
    return !name.starts_with("workload.") && !name.starts_with("explain.") && name != "te.version" && name != "doctor.assumed_te_version";
  }

private:
  const model::Facts& m_node;
  const model::Workload* m_workload;
  const Overlay* m_overlay;
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
  std::uint64_t database = 0;              // RuleSet::Impl::id
  std::vector<const model::Value*> values; // per slot
  std::vector<unsigned char> state;        // per slot; 0: not looked up, 1: looked up, 2: not a node fact
  std::vector<unsigned char> fresh_state;  // state before any lookup, worked out once per database
  std::vector<signed char> applies;        // per rule; -1: not known, else whether its applies_to holds
  // Per rule of the explain (backend and workload rules), on this node: whether it can fire for
  // some workload (-1: not known), and what decides it for a workload. That is its condition
  // with everything the node decides (node facts, te.version, GPU facts per element) folded in
  // (detail::fold): what is left reads the workload and explain.* only. A rule over a collection
  // (per GPU) has one such condition per group of elements that folded alike (eight identical
  // GPUs are one group), holding its elements in order. A rule whose folded conditions are all
  // false is never evaluated again for any workload on this node: on one node most version- and
  // GPU-gated rules are out, and of the rest only the workload's part is evaluated. Rules are
  // folded from the node's k_fold_after-th explain on (folding()); before, each explain evaluates
  // the conditions whole.
  struct Folded {
    detail::Condition when;
    std::vector<Element> elements;          // one empty element for a rule not over a collection
    std::vector<int> guards;                // into `guards`: its top-level tests, each must hold
    std::vector<std::pair<int, bool>> rest; // its other conjuncts (node of `when`, negated), evaluated after
    std::vector<int> leaf_guard;            // per node of `when`: the guard it is, or -1
  };
  std::vector<signed char> node_holds;
  std::vector<std::vector<Folded>> folded;
  // The simple tests the rules' conditions make (a flag, has(), a comparison of a workload value
  // with another or with a literal, list membership; each also negated), one entry per distinct
  // test, worked out per database as rules are first folded: an explain evaluates each at most
  // once (per phase), walks past every rule one of whose conjuncts is a false test (most of
  // them) and reads the tests inside the other conjuncts through the same entries.
  struct Guard {
    detail::Node test;    // a fact_true, has, compare (with a literal) or in_list node
    bool negated = false; // `not` the test
  };
  std::vector<Guard> guards;
  std::unordered_map<std::string, int> guard_keys; // for interning
  std::vector<std::uint64_t> guard_stamp;          // per guard: the frame stamp of guard_value
  std::vector<unsigned char> guard_value;
  // Per rule, once first folded (per database): per node of its condition, whether the subtree
  // reads only what the node decides (detail::fixed_nodes), and the guard the node is, plain and
  // negated (-1: not a simple test).
  struct Plan {
    bool known = false;
    std::vector<unsigned char> fixed;
    std::vector<int> guard, guard_negated;
  };
  std::vector<Plan> plans;
  std::vector<unsigned char> fixed_slots; // per slot: node_determined (worked out per database)
  // Per kind of explain rule (backend, workload), once an explain has walked them on this node:
  // the rules it did not rule out by what the node alone decides (applies_to, node conjuncts), in
  // database order. Later explains walk these only: on one node most rules are out for good.
  std::vector<std::size_t> live[2];
  bool live_known[2] = {false, false};
  // Per entry of `live`: a guard every folded condition of the rule has (-1: none), which the walk
  // tests before it visits the rule: most rules are out at it.
  std::vector<int> live_guard[2];
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
  // Per rule of the explain whose fix commands (and message) read no workload.* and no explain.*
  // name (worked out once per database): what they render to on this node, per element of its
  // collection (one entry without), once a workload made it fire. A filter's fixes (and reason)
  // render the same for every workload then, and rendering was a quarter of an explain.
  struct Rendered {
    std::string message;
    std::vector<model::Fix> fixes;
  };
  // 0: renders per explain; 1: message and fixes per node; 2: the fixes per node, the message
  // (which reads the workload) per explain.
  std::vector<unsigned char> renders_per_node;
  std::vector<std::vector<std::optional<Rendered>>> rendered;
  std::vector<long> counts; // per collection; -1: not counted yet
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

  bool bound(const model::Facts& facts, const RuleSet::Impl& impl) const { return facts_stamp == facts.stamp() && database == impl.id; }

  // Bumped by every bind to other facts or another database: a frame that saw this generation
  // knows the memo is still its own with one comparison (Frame::memo, on every fact read).
  std::uint64_t generation = 0;

  // Explains on this node so far: the rules are folded from the k_fold_after-th on. Folding every
  // rule costs about as much as 30 unfolded explains (callgrind, h100 snapshot), which check's
  // few explains per node (its workloads, the fix search's candidates) would not win back.
  static constexpr unsigned k_fold_after = 32;
  unsigned explains = 0;
  void count_explain() {
    if (explains < k_fold_after) ++explains;
  }
  bool folding() const { return explains >= k_fold_after; }

  void bind(const model::Facts& facts, const RuleSet::Impl& impl) {
    if (bound(facts, impl)) return;
    ++generation;
    const auto& slots = impl.slots.slots();
    if (database != impl.id) {
      database = impl.id;
      fresh_state.assign(slots.size(), 0);
      guards.clear();
      guard_keys.clear();
      guard_stamp.clear();
      guard_value.clear();
      plans.assign(impl.rules.size(), {});
      fixed_slots.assign(slots.size(), 0);
      for (std::size_t i = 0; i < slots.size(); ++i) fixed_slots[i] = node_determined(slots[i]) ? 1 : 0;
      for (std::size_t i = 0; i < slots.size(); ++i)
        if (slots[i].collection >= 0 || !View::node_only(slots[i].name)) fresh_state[i] = 2;
      renders_per_node.assign(impl.rules.size(), 0);
      for (std::size_t r = 0; r < impl.rules.size(); ++r) {
        const detail::Rule& rule = impl.rules[r];
        auto per_node = [](const detail::Template& t) { return !t.reads_workload && !t.reads_explain; };
        const bool fixes = rule.kind != detail::RuleKind::node &&
                           std::all_of(rule.fixes.begin(), rule.fixes.end(), [&](const auto& fix) { return per_node(fix.command); });
        renders_per_node[r] = !fixes ? 0 : (per_node(rule.message) ? 1 : 2);
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
    explains = 0;
    for (auto& f : folded) f.clear();
    folded.resize(impl.rules.size());
    for (auto& r : rendered) r.clear();
    rendered.resize(impl.rules.size());
    for (int k = 0; k < 2; ++k) {
      live[k].clear();
      live_guard[k].clear();
      live_known[k] = false;
    }
    counts.assign(impl.slots.collections().size(), -1);
    for (auto& e : elements) e.clear();
    elements.resize(slots.size());
  }
};

inline NodeMemo& node_memo(const model::Facts& facts, const RuleSet::Impl& impl) {
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

inline FrameCache& frame_cache() {
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
    m_guard_stamp = m_cache.open(0);
  }

  // A guard's test, as the evaluator would evaluate its node.
  bool test(const NodeMemo::Guard& guard) {
    const detail::Node& n = guard.test;
    const model::Value* v = fact(n.lhs.index);
    bool holds = false;
    switch (n.kind) {
    case detail::NodeKind::fact_true: holds = v && v->is(model::ValueType::boolean) && v->as_bool(); break;
    case detail::NodeKind::has: holds = v != nullptr; break;
    case detail::NodeKind::compare: {
      const model::Value* w = n.rhs.kind == detail::Operand::Kind::fact ? (v ? fact(n.rhs.index) : nullptr) : &n.rhs.literal;
      holds = v && w && detail::compare_holds(*v, *w, n.op);
      break;
    }
    case detail::NodeKind::in_list: holds = v && detail::in_list_holds(*v, n); break;
    default: break;
    }
    return holds != guard.negated;
  }

  // Whether the guard holds for this frame, evaluated once per frame (and per overlay change).
  bool guard(std::size_t g) {
    NodeMemo& memo = this->memo();
    if (memo.guard_stamp[g] != m_guard_stamp) {
      bool holds = test(memo.guards[g]);
      NodeMemo& bound = this->memo();
      bound.guard_value[g] = holds ? 1 : 0;
      bound.guard_stamp[g] = m_guard_stamp;
    }
    return memo.guard_value[g] != 0;
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
  std::uint64_t m_guard_stamp = m_epoch; // unique to this frame and its overlay (guard())
  std::uint64_t m_generation;            // of m_memo when it was last bound to this frame's node
  Element m_element;
  bool m_read_workload = false; // read_workload() done
  std::vector<std::pair<std::string, std::string>>* m_evidence = nullptr;
  std::string m_name;
};

} // namespace rules::engine
