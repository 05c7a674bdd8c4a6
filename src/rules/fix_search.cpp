// The fix search (fix_search.hpp). The key idea: a fix is a small set of changes to the inputs
// of the model (facts and workload), so "does it work" is answered by running the same engine on
// the changed inputs — never by trusting the text a rule wrote. Candidates are cheap to make and
// evaluation is a few microseconds per rule, so the search is a bounded enumeration:
//   1. single changes, family by family (an env var, a TE or FP8-recipe argument, one package's
//      releases in order of distance from the installed one, a workload key, a GPU class), each
//      family up to its first release that works;
//   2. where no change reaches the outcome the goal asks (the fused kernels as TE picks them),
//      the families whose first working release runs a slower backend go on, keeping each
//      release that does better;
//   3. where still none does (or nothing works), pairs from different families: two changes that
//      between them take away a faster backend's reasons, a change that clears the finding but
//      brings another problem with any other;
//   4. rank by the outcome (fix_commands.hpp, outcome_tier), then the fewest and most reversible
//      changes: counterfactuals (the model's shape, packing, the GPU) after every change the
//      user can make; fewer changes; upgrades before downgrades; the cheaper kind of change; the
//      smaller version step; the backend TE prefers;
//   5. one pin per package for the whole report (fix_pins.cpp, unify_pins).
// Every evaluation counts against SearchOptions::budget.
#include "rules/fix_search.hpp"

#include "model/workload.hpp"
#include "rules/fix_commands.hpp"
#include "rules/fix_session.hpp"
#include "rules/ruleset_impl.hpp"
#include "rules/templates.hpp"
#include "util/parallel.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>

namespace rules {

namespace {

using detail::backend_rank;
using detail::Candidate;
using detail::Change;
using detail::ChangeKind;
using detail::Goal;
using detail::meets;
using detail::NodeOutcomeMemo;
using detail::Outcome;
using detail::progress;
using detail::same_changes;
using detail::Session;
using detail::tier_of;
using detail::to_fix;
using detail::Verified;
using detail::version_step;

// A single change the search evaluated, with what the model said.
struct Tried {
  Candidate candidate;
  std::shared_ptr<const Outcome> outcome;
};

class Search {
public:
  Search(Session& session, Goal goal) : m_session(session), m_goal(std::move(goal)) {}

  // Evaluates a candidate; returns what it verifies (goal met, no new node problem), else nullopt.
  // Singles are remembered for pairs: every one evaluated, those that cleared the finding but
  // brought another problem, those that took away a reason blocking the workload.
  std::optional<Verified> attempt(const Candidate& c) {
    if (!m_session.budget_left()) return std::nullopt;
    Session::Applied applied;
    std::shared_ptr<const Outcome> o = m_session.evaluate(c.changes, &applied);
    if (!c.pair && o->ok) m_tried.push_back({c, o});
    // Clears the finding but brings another problem: a second change may remove that one.
    bool clears = o->ok && !o->findings.count(m_goal.finding_id);
    if (!meets(m_goal, *o)) {
      if (clears && !c.pair) m_clearing.push_back(c);
      else if (!c.pair && progress(m_session.baseline(), *o)) m_progress.push_back(c);
      return std::nullopt;
    }
    if (m_session.workload()) {
      if (!m_session.new_node_problem(applied.facts, std::min(m_goal.severity, model::Severity::error), m_goal.finding_id).empty()) {
        if (!c.pair) m_clearing.push_back(c);
        return std::nullopt;
      }
    }
    int tier = m_session.workload() ? tier_of(*o, c.changes) : 0;
    return Verified{c, std::move(o), std::move(applied.extra), tier};
  }

  void record(Verified v) {
    if (!detail::counterfactual_class(v.candidate.cost_class)) m_best_tier = std::min(m_best_tier, v.tier);
    m_found.push_back(std::move(v));
  }

  // families are tried one change at a time; complements (changes that cannot clear the finding
  // alone) only as the second change of a pair.
  void run(const std::vector<std::vector<Candidate>>& families, const std::vector<Candidate>& complements = {}) {
    // 1. Each family up to its first release (or value) that works: the smallest step.
    struct Progress {
      std::size_t next = 0;
      int tier = k_none; // the best outcome the family reached
    };
    std::vector<Progress> state(families.size());
    for (std::size_t f = 0; f < families.size(); ++f) {
      const auto& family = families[f];
      state[f].next = family.size();
      for (std::size_t i = 0; i < family.size(); ++i) {
        if (!m_session.budget_left()) return;
        if (auto v = attempt(family[i])) {
          state[f] = {i + 1, v->tier};
          record(std::move(*v));
          break;
        }
      }
    }
    // 2. The best outcome, not only the smallest step: a family whose first working change leaves
    // the workload on a slower backend than the goal asks goes on (TE 2.11 runs packed MLA on an
    // A100 unfused, TE 2.17 with FlashAttention), keeping each release that does better.
    if (m_goal.workload && m_best_tier > m_goal.target_tier) {
      for (std::size_t f = 0; f < families.size(); ++f) {
        const auto& family = families[f];
        if (state[f].tier == k_none || state[f].tier <= m_goal.target_tier) continue;
        if (!family.empty() && detail::counterfactual_class(family.front().cost_class)) continue;
        for (std::size_t i = state[f].next; i < family.size() && state[f].tier > m_goal.target_tier; ++i) {
          if (!m_session.budget_left()) return;
          auto v = attempt(family[i]);
          if (v && v->tier < state[f].tier) {
            state[f].tier = v->tier;
            record(std::move(*v));
          }
        }
      }
    }
    bool none = !any_user_fix();
    if (!none && (!m_goal.workload || m_best_tier <= m_goal.target_tier)) return;
    // 3. Pairs, where no single change reaches the goal's outcome (or none works at all).
    std::stable_sort(m_clearing.begin(), m_clearing.end(), ranked);
    std::stable_sort(m_progress.begin(), m_progress.end(), ranked);
    std::vector<Candidate> singles;
    for (const auto& t : m_tried) singles.push_back(t.candidate);
    singles.insert(singles.end(), complements.begin(), complements.end());
    std::stable_sort(singles.begin(), singles.end(), ranked);
    const int before = m_best_tier;
    std::set<std::string> done;
    // Records a pair that works: any, while nothing works; otherwise one that does better than
    // every single change. True when the goal's outcome is reached.
    auto try_pair = [&](const Candidate& a, const Candidate& b) {
      if (a.family == b.family || detail::counterfactual_class(a.cost_class) || detail::counterfactual_class(b.cost_class)) return false;
      std::string key = std::min(a.family, b.family) + "+" + std::max(a.family, b.family);
      if (done.count(key)) return false;
      auto v = attempt(paired(a, b, key));
      if (!v) return false;
      if (!none && v->tier >= before) return false;
      done.insert(key);
      bool reached = v->tier <= m_goal.target_tier;
      record(std::move(*v));
      return reached;
    };
    // A change that clears the finding but brings another problem, with each other single change.
    auto clearing_pairs = [&] {
      for (const auto& a : m_clearing)
        for (const auto& b : singles) {
          if (!m_session.budget_left()) return true;
          if (try_pair(a, b) && !none) return true;
        }
      return false;
    };
    if (none && clearing_pairs()) return;
    // Two changes that between them take away every reason that keeps a backend out which the
    // goal wants (a Megatron --attention-backend switch and the TE release that takes the shape).
    for (const auto& [a, b] : covering_pairs()) {
      if (!m_session.budget_left()) return;
      if (try_pair(a, b) && !none) return;
    }
    if (!none) {
      clearing_pairs();
      return;
    }
    // Then two changes that each took away some reason blocking the workload.
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
      bool cx = detail::counterfactual_class(x.cost_class), cy = detail::counterfactual_class(y.cost_class);
      if (cx != cy) return cy;
      if (a.tier != b.tier) return a.tier < b.tier;
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
  bool any_user_fix() const {
    return std::any_of(m_found.begin(), m_found.end(),
                       [](const Verified& v) { return !detail::counterfactual_class(v.candidate.cost_class); });
  }

  static Candidate paired(const Candidate& a, const Candidate& b, std::string key) {
    Candidate pair;
    pair.changes = a.changes;
    pair.changes.insert(pair.changes.end(), b.changes.begin(), b.changes.end());
    pair.cost_class = std::max(a.cost_class, b.cost_class);
    pair.step = a.step + b.step;
    pair.family = std::move(key);
    pair.order = a.order * 1000 + b.order;
    pair.pair = true;
    return pair;
  }

  // Pairs of evaluated single changes (not counterfactuals, different families) that work on the
  // same backend faster than any single change reached, each taking away some of its reasons that
  // the other leaves: a Megatron --attention-backend switch (the NVTE_*_ATTN reasons) and the TE
  // release that takes the shape. Most promising first: the fewest of that backend's reasons left
  // by both (a reason one leaves and the other takes away goes with the pair), then the cheapest.
  std::vector<std::pair<Candidate, Candidate>> covering_pairs() const {
    std::vector<std::pair<Candidate, Candidate>> out;
    if (!m_session.workload()) return out;
    std::vector<std::string> wanted;
    for (std::string key : {"flash_attention", "fused_attention", "unfused_attention"})
      if (detail::outcome_tier(detail::backend_label(key)) < m_best_tier) wanted.push_back(key);
    const auto& base = m_session.baseline().reasons;
    auto left = [](const Outcome& o, const std::string& key) {
      std::set<std::string> r;
      for (const auto& reason : o.reasons)
        if (reason.starts_with(key + ":")) r.insert(reason);
      return r;
    };
    auto took = [&](const Outcome& o, const std::string& key) {
      std::set<std::string> r;
      for (const auto& reason : base)
        if (reason.starts_with(key + ":") && !o.reasons.count(reason)) r.insert(reason);
      return r;
    };
    auto beyond = [](const std::set<std::string>& a, const std::set<std::string>& b) {
      return std::any_of(a.begin(), a.end(), [&](const std::string& r) { return !b.count(r); });
    };
    struct Scored {
      std::size_t left;
      const Tried* a;
      const Tried* b;
    };
    std::vector<Scored> scored;
    for (std::size_t i = 0; i < m_tried.size(); ++i) {
      const Tried& a = m_tried[i];
      if (detail::counterfactual_class(a.candidate.cost_class)) continue;
      for (std::size_t j = i + 1; j < m_tried.size(); ++j) {
        const Tried& b = m_tried[j];
        if (detail::counterfactual_class(b.candidate.cost_class) || a.candidate.family == b.candidate.family) continue;
        std::optional<std::size_t> best;
        for (const auto& key : wanted) {
          auto ta = took(*a.outcome, key), tb = took(*b.outcome, key);
          if (!beyond(ta, tb) || !beyond(tb, ta)) continue;
          auto la = left(*a.outcome, key), lb = left(*b.outcome, key);
          std::size_t both =
              static_cast<std::size_t>(std::count_if(la.begin(), la.end(), [&](const std::string& r) { return lb.count(r) > 0; }));
          if (!best || both < *best) best = both;
        }
        if (best) scored.push_back({*best, &a, &b});
      }
    }
    auto key = [](const Scored& s) {
      const Candidate& a = s.a->candidate;
      const Candidate& b = s.b->candidate;
      return std::make_tuple(s.left, std::max(a.cost_class, b.cost_class), a.step + b.step, std::min(a.order, b.order),
                             std::max(a.order, b.order));
    };
    std::stable_sort(scored.begin(), scored.end(), [&](const Scored& x, const Scored& y) { return key(x) < key(y); });
    for (const auto& s : scored) {
      bool a_first = ranked(s.a->candidate, s.b->candidate);
      out.emplace_back(a_first ? s.a->candidate : s.b->candidate, a_first ? s.b->candidate : s.a->candidate);
    }
    return out;
  }

  Session& m_session;
  Goal m_goal;
  static constexpr int k_none = 99; // no outcome yet
  int m_best_tier = k_none;         // the best outcome a change the user can make reached
  std::vector<Verified> m_found;
  std::vector<Tried> m_tried;        // every single change evaluated that could be applied
  std::vector<Candidate> m_progress; // took away a blocking reason
  std::vector<Candidate> m_clearing; // cleared the finding, brought another problem
};

// ---- candidate generation --------------------------------------------------------------------

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
    // FP8 attention off, keeping the FP8 GEMMs: NVTE_DPA_FP8_RECIPE=F16 (TE 2.8+, no code change)
    // or the recipe's fp8_dpa=False (fp8_mha goes with it). FP8 tensors (qkv_dtype fp8) need the
    // dtype changed instead (below).
    if (text("fp8") == "true" && (text("fp8_dpa") == "true" || text("fp8_mha") == "true")) {
      if (facts.get_string("env.NVTE_DPA_FP8_RECIPE") != "F16")
        families.push_back({single(Change{ChangeKind::env, "NVTE_DPA_FP8_RECIPE", std::string("F16"), nullptr, nullptr}, 0,
                                   "env-set:NVTE_DPA_FP8_RECIPE")});
      if (text("qkv_dtype") != "fp8") {
        Candidate c = single(Change{ChangeKind::workload, "fp8_dpa", std::string("false"), nullptr, nullptr}, 1, "workload:fp8_dpa");
        if (text("fp8_mha") == "true") c.changes.push_back(Change{ChangeKind::workload, "fp8_mha", std::string("false"), nullptr, nullptr});
        families.push_back({std::move(c)});
      }
    }
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
    // Packing on changes the batches (a counterfactual, detail::change_class): its own family.
    std::vector<Candidate> layouts, packing;
    for (std::string format : {"bshd", "sbhd", "thd"}) {
      if (format == text("qkv_format")) continue;
      Candidate c =
          single(Change{ChangeKind::workload, "qkv_format", format, nullptr, nullptr}, detail::change_class("workload.qkv_format", format),
                 format == "thd" ? "workload:packing" : "workload:qkv_format");
      std::string mask = text("attn_mask_type");
      if (format == "thd" && detail::packed_mask(mask) != mask)
        c.changes.push_back(Change{ChangeKind::workload, "attn_mask_type", detail::packed_mask(mask), nullptr, nullptr});
      (format == "thd" ? packing : layouts).push_back(std::move(c));
    }
    if (!layouts.empty()) families.push_back(std::move(layouts));
    if (!packing.empty()) families.push_back(std::move(packing));
    std::string dtype = text("qkv_dtype");
    // (With FP8 attention on, another 16-bit dtype would turn it off unsaid: the FP8 candidates say it.)
    const bool fp8_attention = text("fp8_dpa") == "true" || text("fp8_mha") == "true";
    if (dtype == "fp8") workload_family("qkv_dtype", {"bf16"}, 5);
    else if ((dtype == "bf16" || dtype == "fp16") && !fp8_attention) workload_family("qkv_dtype", {dtype == "bf16" ? "fp16" : "bf16"}, 5);
    // Training in BF16: the answer where the GPU has no FP8 (below sm89, where TE aborts at the
    // first FP8 autocast); then FP8 attention emulated in higher precision by the unfused kernel
    // (TE 2.8+), the last resort.
    if (text("fp8") == "true") {
      // The recipe's attention settings and FP8 tensors go with the autocast (companions, said once).
      Candidate c = single(Change{ChangeKind::workload, "fp8", std::string("false"), nullptr, nullptr}, 5, "workload:fp8");
      for (const char* key : {"fp8_dpa", "fp8_mha"})
        if (text(key) == "true") c.changes.push_back(Change{ChangeKind::workload, key, std::string("false"), nullptr, nullptr});
      if (dtype == "fp8") c.changes.push_back(Change{ChangeKind::workload, "qkv_dtype", std::string("bf16"), nullptr, nullptr});
      families.push_back({std::move(c)});
    }
    if (text("fp8_dpa") == "true" && facts.get_string("env.NVTE_UnfusedDPA_Emulate_FP8") != "1")
      families.push_back({single(Change{ChangeKind::env, "NVTE_UnfusedDPA_Emulate_FP8", std::string("1"), nullptr, nullptr}, 5,
                                 "env-set:NVTE_UnfusedDPA_Emulate_FP8")});
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

// What the rules of the reasons ("backend:rule") read; nullopt where one of them reads explain.*.
std::optional<std::vector<std::string>> facts_read_by_reasons(const RuleSet& rules, const std::set<std::string>& reasons) {
  std::vector<std::string> names;
  for (const auto& reason : reasons) {
    auto read = facts_read_by(rules, reason.substr(reason.find(':') + 1));
    if (!read) return std::nullopt;
    names.insert(names.end(), read->begin(), read->end());
  }
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
    std::vector<Candidate> kept;
    for (auto& c : family) {
      bool relevant = std::any_of(c.changes.begin(), c.changes.end(), [&](const Change& change) { return touches(change, read); });
      (relevant ? kept : aside).push_back(std::move(c));
    }
    family = std::move(kept);
  }
  std::erase_if(families, [](const auto& family) { return family.empty(); });
  return aside;
}

// ---- turning verified candidates into fixes ---------------------------------------------------

// The workload settings a rule's command-less fix names as key=value (`cp_comm_type="p2p"`,
// `recipe.fp8_dpa=False`), values lower-cased; nullopt when the text offers another way as well
// ("use DelayedScaling ... (or fp8_dpa=False)") or names no setting.
std::optional<std::map<std::string, std::string>> named_settings(std::string_view text) {
  if (text.starts_with("or ")) text.remove_prefix(3);
  if (text.find(" or ") != std::string_view::npos) return std::nullopt;
  std::map<std::string, std::string> out;
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; };
  for (std::size_t eq = text.find('='); eq != std::string_view::npos; eq = text.find('=', eq + 1)) {
    std::size_t begin = eq;
    while (begin > 0 && word(text[begin - 1])) --begin;
    std::string key(text.substr(begin, eq - begin));
    if (key.starts_with("recipe.")) key.erase(0, 7);
    std::size_t at = eq + 1;
    char quote = at < text.size() && (text[at] == '"' || text[at] == '\'') ? text[at++] : 0;
    std::size_t end = at;
    while (end < text.size() && (word(text[end]) || text[end] == '+' || text[end] == '-') && text[end] != quote) ++end;
    std::string value(text.substr(at, end - at));
    while (!value.empty() && value.back() == '.') value.pop_back(); // the end of a sentence
    std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (key.empty() || value.empty() || !model::find_workload_key(key)) return std::nullopt;
    out[key] = value;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// Whether a rule's command-less fix text names exactly the workload settings a verified fix changes.
bool names_change_of(const std::string& text, const model::Fix& fix) {
  if (!fix.verified) return false;
  auto named = named_settings(text);
  if (!named) return false;
  std::map<std::string, std::string> changed;
  bool packing = false;
  std::vector<std::string> names;
  for (const auto& [name, value] : fix.changes) {
    packing = packing || name == "workload.qkv_format";
    names.push_back(name);
  }
  for (const auto& [name, value] : fix.changes) {
    if (!name.starts_with("workload.")) return false;
    if ((packing && name == "workload.attn_mask_type") || detail::companion_change(name, names)) continue; // said with another
    std::string v = value;
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    changed[name.substr(9)] = v;
  }
  return changed == *named;
}

// Whether every variable a command exports already has that value (TE's debug log was written
// with NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2, so the hint to set them is no hint).
bool already_set(const std::string& command, const RuleSet& rules, const Session& session) {
  auto interpreted = detail::interpret_command(command, rules.catalog(), session.node());
  if (!interpreted.ok) return false;
  return std::all_of(interpreted.changes.begin(), interpreted.changes.end(), [&](const Change& c) {
    return c.kind == ChangeKind::env && c.value && session.facts().get_string("env." + c.name) == *c.value;
  });
}

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
  Goal goal{target.id, target.severity, target.id == "attention-no-backend", workload != nullptr, 0};
  // A warning on a workload that runs unfused asks only that it keeps running.
  if (workload && !goal.needs_backend)
    goal.target_tier = std::min(tier_of(session.baseline()), detail::outcome_tier("UnfusedDotProductAttention"));
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
    // A logging aid (NVTE_DEBUG) changes what TE prints, not what it selects: not a fix to check,
    // and not printed where its variables already hold (the input is TE's own debug log).
    if (fix.kind == "debug") {
      if (already_set(fix.command, rules, session)) continue;
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
    auto read = facts_read_by(rules, target.id);
    // A workload without a backend needs one back for any fix (meets), and a change brings a
    // backend back only by moving a fact one of the reasons that keep the backends out reads: for
    // a rule that reads the whole selection ("no backend"), those facts are what matters.
    if (!read && workload && !session.baseline().selected) read = facts_read_by_reasons(rules, session.baseline().reasons);
    if (read) complements = set_aside_irrelevant(families, *read);
    search.run(families, complements);
  }
  for (const auto& v : search.results()) {
    model::Fix fix = to_fix(v, session, goal);
    bool duplicate = false;
    for (const auto& seen : verified) duplicate = duplicate || same_changes(seen, fix);
    if (!duplicate) verified.push_back(std::move(fix));
  }
  // Rule-written verified fixes and searched ones, ranked together: the outcome first, then the
  // changes they make.
  std::stable_sort(verified.begin(), verified.end(),
                   [&](const model::Fix& a, const model::Fix& b) { return detail::fix_rank(a, facts) < detail::fix_rank(b, facts); });
  // A rule's words for a change the search verified ("or use cp_comm_type="p2p"") say it twice.
  std::erase_if(explanation, [&](const model::Fix& f) {
    return std::any_of(verified.begin(), verified.end(), [&](const model::Fix& v) { return names_change_of(f.description, v); });
  });
  std::vector<model::Fix> out = std::move(verified);
  for (auto& f : explanation) out.push_back(std::move(f));
  for (auto& f : debug) out.push_back(std::move(f));
  for (auto& f : unverified) out.push_back(std::move(f));
  // One command once (the first, best-ranked).
  std::set<std::string> commands;
  std::erase_if(out, [&](const model::Fix& f) { return !f.command.empty() && !commands.insert(f.command).second; });
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

} // namespace rules
