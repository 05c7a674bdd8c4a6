// The workloads a command was given: --workload files, --hf-config files, --megatron-args files
// and --workload-set settings (applied on top of each file, or forming one workload on their
// own), completed.
#pragma once

#include "app/options.hpp"
#include "model/workload.hpp"

#include <vector>

namespace app {

// Bad files or values are util::Fatal naming the file and key. extra_settings are applied after
// --workload-set, before completion (explain --sweep uses them).
std::vector<model::Workload> load_workloads(const Options& options, const std::vector<std::string>& extra_settings = {});

} // namespace app
