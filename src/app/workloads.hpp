// The workloads a command was given: --workload files, --hf-config files, --megatron-args files,
// --te-log files and --workload-set settings (applied on top of each file, or forming one
// workload on their own). Every file is read once per command (a TE log on standard input can
// only be read once); completing them with TE's defaults is a separate step, so that a sweep can
// complete the same workloads with each cell's settings.
#pragma once

#include "app/options.hpp"
#include "model/facts.hpp"
#include "model/observed_selection.hpp"
#include "model/workload.hpp"
#include "rules/fix_search.hpp"

#include <memory>
#include <vector>

namespace app {

// Workloads as read, before settings and completion, each with what its TE log said of it.
struct SourceWorkloads {
  std::vector<model::Workload> raw;
  std::vector<std::shared_ptr<const model::ObservedSelection>> observed; // one per workload; null without a TE log
  bool command_line_only = false;                                        // no file: --workload-set settings form one workload
};

// Reads every workload file of options once. Bad files are util::Fatal naming the file and key.
SourceWorkloads read_workloads(const Options& options);

// The completed workloads: options.workload_sets, then extra_settings (a sweep cell's), applied
// to each source workload, then TE's defaults. observed (optional) receives one entry per returned
// workload. util::Fatal naming the workload and key on a bad value.
std::vector<model::Workload> complete_workloads(const SourceWorkloads& source, const Options& options,
                                                const std::vector<std::string>& extra_settings = {},
                                                std::vector<std::shared_ptr<const model::ObservedSelection>>* observed = nullptr);

// read_workloads then complete_workloads: for commands that complete them once.
std::vector<model::Workload> load_workloads(const Options& options, const std::vector<std::string>& extra_settings = {},
                                            std::vector<std::shared_ptr<const model::ObservedSelection>>* observed = nullptr);

// The facts to explain a workload with: the node's, with the node facts TE logged for it
// applied over them as --set applies its; `node` itself for a workload without a TE log.
// `scratch` holds the copy. A value the fact catalog refuses is util::Fatal naming the log line.
const model::Facts& facts_for(const model::Facts& node, const model::ObservedSelection* observed, model::Facts& scratch);

// One pin per package within each context of node facts (rules::unify_pins): the node's own
// workloads with node_findings (may be nullptr), and the workloads of each set of facts a TE log
// names, apart. Pins of one package may differ only between contexts. observed: one per explanation.
void unify_pins_per_context(const rules::RuleSet& rules, const model::Facts& node, std::vector<model::Explanation>& explanations,
                            const std::vector<std::shared_ptr<const model::ObservedSelection>>& observed,
                            std::vector<model::Finding>* node_findings, const rules::SearchOptions& search);

} // namespace app
