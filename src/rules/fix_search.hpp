// The counterfactual fix search, shared by check, explain and the report: for a finding that
// blocks a workload (no backend, a version rule, a requested backend that is out) or a node
// finding, it generates candidate changes — an environment variable unset, a TE call argument, a
// cuDNN / NCCL / TE / flash-attn 2/3/4 release from the catalog, a workload change, a GPU class —
// applies each to the facts (through the load-order model for library wheels), re-evaluates the
// rules, and keeps those after which the finding is gone, no new finding of its severity appears
// and the workload still runs. Rule-written fixes are checked the same way: a command is printed
// verified, or with the reason it could not be verified. docs/fix-search.md has the details.
#pragma once

#include "rules/rules.hpp"

#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace rules {

// Re-runs which copy of a library (cudnn, nccl) TE and torch would load after the facts changed
// (a wheel added under python.site_packages, CUDNN_PATH set, TE's version changed): updates
// te.<lib>.*, torch.<lib>.* and <lib>.version/path/loaded_by. src/app injects src/probe's model
// of TE's search order; without one the search takes an installed wheel as the copy loaded.
using Relinker = std::function<void(model::Facts& facts, std::string_view library)>;

// For tests: the node outcomes a search worked out incrementally (fix_session.hpp), each also
// worked out in full and compared.
struct IncrementalCheck {
  std::mutex mutex;
  std::size_t compared = 0;
  std::vector<std::string> differences; // "<changes>: <what differed>"
};

struct SearchOptions {
  // Model evaluations (one explain, or one node evaluation) per finding; the search stops there
  // and keeps what it verified. Each single change costs one, each pair one.
  std::size_t budget = 240;
  Relinker relink;
  // Tests only: every node outcome is also made the long way (the changes applied to a copy of
  // the facts, every node rule evaluated) and compared with the incremental one: the facts after
  // the changes, the steps they needed, whether they applied, the findings. nullptr: not checked.
  IncrementalCheck* check_incremental = nullptr;
};

// The verified fixes for one finding, best first (the fastest backend the workload then runs,
// then the fewest and most reversible changes; counterfactuals last), followed by its
// rule-written fixes that carry no command (explanation; not those that name a verified change)
// and those whose command could not be verified (unverified_reason set; refuted where the model
// ran it). No command twice. workload is nullptr for node findings. Never throws; an empty
// catalog only narrows it.
std::vector<model::Fix> search_fixes(const RuleSet& rules, const model::Facts& facts, const model::Workload* workload,
                                     const model::Finding& target, const SearchOptions& options);

// Every error and warning finding of an explanation gets search_fixes; every backend reason's
// rule-written fix is checked for bringing its backend back (in place).
void verify_explanation(const RuleSet& rules, const model::Facts& facts, model::Explanation& explanation,
                        const SearchOptions& options);

// One pin per package for the whole report: where the verified fixes of the report's findings
// (node_findings, may be nullptr, and every explanation's, backend reasons' included) pin
// different releases of one package, one release replaces the others, each re-checked for its
// finding; a fix it does not verify is dropped (a reason's fix is marked refuted). The release is
// chosen from the workloads' pins where there are any, whatever node findings are passed, so
// explain and check agree: the most workload findings cleared, the fastest backends, the most of
// the node's own findings cleared (evaluated here), the nearest upgrade, the nearest downgrade.
// In place; after the searches.
void unify_pins(const RuleSet& rules, const model::Facts& facts, std::vector<model::Explanation>& explanations,
                std::vector<model::Finding>* node_findings, const SearchOptions& options);
// The same for some of a report's explanations: those explained with these facts (one context of
// node facts; a TE log's workloads carry the versions it names, so each log is its own context).
void unify_pins(const RuleSet& rules, const model::Facts& facts, const std::vector<model::Explanation*>& explanations,
                std::vector<model::Finding>* node_findings, const SearchOptions& options);

// Every error and warning node finding gets search_fixes (in place).
void verify_node_findings(const RuleSet& rules, const model::Facts& facts, std::vector<model::Finding>& findings,
                          const SearchOptions& options);

} // namespace rules
