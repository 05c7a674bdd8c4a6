// The fix search's session (internal to src/rules: fix_search.cpp, fix_pins.cpp): one finding's
// candidate changes are applied to the facts and workload (through the load-order model for
// library wheels) and the model is evaluated again (a node finding's incrementally: NodeBase);
// an Outcome is what that evaluation says, reduced to what goals and ranking need. fix_search.hpp
// has the contract of the search itself.
#pragma once

#include "rules/fix_commands.hpp"
#include "rules/fix_search.hpp"
#include "rules/node_rules.hpp"

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

// What every node outcome of a search is worked out against: the node rules by the facts they
// read (NodeRules), which of them fire on the node as it is, and whether the load-order model
// reproduces what the probe recorded. A node outcome is incremental: the changes are applied to
// one working copy of the facts with a journal (model::FactsJournal), only the rules that read a
// fact they moved are evaluated again (the others keep their outcome here), and the changes are
// taken back. Copying every fact and evaluating every node rule per candidate was two thirds of
// the node fix search (docs/records/performance.md, "Issue 40, round 7").
struct NodeBase {
  NodeBase(const RuleSet& rules, const model::Facts& facts, const SearchOptions& options);
  NodeRules rules;
  std::vector<unsigned char> firing;       // per NodeRules::rules(): fires on the node as it is
  std::shared_ptr<const Outcome> baseline; // the node findings as they are
  bool relink_ok = false;                  // the load-order model reproduces cudnn.version
};

// Node outcomes shared by the searches for one report's node findings. Each search tries much
// the same candidate changes on the same facts: without the memo, check was quadratic in the
// number of firing rules (audit 2026-11-25, item 12). An outcome depends only on the changes (the
// facts, rules and options are the same for every search that shares the memo), so the changes
// are the key; an entry also holds the load-order steps the changes needed.
// The searches of a report's findings run on several threads (verify_node_findings) and share
// it: lookups and inserts hold the lock, evaluations do not (two threads may evaluate the same
// changes at once; the first outcome stored is kept, and both are the same).
struct NodeOutcomeMemo {
  struct Entry {
    std::shared_ptr<const Outcome> outcome;
    std::vector<Change> extra;
  };
  std::mutex mutex;
  std::shared_ptr<const NodeBase> base; // made by the first session
  std::map<std::string, Entry> outcomes;
};

std::string change_key(const std::vector<Change>& changes);

class Session {
public:
  Session(const RuleSet& rules, const model::Facts& facts, const model::Workload* workload, const SearchOptions& options,
          NodeOutcomeMemo* memo = nullptr);

  const Outcome& baseline() const { return *m_baseline; }
  std::size_t used() const { return m_used; }

  // The facts and workload after the changes (with the load-order step added to changes where a
  // wheel would otherwise be shadowed); ok false with why_not when the change cannot take effect.
  struct Applied {
    model::Facts facts; // a workload session's only: a node session leaves it empty
    model::Workload workload;
    std::vector<Change> extra; // load-order steps the changes needed
    std::string why_not;
    bool ok = true;
  };
  // A copy of the facts with the changes applied.
  Applied apply(const std::vector<Change>& changes) const;

  // One model evaluation of the changed inputs (workload findings and backends; node findings
  // only through verify_node()). Shared, never copied: a node outcome holds every firing rule.
  std::shared_ptr<const Outcome> evaluate(const std::vector<Change>& changes, Applied* out = nullptr);

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
  // The changes applied to facts and workload in place; false with why_not when one cannot take
  // effect (facts and workload are then part-way).
  bool apply_to(const std::vector<Change>& changes, model::Facts& facts, model::Workload& workload, std::vector<Change>& extra,
                std::string& why_not) const;
  void relink(model::Facts& facts, const std::string& library) const {
    if (m_options.relink && m_relink_ok) m_options.relink(facts, library);
  }
  // A node session's outcome of the changes: from the memo, else worked out incrementally.
  NodeOutcomeMemo::Entry node_changes(const std::vector<Change>& changes);
  NodeOutcomeMemo::Entry node_changes_incremental(const std::vector<Change>& changes);
  // check_incremental: the entry against the outcome made the long way on a copy (`work` holds
  // the changes applied in place); each difference goes to the check.
  void cross_check(const std::vector<Change>& changes, const NodeOutcomeMemo::Entry& entry, const model::Facts& work) const;
  Outcome evaluate_plain(const model::Facts& facts, const model::Workload* workload) const;
  Outcome node_outcome(const model::Facts& facts) const;

  const RuleSet& m_rules;
  const model::Facts& m_facts;
  const model::Workload* m_workload;
  SearchOptions m_options;
  NodeAbi m_node;
  bool m_relink_ok = false;
  std::shared_ptr<const Outcome> m_baseline;
  std::set<std::string> m_baseline_node; // workload sessions
  std::size_t m_used = 0;
  NodeOutcomeMemo* m_memo = nullptr;      // node sessions of verify_node_findings only
  std::shared_ptr<const NodeBase> m_base; // node sessions
  std::optional<model::Facts> m_work;     // node sessions: the facts the changes are applied to and taken back from
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
