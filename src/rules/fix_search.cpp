// The fix search (fix_search.hpp). The key idea: a fix is a small set of changes to the inputs
// of the model (facts and workload), so "does it work" is answered by running the same engine on
// the changed inputs — never by trusting the text a rule wrote. Candidates are cheap to make and
// evaluation is a few microseconds per rule, so the search is a bounded enumeration:
//   1. single changes, family by family (an env var, a TE argument, one package's releases in
//      order of distance from the installed one, a workload key, a GPU class), stopping a
//      version family at its first release that works;
//   2. only when no single change works, pairs of changes that each made progress (took away
//      one of the reasons that block the workload), from different families;
//   3. rank: counterfactuals (the model's shape, the GPU) after every change the user can make;
//      fewer changes; upgrades before downgrades; the cheaper kind of change (environment, TE or
//      launcher argument, library wheel, Python package, TE, data layout, model, hardware); the
//      smaller version step; the backend TE prefers.
//   4. one pin per package for the whole report (unify_pins): the release that clears every
//      finding the package can clear replaces the others.
// Every evaluation counts against SearchOptions::budget.
#include "rules/fix_search.hpp"

#include "rules/fix_commands.hpp"
#include "rules/ruleset_impl.hpp"
#include "rules/templates.hpp"
#include "util/parallel.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>

namespace rules {

namespace {

using detail::Change;
using detail::ChangeKind;

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
void note_added(Outcome& outcome, const Outcome& baseline) {
  for (const auto& [id, severity] : outcome.findings)
    if (!baseline.findings.count(id)) outcome.added.emplace_back(id, severity);
}

struct Candidate {
  std::vector<Change> changes;
  int cost_class = 0; // detail::change_class: 0 env ... 5 data layout, 6 model shape, 7 hardware
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

std::string change_key(const std::vector<Change>& changes) {
  std::string key;
  for (const auto& c : changes) {
    key += std::to_string(static_cast<int>(c.kind)) + '\x1f' + c.name + '\x1f' + (c.value ? "=" + *c.value : "-") + '\x1f' +
           std::to_string(reinterpret_cast<std::uintptr_t>(c.package)) + '\x1f' +
           std::to_string(reinterpret_cast<std::uintptr_t>(c.release)) + '\x1e';
  }
  return key;
}

class Session {
public:
  Session(const RuleSet& rules, const model::Facts& facts, const model::Workload* workload, const SearchOptions& options,
          NodeOutcomeMemo* memo = nullptr)
      : m_rules(rules), m_facts(facts), m_workload(workload), m_options(options), m_node(detail::node_abi(facts)),
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
      if (!detail::apply_change(c, a.facts, a.workload, a.why_not, &m_rules.catalog())) {
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
      auto steps = detail::load_order_steps(a.facts, c.package->library);
      for (const auto& step : steps) {
        if (!detail::apply_change(step, a.facts, a.workload, a.why_not)) break;
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
  // only through verify_node()).
  std::shared_ptr<const Outcome> evaluate(const std::vector<Change>& changes, Applied* out = nullptr) {
    ++m_used;
    Applied a = apply(changes);
    std::shared_ptr<const Outcome> result;
    if (!a.ok) {
      auto o = std::make_shared<Outcome>();
      o->why_not = a.why_not;
      result = std::move(o);
    } else if (m_memo) {
      // Shared with every search of the report: never copied (a node outcome holds every firing rule).
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
int backend_rank(const std::optional<std::string>& selected) {
  if (!selected) return 9;
  if (*selected == "FlashAttention") return 0;
  if (*selected == "FusedAttention") return 1;
  return 2;
}

struct Goal {
  std::string finding_id;
  model::Severity severity = model::Severity::error;
  bool needs_backend = false; // the finding is "no backend"
  bool workload = false;      // a workload finding: the workload must run afterwards
};

// Whether an outcome meets the goal on the workload side (node findings are checked after).
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

// Took away at least one reason that blocks the workload, or the finding's own rule.
bool progress(const Outcome& base, const Outcome& o) {
  if (!o.ok) return false;
  for (const auto& r : base.reasons)
    if (!o.reasons.count(r)) return true;
  return false;
}

struct Verified {
  Candidate candidate;
  std::shared_ptr<const Outcome> outcome;
  std::vector<Change> extra;
};

class Search {
public:
  Search(Session& session, Goal goal) : m_session(session), m_goal(std::move(goal)) {}

  // Evaluates a candidate; on success (goal met and no new node problem) records it.
  bool try_candidate(const Candidate& c) {
    if (!m_session.budget_left()) return false;
    Session::Applied applied;
    std::shared_ptr<const Outcome> o = m_session.evaluate(c.changes, &applied);
    if (!c.pair) m_singles.push_back(c);
    // Clears the finding but brings another problem: a second change may remove that one.
    bool clears = o->ok && !o->findings.count(m_goal.finding_id);
    if (!meets(m_goal, *o)) {
      if (clears && !c.pair) m_clearing.push_back(c);
      else if (progress(m_session.baseline(), *o)) m_progress.push_back(c);
      return false;
    }
    if (m_session.workload()) {
      if (!m_session.new_node_problem(applied.facts, std::min(m_goal.severity, model::Severity::error), m_goal.finding_id).empty()) {
        if (!c.pair) m_clearing.push_back(c);
        return false;
      }
    }
    m_found.push_back({c, o, applied.extra});
    return true;
  }

  // families are tried one change at a time; complements (changes that cannot clear the finding
  // alone) only as the second change of a pair.
  void run(const std::vector<std::vector<Candidate>>& families, const std::vector<Candidate>& complements = {}) {
    for (auto& family : families) {
      for (const auto& c : family) {
        if (!m_session.budget_left()) return;
        if (try_candidate(c)) break; // the first that works is the smallest step of its family
      }
    }
    if (!m_found.empty()) return;
    m_singles.insert(m_singles.end(), complements.begin(), complements.end());
    // Pairs, only when no single change works: a change that clears the finding but brings
    // another problem with each other single change; then two changes that each took away a
    // reason blocking the workload.
    std::stable_sort(m_clearing.begin(), m_clearing.end(), ranked);
    std::stable_sort(m_singles.begin(), m_singles.end(), ranked);
    std::stable_sort(m_progress.begin(), m_progress.end(), ranked);
    std::set<std::string> done;
    auto try_pair = [&](const Candidate& a, const Candidate& b) {
      if (a.family == b.family) return;
      std::string key = std::min(a.family, b.family) + "+" + std::max(a.family, b.family);
      if (done.count(key)) return;
      Candidate pair;
      pair.changes = a.changes;
      pair.changes.insert(pair.changes.end(), b.changes.begin(), b.changes.end());
      pair.cost_class = std::max(a.cost_class, b.cost_class);
      pair.step = a.step + b.step;
      pair.family = key;
      pair.order = a.order * 1000 + b.order;
      pair.pair = true;
      if (try_candidate(pair)) done.insert(key);
    };
    for (const auto& a : m_clearing)
      for (const auto& b : m_singles) {
        if (!m_session.budget_left()) return;
        try_pair(a, b);
      }
    for (std::size_t i = 0; i < m_progress.size(); ++i)
      for (std::size_t j = i + 1; j < m_progress.size(); ++j) {
        if (!m_session.budget_left()) return;
        try_pair(m_progress[i], m_progress[j]);
      }
  }

  static bool ranked(const Candidate& a, const Candidate& b) {
    if (a.weight() != b.weight()) return a.weight() < b.weight();
    if (a.cost_class != b.cost_class) return a.cost_class < b.cost_class;
    if (a.step != b.step) return a.step < b.step;
    return a.order < b.order;
  }

  std::vector<Verified> results() {
    std::stable_sort(m_found.begin(), m_found.end(), [](const Verified& a, const Verified& b) {
      const Candidate& x = a.candidate;
      const Candidate& y = b.candidate;
      if (x.weight() != y.weight()) return x.weight() < y.weight();
      if (x.cost_class != y.cost_class) return x.cost_class < y.cost_class;
      if (x.step != y.step) return x.step < y.step;
      int ra = backend_rank(a.outcome->selected), rb = backend_rank(b.outcome->selected);
      if (ra != rb) return ra < rb;
      return x.order < y.order;
    });
    return m_found;
  }

private:
  Session& m_session;
  Goal m_goal;
  std::vector<Verified> m_found;
  std::vector<Candidate> m_progress; // took away a blocking reason
  std::vector<Candidate> m_clearing; // cleared the finding, brought another problem
  std::vector<Candidate> m_singles;  // every single change evaluated
};

// ---- candidate generation --------------------------------------------------------------------

long version_step(const model::Version& from, const model::Version& to) {
  long step = 0;
  long weight = 1000000;
  for (std::size_t i = 0; i < 3; ++i, weight /= 100) step += std::abs(to.component(i) - from.component(i)) * weight;
  return step + std::abs(to.component(3) - from.component(3)) / 1000;
}

int package_class(const Package& p) {
  if (!p.library.empty()) return 2;
  if (p.fact == "te.version") return 4;
  return 3;
}

// step_around: also the switches that turn a backend off (NVTE_FUSED_ATTN=0, NVTE_FLASH_ATTN=0),
// which step around a known-bad kernel but never bring a backend back.
std::vector<std::vector<Candidate>> candidates(const Session& s, bool step_around) {
  std::vector<std::vector<Candidate>> families;
  std::size_t order = 0;
  auto single = [&](Change change, int cost_class, std::string family, long step = 0) {
    Candidate c;
    c.changes.push_back(std::move(change));
    c.cost_class = cost_class;
    c.family = std::move(family);
    c.step = step;
    c.order = order++;
    return c;
  };
  const model::Facts& facts = s.facts();

  // Environment: every variable a rule reads that is set on the node can be unset.
  std::set<std::string> env_read;
  for (const auto& slot : s.rules().impl().slots.slots())
    if (slot.name.starts_with("env.")) env_read.insert(slot.name.substr(4));
  for (const auto& name : env_read) {
    if (!facts.has("env." + name) || name == "PATH" || name == "LD_LIBRARY_PATH") continue;
    families.push_back({single(Change{ChangeKind::env, name, std::nullopt, nullptr, nullptr}, 0, "env:" + name)});
  }

  const model::Workload* w = s.workload();
  auto text = [&](std::string_view key) -> std::string {
    const model::Value* v = w ? w->get(key) : nullptr;
    return v ? v->to_string() : "";
  };
  // Stepping around a known-bad kernel: the switch of the backend TE selects now, so that the
  // workload moves to another one (turning off a backend TE does not run would only silence the
  // rule). Megatron-LM sets these switches itself (--attention-backend): there its argument is the change.
  const auto& selected = s.baseline().selected;
  if (w && step_around && selected && text("attention_backend").empty()) {
    std::string name = *selected == "FusedAttention" ? "NVTE_FUSED_ATTN" : *selected == "FlashAttention" ? "NVTE_FLASH_ATTN" : "";
    if (!name.empty() && facts.get_string("env." + name) != "0")
      families.push_back({single(Change{ChangeKind::env, name, std::string("0"), nullptr, nullptr}, 0, "env-off:" + name)});
  }
  auto workload_family = [&](std::string_view key, std::vector<std::string> values, int cost_class) {
    std::vector<Candidate> family;
    for (auto& v : values) {
      if (v == text(key)) continue;
      family.push_back(
          single(Change{ChangeKind::workload, std::string(key), v, nullptr, nullptr}, cost_class, "workload:" + std::string(key)));
    }
    if (!family.empty()) families.push_back(std::move(family));
  };
  if (w) {
    // TE call arguments: no change to the model's mathematics.
    if (text("context_parallel") == "true") workload_family("cp_comm_type", {"p2p", "a2a", "a2a+p2p", "all_gather"}, 1);
    if (text("api") == "TransformerLayer" && !text("input_shape").empty())
      workload_family("attn_input_format", {text("input_shape") == "bsh" ? "bshd" : "sbhd"}, 1);
    if (text("qkv_interleaved") == "true") workload_family("qkv_interleaved", {"false"}, 1);
    // A workload launched by Megatron-LM: its --attention-backend rewrites the NVTE_*_ATTN switches.
    if (!text("attention_backend").empty()) workload_family("attention_backend", {"auto", "flash", "fused", "unfused"}, 1);
  }

  // Packages from the catalog, each family ordered by distance from what is installed.
  for (const auto& package : s.rules().catalog().packages) {
    std::vector<const PackageRelease*> fitting;
    // Only releases the node can install and load (CUDA major, Python, torch, glibc, driver, and
    // a release for this node of everything the release requires).
    for (const auto& r : package.releases)
      if (misfit(s.rules().catalog(), r, s.node()).empty()) fitting.push_back(&r);
    if (fitting.empty()) continue;
    auto current = facts.get_version(package.fact);
    std::vector<Candidate> ups, downs;
    for (const auto* r : fitting) {
      Change change{ChangeKind::package, package.fact, r->version.to_string(), &package, r};
      long step = current ? version_step(*current, r->version) : 0;
      if (!current) {
        ups.push_back(single(change, package_class(package), "package:" + package.fact, 0));
      } else if (r->version > *current) {
        ups.push_back(single(change, package_class(package), "package:" + package.fact, step));
      } else if (r->version < *current) {
        // A downgrade ranks after any upgrade of the same kind.
        downs.push_back(single(change, package_class(package), "package:" + package.fact, step + 100000000));
      }
    }
    if (!current) std::reverse(ups.begin(), ups.end()); // not installed: the newest first
    std::reverse(downs.begin(), downs.end());           // the nearest downgrade first
    if (!ups.empty()) families.push_back(std::move(ups));
    if (!downs.empty()) families.push_back(std::move(downs));
  }

  if (w) {
    // Workload changes that alter what is computed or how data is laid out.
    // Packing on or off: thd with the padding mask it needs, or bshd / sbhd (a padding mask stays).
    std::vector<Candidate> layouts;
    for (std::string format : {"bshd", "sbhd", "thd"}) {
      if (format == text("qkv_format")) continue;
      Candidate c = single(Change{ChangeKind::workload, "qkv_format", format, nullptr, nullptr}, 5, "workload:qkv_format");
      std::string mask = text("attn_mask_type");
      if (format == "thd" && detail::packed_mask(mask) != mask)
        c.changes.push_back(Change{ChangeKind::workload, "attn_mask_type", detail::packed_mask(mask), nullptr, nullptr});
      layouts.push_back(std::move(c));
    }
    if (!layouts.empty()) families.push_back(std::move(layouts));
    std::string dtype = text("qkv_dtype");
    if (dtype == "fp8" || text("fp8_dpa") == "true") workload_family("qkv_dtype", {"bf16"}, 5);
    else if (dtype == "bf16" || dtype == "fp16") workload_family("qkv_dtype", {dtype == "bf16" ? "fp16" : "bf16"}, 5);
    std::string window = text("window_size");
    if (window != "-1,-1" && window != "-1,0")
      workload_family("window_size", {text("attn_mask_type").find("causal") != std::string::npos ? "-1,0" : "-1,-1"}, 6);
    if (text("head_dim_qk") != text("head_dim_v")) {
      long qk = std::atol(text("head_dim_qk").c_str()), v = std::atol(text("head_dim_v").c_str());
      workload_family("head_dim_v", {std::to_string(std::max(qk, v))}, 6);
    }
    long qk = std::atol(text("head_dim_qk").c_str());
    if (qk > 128) {
      std::vector<Candidate> family;
      Candidate c = single(Change{ChangeKind::workload, "head_dim_qk", "128", nullptr, nullptr}, 6, "workload:head_dims");
      c.changes.push_back(Change{ChangeKind::workload, "head_dim_v", "128", nullptr, nullptr});
      family.push_back(std::move(c));
      families.push_back(std::move(family));
    }
  }

  // A GPU class: the architectures TE's rules distinguish.
  std::vector<Candidate> gpus;
  auto sm = facts.get_int("gpu[0].sm");
  for (long target : {90L, 100L, 80L}) {
    if (sm && *sm == target) continue;
    gpus.push_back(single(Change{ChangeKind::gpu, "gpu.sm", std::to_string(target), nullptr, nullptr}, 7, "gpu"));
  }
  families.push_back(std::move(gpus));
  return families;
}

// What a finding's rule reads (its condition and applies_to facts), when that is all its firing
// depends on; nullopt when it reads explain.* (the whole selection) or the rule is unknown.
std::optional<std::vector<std::string>> facts_read_by(const RuleSet& rules, const std::string& id) {
  const auto& impl = rules.impl();
  // By the index: a scan of every rule per finding made check quadratic in its firing rules.
  auto found = impl.rule_index.find(id);
  if (found == impl.rule_index.end()) return std::nullopt;
  const auto& rule = impl.rules[found->second];
  if (rule.when.reads_explain) return std::nullopt;
  std::vector<std::string> names;
  for (int slot : rule.when.slots) names.push_back(impl.slots.slots()[static_cast<std::size_t>(slot)].name);
  for (const auto& a : rule.applies_to)
    if (a.slot >= 0) names.push_back(impl.slots.slots()[static_cast<std::size_t>(a.slot)].name);
  return names;
}

// Whether a change can move any of those facts. A candidate that moves none of them cannot clear
// the finding, so the search need not spend an evaluation on it.
bool touches(const Change& change, const std::vector<std::string>& read) {
  auto prefixes = detail::moved_fact_prefixes(change);
  for (const auto& name : read)
    for (const auto& prefix : prefixes)
      if (name.starts_with(prefix)) return true;
  return false;
}

// Moves the candidates that touch none of the facts read out of families; returns them.
std::vector<Candidate> set_aside_irrelevant(std::vector<std::vector<Candidate>>& families, const std::vector<std::string>& read) {
  std::vector<Candidate> aside;
  for (auto& family : families) {
    auto irrelevant = [&](const Candidate& c) {
      return std::none_of(c.changes.begin(), c.changes.end(), [&](const Change& change) { return touches(change, read); });
    };
    for (const auto& c : family)
      if (irrelevant(c)) aside.push_back(c);
    std::erase_if(family, irrelevant);
  }
  std::erase_if(families, [](const auto& family) { return family.empty(); });
  return aside;
}

// ---- turning verified candidates into fixes ---------------------------------------------------

model::Fix to_fix(const Verified& v, const Session& s, const Goal& goal) {
  std::vector<Change> all = v.candidate.changes;
  all.insert(all.end(), v.extra.begin(), v.extra.end());
  model::Fix fix = detail::render_changes(all, s.facts());
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

} // namespace

namespace {

std::vector<model::Fix> search_fixes_sharing(const RuleSet& rules, const model::Facts& facts, const model::Workload* workload,
                                             const model::Finding& target, const SearchOptions& options, NodeOutcomeMemo* memo);

} // namespace

std::vector<model::Fix> search_fixes(const RuleSet& rules, const model::Facts& facts, const model::Workload* workload,
                                     const model::Finding& target, const SearchOptions& options) {
  return search_fixes_sharing(rules, facts, workload, target, options, nullptr);
}

namespace {

std::vector<model::Fix> search_fixes_sharing(const RuleSet& rules, const model::Facts& facts, const model::Workload* workload,
                                             const model::Finding& target, const SearchOptions& options, NodeOutcomeMemo* memo) {
  Session session(rules, facts, workload, options, memo);
  Goal goal{target.id, target.severity, target.id == "attention-no-backend", workload != nullptr};
  std::vector<model::Fix> verified;

  // The rule's own fixes first: they carry the explanation; each is checked as it is written.
  std::vector<model::Fix> explanation, debug, unverified;
  std::vector<model::Fix> own = target.fixes;
  for (std::size_t i = 0; i < own.size(); ++i) {
    model::Fix fix = own[i];
    if (fix.command.empty()) {
      explanation.push_back(std::move(fix));
      continue;
    }
    // A logging aid (NVTE_DEBUG) changes what TE prints, not what it selects: not a fix to check.
    if (fix.kind == "debug") {
      fix.unverified_reason = "a logging aid: it changes what TE prints, not what it selects";
      debug.push_back(std::move(fix));
      continue;
    }
    auto interpreted = detail::interpret_command(fix.command, rules.catalog(), session.node());
    if (!interpreted.ok) {
      fix.unverified_reason = interpreted.why_not;
      unverified.push_back(std::move(fix));
      continue;
    }
    if (interpreted.only_load_order_step && i > 0 && own[i - 1].command.find(" pip install ") != std::string::npos) {
      // {{cudnn_path_fix}} after a cuDNN install: the install is verified with the step it needs.
      continue;
    }
    Session::Applied applied;
    std::shared_ptr<const Outcome> evaluated = session.evaluate(interpreted.changes, &applied);
    const Outcome& o = *evaluated;
    std::string problem;
    if (meets(goal, o) && workload)
      problem = session.new_node_problem(applied.facts, std::min(goal.severity, model::Severity::error), goal.finding_id);
    if (meets(goal, o) && problem.empty()) {
      std::vector<Change> all = interpreted.changes;
      all.insert(all.end(), applied.extra.begin(), applied.extra.end());
      model::Fix rendered = detail::render_changes(all, facts);
      fix.changes = rendered.changes;
      if (!applied.extra.empty() || interpreted.resolved_version) fix.command = rendered.command;
      model::FixOutcome outcome;
      if (workload) {
        outcome.backend = o.selected.value_or("");
        if (outcome.backend == "FusedAttention") outcome.sub_backend = o.sub_backend.value_or("");
      }
      outcome.clears = target.id;
      fix.verified = outcome;
      verified.push_back(std::move(fix));
    } else {
      if (problem.empty())
        for (const auto& [id, severity] : o.added)
          if (severity >= goal.severity && id != target.id) problem = id;
      bool no_backend = o.ok && !o.selected && goal.workload;
      fix.unverified_reason =
          detail::failure_reason(interpreted.label, o.why_not, o.ok && o.findings.count(target.id) > 0, no_backend, problem);
      fix.refuted = true; // the model ran it: it does not help
      unverified.push_back(std::move(fix));
    }
  }

  // Informational findings keep their own fixes, checked, without a search for others.
  Search search(session, goal);
  if (target.severity != model::Severity::info) {
    auto families = candidates(session, !goal.needs_backend);
    std::vector<Candidate> complements;
    if (auto read = facts_read_by(rules, target.id)) complements = set_aside_irrelevant(families, *read);
    search.run(families, complements);
  }
  for (const auto& v : search.results()) {
    model::Fix fix = to_fix(v, session, goal);
    bool duplicate = false;
    for (const auto& seen : verified) duplicate = duplicate || same_changes(seen, fix);
    if (!duplicate) verified.push_back(std::move(fix));
  }
  // Rule-written verified fixes and searched ones, ranked together by the changes they make.
  std::stable_sort(verified.begin(), verified.end(),
                   [&](const model::Fix& a, const model::Fix& b) { return detail::fix_rank(a, facts) < detail::fix_rank(b, facts); });
  std::vector<model::Fix> out = std::move(verified);
  for (auto& f : explanation) out.push_back(std::move(f));
  for (auto& f : debug) out.push_back(std::move(f));
  for (auto& f : unverified) out.push_back(std::move(f));
  return out;
}

} // namespace

void verify_explanation(const RuleSet& rules, const model::Facts& facts, model::Explanation& e, const SearchOptions& options) {
  for (auto& f : e.findings) f.fixes = search_fixes(rules, facts, &e.workload, f, options);
  // A backend reason's fix is verified when its backend is available afterwards.
  Session session(rules, facts, &e.workload, options);
  for (auto& [key, verdict] : e.backends) {
    for (auto& reason : verdict.reasons) {
      for (auto& fix : reason.fixes) {
        if (fix.command.empty()) continue;
        auto interpreted = detail::interpret_command(fix.command, rules.catalog(), session.node());
        if (!interpreted.ok) {
          fix.unverified_reason = interpreted.why_not;
          continue;
        }
        if (!session.budget_left()) {
          fix.unverified_reason = "not checked: the search budget for this workload was spent";
          continue;
        }
        Session::Applied applied;
        std::shared_ptr<const Outcome> evaluated = session.evaluate(interpreted.changes, &applied);
        const Outcome& o = *evaluated;
        if (o.ok && o.is_available(key)) {
          std::vector<Change> all = interpreted.changes;
          all.insert(all.end(), applied.extra.begin(), applied.extra.end());
          model::Fix rendered = detail::render_changes(all, facts);
          fix.changes = rendered.changes;
          if (!applied.extra.empty() || interpreted.resolved_version) fix.command = rendered.command;
          fix.verified = model::FixOutcome{o.selected.value_or(""), o.selected == "FusedAttention" ? o.sub_backend.value_or("") : "", ""};
        } else if (!o.ok) {
          fix.unverified_reason = o.why_not;
          fix.refuted = true;
        } else {
          fix.refuted = true;
          std::vector<std::string> still;
          for (const auto& r : o.reasons)
            if (r.starts_with(key + ":")) still.push_back(r.substr(key.size() + 1));
          bool cleared = std::none_of(still.begin(), still.end(), [&](const std::string& r) { return r == reason.rule; });
          fix.unverified_reason = "with " + interpreted.label + (cleared ? " this reason goes, but " : " ") + detail::backend_label(key) +
                                  " is still out" + (still.empty() ? "" : ": " + util::join(still, ", "));
        }
      }
    }
  }
}

void verify_node_findings(const RuleSet& rules, const model::Facts& facts, std::vector<model::Finding>& findings,
                          const SearchOptions& options) {
  // Each finding's search is its own (its budget, its candidates); they share node outcomes, and
  // run on several threads: on a GPU node with TE this was a third of check's own time.
  NodeOutcomeMemo memo;
  std::vector<std::size_t> node;
  for (std::size_t i = 0; i < findings.size(); ++i)
    if (findings[i].workload.empty()) node.push_back(i);
  util::parallel_for(node.size(), std::min(util::available_cpus(), 8u), [&](std::size_t k) {
    model::Finding& f = findings[node[k]];
    f.fixes = search_fixes_sharing(rules, facts, nullptr, f, options, &memo);
  });
}

namespace {

// A verified fix's changes back as Changes (for re-checking it with another release of one
// package); nullopt when one of them is not a change the search makes.
std::optional<std::vector<Change>> changes_of(const model::Fix& fix, const RuleSet& rules, const NodeAbi& node) {
  std::vector<Change> out;
  for (const auto& [name, value] : fix.changes) {
    if (name.starts_with("env.")) {
      out.push_back(
          Change{ChangeKind::env, name.substr(4), value == "(unset)" ? std::nullopt : std::optional<std::string>(value), nullptr, nullptr});
    } else if (name.starts_with("workload.")) {
      out.push_back(Change{ChangeKind::workload, name.substr(9), value, nullptr, nullptr});
    } else if (name == "gpu.sm") {
      out.push_back(Change{ChangeKind::gpu, name, value, nullptr, nullptr});
    } else {
      auto version = model::Version::parse(value);
      const PackageRelease* release = nullptr;
      const Package* package = nullptr;
      for (const Package* p : rules.catalog().for_fact(name))
        for (const auto& r : p->releases)
          if (version && r.version == *version && installs_on(r, node) && !release) {
            release = &r;
            package = p;
          }
      if (!release) return std::nullopt;
      out.push_back(Change{ChangeKind::package, name, value, package, release});
    }
  }
  return out;
}

// The same changes with the package of fact at release (of the same package family).
std::optional<std::vector<Change>> repinned(std::vector<Change> changes, const RuleSet& rules, const NodeAbi& node, const std::string& fact,
                                            const model::Version& version) {
  for (auto& c : changes) {
    if (c.kind != ChangeKind::package || c.name != fact) continue;
    const PackageRelease* release = nullptr;
    const Package* package = nullptr;
    for (const Package* p : rules.catalog().for_fact(fact))
      for (const auto& r : p->releases)
        if (r.version == version && installs_on(r, node) && !release) {
          release = &r;
          package = p;
        }
    if (!release) return std::nullopt;
    c = Change{ChangeKind::package, fact, version.to_string(), package, release};
  }
  return changes;
}

// The fix the changes make for target when the model verifies it (as search_fixes would), else nullopt.
std::optional<model::Fix> recheck(Session& session, const model::Finding& target, const std::vector<Change>& changes) {
  Goal goal{target.id, target.severity, target.id == "attention-no-backend" || target.id == "workload-no-attention-backend",
            session.workload() != nullptr};
  Session::Applied applied;
  std::shared_ptr<const Outcome> o = session.evaluate(changes, &applied);
  if (!meets(goal, *o)) return std::nullopt;
  if (session.workload() &&
      !session.new_node_problem(applied.facts, std::min(goal.severity, model::Severity::error), goal.finding_id).empty())
    return std::nullopt;
  Verified v{Candidate{changes, 0, 0, {}, 0, false}, o, applied.extra};
  return to_fix(v, session, goal);
}

std::optional<std::string> pinned_version(const model::Fix& fix, const std::string& fact) {
  for (const auto& [name, value] : fix.changes)
    if (name == fact) return value;
  return std::nullopt;
}

} // namespace

void unify_pins(const RuleSet& rules, const model::Facts& facts, std::vector<model::Explanation>& explanations,
                std::vector<model::Finding>* node_findings, const SearchOptions& options) {
  std::vector<model::Explanation*> all;
  all.reserve(explanations.size());
  for (auto& e : explanations) all.push_back(&e);
  unify_pins(rules, facts, all, node_findings, options);
}

void unify_pins(const RuleSet& rules, const model::Facts& facts, const std::vector<model::Explanation*>& explanations,
                std::vector<model::Finding>* node_findings, const SearchOptions& options) {
  // Every finding of the report with the workload it is about (nullptr: a node finding).
  struct Site {
    model::Finding* finding;
    const model::Workload* workload;
  };
  std::vector<Site> sites;
  if (node_findings)
    for (auto& f : *node_findings) sites.push_back({&f, nullptr});
  for (auto* e : explanations)
    for (auto& f : e->findings) sites.push_back({&f, &e->workload});
  // One search session per workload (and one for the node): their baselines are reused.
  std::map<const model::Workload*, std::unique_ptr<Session>> sessions;
  auto session_for = [&](const model::Workload* w) -> Session& {
    auto& slot = sessions[w];
    if (!slot) slot = std::make_unique<Session>(rules, facts, w, options);
    return *slot;
  };
  const NodeAbi node = detail::node_abi(facts);

  std::set<std::string> package_facts;
  for (const auto& p : rules.catalog().packages) package_facts.insert(p.fact);
  for (const auto& fact : package_facts) {
    std::set<std::string> pins;
    for (const auto& site : sites)
      for (const auto& fix : site.finding->fixes)
        if (fix.verified)
          if (auto v = pinned_version(fix, fact)) pins.insert(*v);
    if (pins.size() < 2) continue;
    // Each pinned release, scored by how many findings it clears (each finding with one of its
    // fixes re-pinned); ties go to upgrades, the nearest first, then the nearest downgrade.
    auto current = facts.get_version(fact);
    struct Choice {
      model::Version version;
      std::size_t clears = 0;
    };
    std::vector<Choice> choices;
    for (const auto& text : pins)
      if (auto v = model::Version::parse(text)) choices.push_back({*v, 0});
    std::map<std::pair<model::Finding*, std::string>, std::optional<model::Fix>> rechecked; // (finding, version) -> fix
    for (auto& choice : choices) {
      for (const auto& site : sites) {
        bool pins_fact = false;
        for (const auto& fix : site.finding->fixes) pins_fact = pins_fact || (fix.verified && pinned_version(fix, fact));
        if (!pins_fact) continue;
        std::optional<model::Fix> found;
        for (const auto& fix : site.finding->fixes) {
          if (!fix.verified || !pinned_version(fix, fact)) continue;
          if (pinned_version(fix, fact) == choice.version.to_string()) {
            found = fix;
            break;
          }
          auto changes = changes_of(fix, rules, node);
          if (!changes) continue;
          auto moved = repinned(*changes, rules, node, fact, choice.version);
          if (!moved) continue;
          if ((found = recheck(session_for(site.workload), *site.finding, *moved))) break;
        }
        if (found) ++choice.clears;
        rechecked[{site.finding, choice.version.to_string()}] = std::move(found);
      }
    }
    auto better = [&](const Choice& a, const Choice& b) {
      if (a.clears != b.clears) return a.clears > b.clears;
      bool up_a = !current || !(a.version < *current), up_b = !current || !(b.version < *current);
      if (up_a != up_b) return up_a;
      return up_a ? a.version < b.version : b.version < a.version;
    };
    std::stable_sort(choices.begin(), choices.end(), better);
    const std::string chosen = choices.front().version.to_string();
    // Every other pin of the package goes: replaced by the chosen release where that works for its
    // finding, else dropped (two pins of one package cannot both be installed).
    for (const auto& site : sites) {
      auto& fixes = site.finding->fixes;
      bool replaced = false;
      std::vector<model::Fix> kept;
      for (auto& fix : fixes) {
        auto pin = fix.verified ? pinned_version(fix, fact) : std::nullopt;
        if (!pin || *pin == chosen) {
          kept.push_back(std::move(fix));
          continue;
        }
        auto it = rechecked.find({site.finding, chosen});
        if (!replaced && it != rechecked.end() && it->second) {
          kept.push_back(*it->second);
          replaced = true;
        }
      }
      // The same changes twice (the chosen pin was there already): keep the first.
      std::vector<model::Fix> unique;
      for (auto& fix : kept) {
        bool seen = fix.verified &&
                    std::any_of(unique.begin(), unique.end(), [&](const model::Fix& u) { return u.verified && same_changes(u, fix); });
        if (!seen) unique.push_back(std::move(fix));
      }
      auto verified_end = std::stable_partition(unique.begin(), unique.end(), [](const model::Fix& f) { return f.verified.has_value(); });
      std::stable_sort(unique.begin(), verified_end,
                       [&](const model::Fix& a, const model::Fix& b) { return detail::fix_rank(a, facts) < detail::fix_rank(b, facts); });
      fixes = std::move(unique);
    }
    // A backend reason's fix that pins another release: re-checked with the chosen one.
    for (auto* explanation : explanations) {
      model::Explanation& e = *explanation;
      for (auto& [key, verdict] : e.backends) {
        for (auto& reason : verdict.reasons) {
          for (auto& fix : reason.fixes) {
            auto pin = fix.verified ? pinned_version(fix, fact) : std::nullopt;
            if (!pin || *pin == chosen) continue;
            auto changes = changes_of(fix, rules, node);
            auto moved = changes ? repinned(*changes, rules, node, fact, *model::Version::parse(chosen)) : std::nullopt;
            Session& session = session_for(&e.workload);
            Session::Applied applied;
            std::shared_ptr<const Outcome> evaluated = moved ? session.evaluate(*moved, &applied) : std::make_shared<const Outcome>();
            const Outcome& o = *evaluated;
            if (o.ok && o.is_available(key)) {
              std::vector<Change> all = *moved;
              all.insert(all.end(), applied.extra.begin(), applied.extra.end());
              model::Fix rendered = detail::render_changes(all, facts);
              fix.command = rendered.command;
              fix.changes = rendered.changes;
              fix.verified =
                  model::FixOutcome{o.selected.value_or(""), o.selected == "FusedAttention" ? o.sub_backend.value_or("") : "", ""};
            } else {
              fix.verified.reset();
              fix.refuted = true;
              fix.unverified_reason = "the report pins one release of each package (" + chosen + " here), and with it " +
                                      detail::backend_label(key) + " is still out";
            }
          }
        }
      }
    }
  }
}

} // namespace rules
