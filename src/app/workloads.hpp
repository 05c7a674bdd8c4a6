// The workloads a command was given: --workload files, --hf-config files, --megatron-args files,
// --te-log files and --workload-set settings (applied on top of each file, or forming one workload on their
// own), completed.
#pragma once

#include "app/options.hpp"
#include "model/facts.hpp"
#include "model/observed_selection.hpp"
#include "model/workload.hpp"
#include "rules/fix_search.hpp"

#include <memory>
#include <vector>

namespace app {

// Bad files or values are util::Fatal naming the file and key. extra_settings are applied after
// --workload-set, before completion (explain --sweep uses them).
// observed (optional) receives, for each returned workload in order, what TE logged about it
// (--te-log) or null.
std::vector<model::Workload> load_workloads(const Options& options, const std::vector<std::string>& extra_settings = {},
                                            std::vector<std::shared_ptr<const model::ObservedSelection>>* observed = nullptr);

// The facts to explain a workload with: the node's, with the node facts TE logged for it
// applied over them as --set applies its; `node` itself for a workload without a TE log.
// `scratch` holds the copy. A value the fact catalog refuses is util::Fatal naming the log line.
const model::Facts& facts_for(const model::Facts& node, const model::ObservedSelection* observed, model::Facts& scratch);

// One pin per package within each context of node facts (rules::unify_pins): the node's own
// workloads with node_findings (may be nullptr), and the workloads of each set of facts a TE log
// names, apart. Pins of one package may differ only between contexts. observed: as load_workloads
// returns it, one per explanation.
void unify_pins_per_context(const rules::RuleSet& rules, const model::Facts& node, std::vector<model::Explanation>& explanations,
                            const std::vector<std::shared_ptr<const model::ObservedSelection>>& observed,
                            std::vector<model::Finding>* node_findings, const rules::SearchOptions& search);

} // namespace app
