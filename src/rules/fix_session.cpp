#include "rules/fix_session.hpp"

#include "rules/ruleset_impl.hpp"

#include <algorithm>
#include <cstdint>

namespace rules::detail {

namespace {

// The outcome of a node evaluation: each firing rule's id with its severity.
void add_firing(Outcome& o, const Rule& rule) {
  auto& severity = o.findings[rule.summary.id];
  severity = std::max(severity, rule.summary.severity);
}

bool cudnn_relinks_alike(const model::Facts& facts, const Relinker& relink) {
  model::Facts again = facts;
  relink(again, "cudnn");
  return again.get_version("cudnn.version") == facts.get_version("cudnn.version");
}

// The first fact two sets of facts disagree on (by type and text), or "".
std::string first_difference(const model::Facts& a, const model::Facts& b) {
  auto x = a.entries().begin(), y = b.entries().begin();
  for (; x != a.entries().end() && y != b.entries().end(); ++x, ++y) {
    if (x->first != y->first) return std::min(x->first, y->first);
    if (x->second.type() != y->second.type() || x->second.to_string() != y->second.to_string()) return x->first;
  }
  if (x != a.entries().end()) return x->first;
  if (y != b.entries().end()) return y->first;
  return {};
}

} // namespace

NodeBase::NodeBase(const RuleSet& database, const model::Facts& facts, const SearchOptions& options) : rules(database.impl()) {
  std::vector<std::size_t> all(rules.rules().size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  rules.fire(facts, all, firing);
  auto o = std::make_shared<Outcome>();
  o->ok = true;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (firing[i]) add_firing(*o, database.impl().rules[rules.rules()[i]]);
  baseline = std::move(o);
  relink_ok = options.relink && cudnn_relinks_alike(facts, options.relink);
}

Session::Session(const RuleSet& rules, const model::Facts& facts, const model::Workload* workload, const SearchOptions& options,
                 NodeOutcomeMemo* memo)
    : m_rules(rules), m_facts(facts), m_workload(workload), m_options(options), m_node(node_abi(facts)), m_memo(workload ? nullptr : memo) {
  if (!workload) {
    // Shared, not copied: a copy per finding would be quadratic again.
    if (m_memo) {
      std::lock_guard lock(m_memo->mutex);
      if (!m_memo->base) m_memo->base = std::make_shared<const NodeBase>(rules, facts, options);
      m_base = m_memo->base;
    } else {
      m_base = std::make_shared<const NodeBase>(rules, facts, options);
    }
    m_relink_ok = m_base->relink_ok;
    m_baseline = m_base->baseline;
    return;
  }
  // The load-order model is trusted only where it reproduces what the probe recorded.
  if (m_options.relink) m_relink_ok = cudnn_relinks_alike(facts, m_options.relink);
  m_baseline = std::make_shared<const Outcome>(evaluate_plain(facts, workload));
  for (const auto& f : evaluate_node(rules, facts)) m_baseline_node.insert(f.id);
}

Session::Applied Session::apply(const std::vector<Change>& changes) const {
  Applied a{m_facts, m_workload ? *m_workload : model::Workload{}, {}, {}, true};
  a.ok = apply_to(changes, a.facts, a.workload, a.extra, a.why_not);
  return a;
}

bool Session::apply_to(const std::vector<Change>& changes, model::Facts& facts, model::Workload& workload, std::vector<Change>& extra,
                       std::string& why_not) const {
  std::set<std::string> libraries;
  for (const auto& c : changes) {
    if (!apply_change(c, facts, workload, why_not, &m_rules.catalog())) return false;
    if (c.kind == ChangeKind::env || (c.kind == ChangeKind::package && c.package->fact == "te.version")) libraries.insert("cudnn");
    if (c.kind == ChangeKind::package && !c.package->library.empty()) libraries.insert(c.package->library);
  }
  for (const auto& lib : libraries) relink(facts, lib);
  // A wheel that TE or torch would not load is no fix by itself: add the step that makes it win.
  for (const auto& c : changes) {
    if (c.kind != ChangeKind::package || c.package->library.empty()) continue;
    std::string fact = c.package->library + ".version";
    if (facts.get_version(fact) == c.release->version) continue;
    auto steps = load_order_steps(facts, c.package->library);
    for (const auto& step : steps) {
      if (!apply_change(step, facts, workload, why_not)) break;
      extra.push_back(step);
    }
    relink(facts, c.package->library);
    if (facts.get_version(fact) != c.release->version) {
      auto path = facts.get_string(c.package->library + ".path");
      why_not = "TE would still load " + std::string(c.package->library == "cudnn" ? "cuDNN " : "NCCL ") +
                facts.get_string(fact).value_or("(none)") + (path ? " from " + *path : "") + " after installing the wheel";
      return false;
    }
  }
  return true;
}

std::shared_ptr<const Outcome> Session::evaluate(const std::vector<Change>& changes, Applied* out) {
  ++m_used;
  if (!m_workload) {
    NodeOutcomeMemo::Entry entry = node_changes(changes);
    if (out) {
      *out = Applied{};
      out->extra = std::move(entry.extra);
      out->ok = entry.outcome->ok;
      out->why_not = entry.outcome->why_not;
    }
    return std::move(entry.outcome);
  }
  Applied a = apply(changes);
  std::shared_ptr<const Outcome> result;
  if (!a.ok) {
    auto o = std::make_shared<Outcome>();
    o->why_not = a.why_not;
    result = std::move(o);
  } else {
    auto o = std::make_shared<Outcome>(evaluate_plain(a.facts, &a.workload));
    note_added(*o, *m_baseline);
    result = std::move(o);
  }
  if (out) *out = std::move(a);
  return result;
}

NodeOutcomeMemo::Entry Session::node_changes(const std::vector<Change>& changes) {
  if (!m_memo) return node_changes_incremental(changes);
  std::string key = change_key(changes);
  {
    std::lock_guard lock(m_memo->mutex);
    if (auto it = m_memo->outcomes.find(key); it != m_memo->outcomes.end()) return it->second;
  }
  NodeOutcomeMemo::Entry made = node_changes_incremental(changes);
  std::lock_guard lock(m_memo->mutex);
  return m_memo->outcomes.emplace(std::move(key), std::move(made)).first->second;
}

NodeOutcomeMemo::Entry Session::node_changes_incremental(const std::vector<Change>& changes) {
  if (!m_work) m_work.emplace(m_facts);
  model::Facts& work = *m_work;
  model::FactsJournal journal;
  work.attach(journal);
  model::Workload workload; // a node session's changes of a workload reach no node rule
  NodeOutcomeMemo::Entry entry;
  std::string why_not;
  auto o = std::make_shared<Outcome>();
  if (!apply_to(changes, work, workload, entry.extra, why_not)) {
    o->why_not = std::move(why_not);
  } else {
    // The rules that read a fact the changes moved are evaluated again; the others keep theirs.
    std::vector<std::size_t> positions = m_base->rules.reading(journal.changed(work));
    std::vector<unsigned char> fires;
    m_base->rules.fire(work, positions, fires);
    *o = *m_base->baseline;
    for (std::size_t i = 0; i < positions.size(); ++i) {
      std::size_t p = positions[i];
      if (fires[i] == m_base->firing[p]) continue;
      const Rule& rule = m_rules.impl().rules[m_base->rules.rules()[p]];
      if (fires[i]) add_firing(*o, rule);
      else o->findings.erase(rule.summary.id);
    }
    o->added.clear();
    note_added(*o, *m_baseline);
  }
  entry.outcome = std::move(o);
  if (m_options.check_incremental) cross_check(changes, entry, work);
  work.undo(journal);
  return entry;
}

void Session::cross_check(const std::vector<Change>& changes, const NodeOutcomeMemo::Entry& entry, const model::Facts& work) const {
  Applied full = apply(changes);
  const Outcome& o = *entry.outcome;
  std::string difference;
  if (full.ok != o.ok) difference = full.ok ? "applies in full only" : "applies incrementally only";
  else if (!o.ok && full.why_not != o.why_not) difference = "why not: " + full.why_not + " | " + o.why_not;
  else if (change_key(full.extra) != change_key(entry.extra)) difference = "the load-order steps differ";
  else if (o.ok) {
    if (auto name = first_difference(full.facts, work); !name.empty()) difference = "the facts differ at " + name;
    Outcome whole = node_outcome(full.facts);
    note_added(whole, *m_baseline);
    if (whole.findings != o.findings || whole.added != o.added) {
      std::string ids;
      for (const auto& [id, severity] : whole.findings)
        if (!o.findings.count(id)) ids += " +" + id;
      for (const auto& [id, severity] : o.findings)
        if (!whole.findings.count(id)) ids += " -" + id;
      difference += (difference.empty() ? "" : "; ") + std::string("the findings differ:") + ids;
    }
  }
  std::string label;
  for (const auto& c : changes) label += (label.empty() ? "" : " ") + c.name + "=" + c.value.value_or("(unset)");
  std::lock_guard lock(m_options.check_incremental->mutex);
  ++m_options.check_incremental->compared;
  if (!difference.empty()) m_options.check_incremental->differences.push_back(label + ": " + difference);
}

Outcome Session::evaluate_plain(const model::Facts& facts, const model::Workload* workload) const {
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

Outcome Session::node_outcome(const model::Facts& facts) const {
  Outcome o;
  o.ok = true;
  for (const auto& f : evaluate_node(m_rules, facts)) o.findings[f.id] = std::max(o.findings[f.id], f.severity);
  return o;
}

std::string change_key(const std::vector<Change>& changes) {
  std::string key;
  for (const auto& c : changes) {
    key += std::to_string(static_cast<int>(c.kind)) + '\x1f' + c.name + '\x1f' + (c.value ? "=" + *c.value : "-") + '\x1f' +
           std::to_string(reinterpret_cast<std::uintptr_t>(c.package)) + '\x1f' +
           std::to_string(reinterpret_cast<std::uintptr_t>(c.release)) + '\x1e';
  }
  return key;
}

int backend_rank(const std::optional<std::string>& selected) {
  if (!selected) return 9;
  if (*selected == "FlashAttention") return 0;
  if (*selected == "FusedAttention") return 1;
  return 2;
}

int tier_of(const Outcome& o, const std::vector<Change>& changes) {
  if (!o.selected) return k_no_backend_tier;
  bool forced = std::any_of(changes.begin(), changes.end(), [](const Change& c) {
    return forces_backend((c.kind == ChangeKind::env ? "env." : "workload.") + c.name, c.value.value_or(""));
  });
  return outcome_tier(*o.selected, forced);
}

void note_added(Outcome& outcome, const Outcome& baseline) {
  for (const auto& [id, severity] : outcome.findings)
    if (!baseline.findings.count(id)) outcome.added.emplace_back(id, severity);
}

bool meets(const Goal& goal, const Outcome& o) {
  if (!o.ok) return false;
  if (o.findings.count(goal.finding_id)) return false;
  // A workload keeps (or gets) a backend: clearing one finding of a workload that cannot run is
  // no fix.
  if (goal.workload && !o.selected) return false;
  for (const auto& [id, severity] : o.added)
    if (severity >= goal.severity) return false;
  return true;
}

bool progress(const Outcome& base, const Outcome& o) {
  if (!o.ok) return false;
  for (const auto& r : base.reasons)
    if (!o.reasons.count(r)) return true;
  return false;
}

model::Fix to_fix(const Verified& v, const Session& s, const Goal& goal) {
  std::vector<Change> all = v.candidate.changes;
  all.insert(all.end(), v.extra.begin(), v.extra.end());
  model::Fix fix = render_changes(all, s.facts());
  model::FixOutcome outcome;
  if (s.workload()) {
    outcome.backend = v.outcome->selected.value_or("");
    if (outcome.backend == "FusedAttention") outcome.sub_backend = v.outcome->sub_backend.value_or("");
  }
  outcome.clears = goal.finding_id;
  fix.verified = outcome;
  return fix;
}

bool same_changes(const model::Fix& a, const model::Fix& b) { return a.changes == b.changes; }

} // namespace rules::detail
