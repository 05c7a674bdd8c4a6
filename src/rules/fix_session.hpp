// The fix search's session (internal to src/rules: fix_search.cpp, fix_pins.cpp): one finding's
// candidate changes are applied to the facts and workload (through the load-order model for
// library wheels) and the model is evaluated again; an Outcome is what that evaluation says,
// reduced to what goals and ranking need. fix_search.hpp has the contract of the search itself.
#pragma once

#include "rules/fix_commands.hpp"
#include "rules/fix_search.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rules::detail {

// What one evaluation of the model says, reduced to what goals and ranking need.
struct Outcome {
  bool ok = false; // the candidate could be applied (a wheel install that takes effect, ...)
  std::string why_not;
  std::optional<std::string> selected;
  std::optional<std::string> sub_backend;
  std::map<std::string, model::Severity> findings; // workload findings (and node findings once verified)
  std::set<std::string> reasons;                   // rule ids of the reasons that keep backends out
  std::map<std::string, bool> available;           // backend key -> available
  // The findings the session's baseline lacks, with their severity: what meets() asks about. A
  // node outcome holds every firing rule (5,000 in the audit's check), so this short list, made
  // once per outcome, keeps a search from walking (or copying) all of them per candidate.
  std::vector<std::pair<std::string, model::Severity>> added;
  bool is_available(const std::string& backend) const {
    auto it = available.find(backend);
    return it != available.end() && it->second;
  }
};

// outcome.added against baseline.
void note_added(Outcome& outcome, const Outcome& baseline);

struct Candidate {
  std::vector<Change> changes;
  int cost_class = 0; // change_class: 0 env ... 5 data layout, 6 model shape, 7 hardware
  long step = 0;      // version distance, for ranking
  std::string family; // changes of one family are alternatives: only the best is kept
  std::size_t order = 0;
  bool pair = false; // two single changes together (packing and its mask is one change)
  std::size_t weight() const { return pair ? 2 : 1; }
};

// Node outcomes shared by the searches for one report's node findings. Each search tries much
// the same candidate changes on the same facts, and each evaluation runs every node rule: without
// the memo, check was quadratic in the number of firing rules (audit 2026-11-25, item 12). An
// outcome depends only on the changes (the facts, rules and options are the same for every
// search that shares the memo), so the changes are the key; "" is the node as it is.
// The searches of a report's findings run on several threads (verify_node_findings) and share
// it: lookups and inserts hold the lock, evaluations do not (two threads may evaluate the same
// changes at once; the first outcome stored is kept, and both are the same).
struct NodeOutcomeMemo {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const Outcome>> outcomes; // "" is the baseline
};

std::string change_key(const std::vector<Change>& changes);

class Session {
public:
  Session(const RuleSet& rules, const model::Facts& facts, const model::Workload* workload, const SearchOptions& options,
          NodeOutcomeMemo* memo = nullptr)
      : m_rules(rules), m_facts(facts), m_workload(workload), m_options(options), m_node(node_abi(facts)),
        m_memo(workload ? nullptr : memo) {
    if (m_options.relink) {
      // The load-order model is trusted only where it reproduces what the probe recorded.
      model::Facts again = facts;
      m_options.relink(again, "cudnn");
      m_relink_ok = again.get_version("cudnn.version") == facts.get_version("cudnn.version");
    }
    if (m_memo) {
      // Shared, not copied: a copy per finding would be quadratic again. m_baseline_node is
      // only read by new_node_problem, which workload sessions use.
      m_baseline = remembered_node_outcome("", facts);
      return;
    }
    m_baseline = std::make_shared<const Outcome>(evaluate_plain(facts, workload));
    m_baseline_node = node_ids(evaluate_node(rules, facts));
  }

  const Outcome& baseline() const { return *m_baseline; }
  std::size_t used() const { return m_used; }

  // The facts and workload after the changes (with the load-order step added to changes where a
  // wheel would otherwise be shadowed); nullopt with why_not when the change cannot take effect.
  struct Applied {
    model::Facts facts;
    model::Workload workload;
    std::vector<Change> extra; // load-order steps the changes needed
    std::string why_not;
    bool ok = true;
  };

  Applied apply(const std::vector<Change>& changes) const {
    Applied a{m_facts, m_workload ? *m_workload : model::Workload{}, {}, {}, true};
    std::set<std::string> libraries;
    for (const auto& c : changes) {
      if (!apply_change(c, a.facts, a.workload, a.why_not, &m_rules.catalog())) {
        a.ok = false;
        return a;
      }
      if (c.kind == ChangeKind::env || (c.kind == ChangeKind::package && c.package->fact == "te.version")) libraries.insert("cudnn");
      if (c.kind == ChangeKind::package && !c.package->library.empty()) libraries.insert(c.package->library);
    }
    for (const auto& lib : libraries) relink(a.facts, lib);
    // A wheel that TE or torch would not load is no fix by itself: add the step that makes it win.
    for (const auto& c : changes) {
      if (c.kind != ChangeKind::package || c.package->library.empty()) continue;
      std::string fact = c.package->library + ".version";
      if (a.facts.get_version(fact) == c.release->version) continue;
      auto steps = load_order_steps(a.facts, c.package->library);
      for (const auto& step : steps) {
        if (!apply_change(step, a.facts, a.workload, a.why_not)) break;
        a.extra.push_back(step);
      }
      relink(a.facts, c.package->library);
      if (a.facts.get_version(fact) != c.release->version) {
        a.ok = false;
        auto path = a.facts.get_string(c.package->library + ".path");
        a.why_not = "TE would still load " + std::string(c.package->library == "cudnn" ? "cuDNN " : "NCCL ") +
                    a.facts.get_string(fact).value_or("(none)") + (path ? " from " + *path : "") + " after installing the wheel";
        return a;
      }
    }
    return a;
  }

  // One model evaluation of the changed inputs (workload findings and backends; node findings
  // only through verify_node()). Shared, never copied: a node outcome holds every firing rule.
  std::shared_ptr<const Outcome> evaluate(const std::vector<Change>& changes, Applied* out = nullptr) {
    ++m_used;
    Applied a = apply(changes);
    std::shared_ptr<const Outcome> result;
    if (!a.ok) {
      auto o = std::make_shared<Outcome>();
      o->why_not = a.why_not;
      result = std::move(o);
    } else if (m_memo) {
      // Shared with every search of the report.
      result = remembered_node_outcome(change_key(changes), a.facts);
    } else {
      auto o = std::make_shared<Outcome>(evaluate_plain(a.facts, m_workload ? &a.workload : nullptr));
      note_added(*o, *m_baseline);
      result = std::move(o);
    }
    if (out) *out = std::move(a);
    return result;
  }

  // New node findings at or above severity after the change; empty when none.
  std::string new_node_problem(const model::Facts& after, model::Severity severity, const std::string& except) {
    for (const auto& f : evaluate_node(m_rules, after)) {
      if (f.severity < severity || f.id == except || m_baseline_node.count(f.id)) continue;
      return f.id;
    }
    return {};
  }

  bool budget_left() const { return m_used < m_options.budget; }
  const NodeAbi& node() const { return m_node; }
  const model::Facts& facts() const { return m_facts; }
  const model::Workload* workload() const { return m_workload; }
  const RuleSet& rules() const { return m_rules; }

private:
  void relink(model::Facts& facts, const std::string& library) const {
    if (m_options.relink && m_relink_ok) m_options.relink(facts, library);
  }

  static std::set<std::string> node_ids(const std::vector<model::Finding>& findings) {
    std::set<std::string> ids;
    for (const auto& f : findings) ids.insert(f.id);
    return ids;
  }

  Outcome evaluate_plain(const model::Facts& facts, const model::Workload* workload) const {
    if (!workload) return node_outcome(facts);
    model::Explanation e = explain(m_rules, facts, *workload);
    Outcome o;
    o.ok = true;
    o.selected = e.selected;
    for (const auto& [key, verdict] : e.backends) {
      o.available[key] = verdict.available;
      if (key == "fused_attention" && verdict.sub_backend) o.sub_backend = verdict.sub_backend;
      if (!verdict.available)
        for (const auto& r : verdict.reasons) o.reasons.insert(key + ":" + r.rule);
    }
    for (const auto& f : e.findings) o.findings[f.id] = std::max(o.findings[f.id], f.severity);
    return o;
  }

  Outcome node_outcome(const model::Facts& facts) const {
    Outcome o;
    o.ok = true;
    for (const auto& f : evaluate_node(m_rules, facts)) o.findings[f.id] = std::max(o.findings[f.id], f.severity);
    return o;
  }

  // The memo's outcome for the changes (key), made the first time; "" is the baseline, made by
  // the first session (the constructor), so every other outcome's added list is against it.
  std::shared_ptr<const Outcome> remembered_node_outcome(const std::string& key, const model::Facts& facts) const {
    std::shared_ptr<const Outcome> baseline;
    {
      std::lock_guard lock(m_memo->mutex);
      if (auto it = m_memo->outcomes.find(key); it != m_memo->outcomes.end()) return it->second;
      if (!key.empty()) baseline = m_memo->outcomes.at("");
    }
    auto made = std::make_shared<Outcome>(node_outcome(facts));
    if (baseline) note_added(*made, *baseline);
    std::shared_ptr<const Outcome> outcome = std::move(made);
    std::lock_guard lock(m_memo->mutex);
    return m_memo->outcomes.emplace(key, std::move(outcome)).first->second;
  }

  const RuleSet& m_rules;
  const model::Facts& m_facts;
  const model::Workload* m_workload;
  SearchOptions m_options;
  NodeAbi m_node;
  bool m_relink_ok = false;
  std::shared_ptr<const Outcome> m_baseline;
  std::set<std::string> m_baseline_node;
  std::size_t m_used = 0;
  NodeOutcomeMemo* m_memo = nullptr; // node sessions of verify_node_findings only
};

// The backend order of TE's selection, for "the backend TE prefers".
int backend_rank(const std::optional<std::string>& selected);

struct Goal {
  std::string finding_id;
  model::Severity severity = model::Severity::error;
  bool needs_backend = false; // the finding is "no backend"
  bool workload = false;      // a workload finding: the workload must run afterwards
  // The outcome (outcome_tier) a fix should reach before the search stops looking for a
  // better one: the fused kernels for "no backend" and for a workload on them now, the workload's
  // present tier otherwise (a warning on an unfused workload does not ask for an upgrade).
  int target_tier = 0;
};

// The outcome_tier a workload outcome reaches after changes (k_no_backend_tier: none).
int tier_of(const Outcome& o, const std::vector<Change>& changes = {});

// Whether an outcome meets the goal on the workload side (node findings are checked after); the
// session's baseline is in o.added.
bool meets(const Goal& goal, const Outcome& o);

// Took away at least one reason that blocks the workload, or the finding's own rule.
bool progress(const Outcome& base, const Outcome& o);

struct Verified {
  Candidate candidate;
  std::shared_ptr<const Outcome> outcome;
  std::vector<Change> extra;
  int tier = 0; // outcome_tier of what the workload then runs (0 for node findings)
};

// The fix for a verified candidate: its changes rendered for this node, and what the model then
// predicts (the backend the workload gets, the finding that clears).
model::Fix to_fix(const Verified& v, const Session& s, const Goal& goal);
bool same_changes(const model::Fix& a, const model::Fix& b);

} // namespace rules::detail
