#include "app/workloads.hpp"

#include "util/error.hpp"
#include "workload/hf_config.hpp"
#include "workload/workload_io.hpp"

namespace app {

std::vector<model::Workload> load_workloads(const Options& options, const std::vector<std::string>& extra_settings) {
  std::vector<model::Workload> workloads;
  for (const auto& file : options.workload_files) {
    auto loaded = workload::load_workload_file(file);
    if (!loaded) throw util::Fatal{loaded.error().message};
    for (auto& w : *loaded) workloads.push_back(std::move(w));
  }
  for (const auto& file : options.hf_configs) {
    auto imported = workload::load_hf_config(file);
    if (!imported) throw util::Fatal{imported.error().message};
    for (auto& w : *imported) workloads.push_back(std::move(w));
  }
  if (workloads.empty() && (!options.workload_sets.empty() || !extra_settings.empty())) {
    model::Workload w;
    w.name = "command-line";
    workloads.push_back(std::move(w));
  }
  for (auto& w : workloads) {
    auto applied = workload::apply_workload_settings(w, options.workload_sets);
    if (!applied) throw util::Fatal{w.name + ": " + applied.error().message};
    auto extra = workload::apply_workload_settings(w, extra_settings);
    if (!extra) throw util::Fatal{w.name + ": " + extra.error().message};
    auto finished = workload::finish_workload(w);
    if (!finished) throw util::Fatal{finished.error().message};
  }
  return workloads;
}

} // namespace app
