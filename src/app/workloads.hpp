// The workloads a command was given: --workload files, --hf-config files, --megatron-args files,
// --te-log files and --workload-set settings (applied on top of each file, or forming one workload on their
// own), completed.
#pragma once

#include "app/options.hpp"
#include "model/facts.hpp"
#include "model/workload.hpp"

#include <vector>

namespace app {

// Bad files or values are util::Fatal naming the file and key. extra_settings are applied after
// --workload-set, before completion (explain --sweep uses them).
std::vector<model::Workload> load_workloads(const Options& options, const std::vector<std::string>& extra_settings = {});

// The facts to explain a workload with: the node's, with the workload's own node_facts (a TE
// debug log's versions) applied over them as --set applies its; `node` itself when it has none.
// `scratch` holds the copy. A value the fact catalog refuses is util::Fatal naming the workload.
const model::Facts& facts_for(const model::Facts& node, const model::Workload& workload, model::Facts& scratch);

} // namespace app
