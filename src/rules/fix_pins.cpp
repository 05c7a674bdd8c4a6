// One pin per package for a whole report (fix_search.hpp, unify_pins): where the verified fixes of
// a report's findings and backend reasons pin different releases of one package, one release is
// chosen and every other pin is re-checked with it (kept where the model verifies it, dropped
// where not). The choice is made from the workloads' fixes, so that explain and check, which see
// different node findings, print the same pin.
#include "rules/fix_search.hpp"

#include "rules/fix_commands.hpp"
#include "rules/fix_session.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

namespace rules {

using detail::Candidate;
using detail::Change;
using detail::ChangeKind;
using detail::Goal;
using detail::meets;
using detail::Outcome;
using detail::Session;
using detail::to_fix;
using detail::Verified;

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
          if (version && r.version == *version && misfit(rules.catalog(), r, node).empty() && !release) {
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
        if (r.version == version && misfit(rules.catalog(), r, node).empty() && !release) {
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
  // A backend reason's fix, with the backend it brings back.
  struct ReasonFix {
    model::Fix* fix;
    model::Explanation* explanation;
    std::string backend; // flash_attention, ...
  };
  std::vector<ReasonFix> reason_fixes;
  for (auto* e : explanations)
    for (auto& [key, verdict] : e->backends)
      for (auto& reason : verdict.reasons)
        for (auto& fix : reason.fixes) reason_fixes.push_back({&fix, e, key});
  // One search session per workload (and one for the node): their baselines are reused.
  std::map<const model::Workload*, std::unique_ptr<Session>> sessions;
  auto session_for = [&](const model::Workload* w) -> Session& {
    auto& slot = sessions[w];
    if (!slot) slot = std::make_unique<Session>(rules, facts, w, options);
    return *slot;
  };
  const NodeAbi node = detail::node_abi(facts);
  auto pins_of = [](const model::Fix& fix, const std::string& fact) { return fix.verified ? pinned_version(fix, fact) : std::nullopt; };

  std::set<std::string> package_facts;
  for (const auto& p : rules.catalog().packages) package_facts.insert(p.fact);
  for (const auto& fact : package_facts) {
    // The releases pinned: by the workloads (their findings' fixes and their backend reasons'),
    // and by the node's findings.
    std::set<std::string> workload_pins, node_pins;
    for (const auto& site : sites)
      for (const auto& fix : site.finding->fixes)
        if (auto v = pins_of(fix, fact)) (site.workload ? workload_pins : node_pins).insert(*v);
    for (const auto& r : reason_fixes)
      if (auto v = pins_of(*r.fix, fact)) workload_pins.insert(*v);
    std::set<std::string> pins = workload_pins;
    pins.insert(node_pins.begin(), node_pins.end());
    if (pins.size() < 2) continue;
    // The choice comes from the workloads' pins where they pin the package: explain and check
    // see different node findings (check all of them, explain those that decide a verdict), and
    // the pin of one workload must not depend on which command printed it.
    const std::set<std::string>& candidates = workload_pins.empty() ? node_pins : workload_pins;
    auto current = facts.get_version(fact);
    struct Choice {
      model::Version version;
      std::size_t clears = 0;      // workload findings it clears (a fix of theirs re-pinned to it)
      int tiers = 0;               // the outcome tiers of those fixes (lower: faster backends)
      std::size_t node_clears = 0; // the node's warnings and errors it clears by itself
    };
    std::vector<Choice> choices;
    for (const auto& text : candidates)
      if (auto v = model::Version::parse(text)) choices.push_back({*v});
    if (choices.empty()) continue;
    // The node's own findings, evaluated here rather than taken from the caller, for the same reason.
    Session& node_session = session_for(nullptr);
    std::map<std::pair<model::Finding*, std::string>, std::optional<model::Fix>> rechecked; // (finding, version) -> fix
    // The fix a finding gets with the package at version: one of its own, or one re-pinned.
    auto fix_with = [&](const Site& site, const std::string& version) -> std::optional<model::Fix> {
      auto key = std::make_pair(site.finding, version);
      if (auto it = rechecked.find(key); it != rechecked.end()) return it->second;
      std::optional<model::Fix> found;
      for (const auto& fix : site.finding->fixes) {
        auto pin = pins_of(fix, fact);
        if (!pin) continue;
        if (*pin == version) {
          found = fix;
          break;
        }
        auto changes = changes_of(fix, rules, node);
        auto moved = changes ? repinned(*changes, rules, node, fact, *model::Version::parse(version)) : std::nullopt;
        if (moved && (found = recheck(session_for(site.workload), *site.finding, *moved))) break;
      }
      rechecked[key] = found;
      return found;
    };
    for (auto& choice : choices) {
      const std::string version = choice.version.to_string();
      for (const auto& site : sites) {
        if (!site.workload) continue;
        bool pins_fact = std::any_of(site.finding->fixes.begin(), site.finding->fixes.end(),
                                     [&](const model::Fix& f) { return pins_of(f, fact).has_value(); });
        if (!pins_fact) continue;
        if (auto fix = fix_with(site, version)) {
          ++choice.clears;
          choice.tiers += detail::fix_tier(*fix);
        }
      }
      auto alone = repinned({Change{ChangeKind::package, fact, version, nullptr, nullptr}}, rules, node, fact, choice.version);
      if (alone) {
        std::shared_ptr<const Outcome> o = node_session.evaluate(*alone);
        for (const auto& [id, severity] : node_session.baseline().findings)
          if (severity >= model::Severity::warning && o->ok && !o->findings.count(id)) ++choice.node_clears;
      }
    }
    // Clears the most workload findings, with the fastest backends; clears the most node findings;
    // then the nearest upgrade, the nearest downgrade. (A backend reason's fix only follows: a
    // reason of a backend the workload does not run is no ground for a larger step.)
    auto better = [&](const Choice& a, const Choice& b) {
      if (a.clears != b.clears) return a.clears > b.clears;
      if (a.tiers != b.tiers) return a.tiers < b.tiers;
      if (a.node_clears != b.node_clears) return a.node_clears > b.node_clears;
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
        auto pin = pins_of(fix, fact);
        if (!pin || *pin == chosen) {
          kept.push_back(std::move(fix));
          continue;
        }
        if (!replaced)
          if (auto again = fix_with(site, chosen)) {
            kept.push_back(*again);
            replaced = true;
          }
      }
      // The same changes twice (the chosen pin was there already): keep the first.
      std::vector<model::Fix> unique;
      for (auto& fix : kept) {
        bool seen = fix.verified && std::any_of(unique.begin(), unique.end(),
                                                [&](const model::Fix& u) { return u.verified && detail::same_changes(u, fix); });
        if (!seen) unique.push_back(std::move(fix));
      }
      auto verified_end = std::stable_partition(unique.begin(), unique.end(), [](const model::Fix& f) { return f.verified.has_value(); });
      std::stable_sort(unique.begin(), verified_end,
                       [&](const model::Fix& a, const model::Fix& b) { return detail::fix_rank(a, facts) < detail::fix_rank(b, facts); });
      fixes = std::move(unique);
    }
    // A backend reason's fix that pins another release: re-checked with the chosen one.
    for (const auto& r : reason_fixes) {
      model::Fix& fix = *r.fix;
      auto pin = pins_of(fix, fact);
      if (!pin || *pin == chosen) continue;
      auto changes = changes_of(fix, rules, node);
      auto moved = changes ? repinned(*changes, rules, node, fact, *model::Version::parse(chosen)) : std::nullopt;
      Session& session = session_for(&r.explanation->workload);
      Session::Applied applied;
      std::shared_ptr<const Outcome> evaluated = moved ? session.evaluate(*moved, &applied) : std::make_shared<const Outcome>();
      const Outcome& o = *evaluated;
      if (o.ok && o.is_available(r.backend)) {
        std::vector<Change> all = *moved;
        all.insert(all.end(), applied.extra.begin(), applied.extra.end());
        model::Fix rendered = detail::render_changes(all, facts);
        fix.command = rendered.command;
        fix.changes = rendered.changes;
        fix.verified = model::FixOutcome{o.selected.value_or(""), o.selected == "FusedAttention" ? o.sub_backend.value_or("") : "", ""};
      } else {
        fix.verified.reset();
        fix.refuted = true;
        fix.unverified_reason = "the report pins one release of each package (" + chosen + " here), and with it " +
                                detail::backend_label(r.backend) + " is still out";
      }
    }
  }
}

} // namespace rules
