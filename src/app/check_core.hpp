// What `run`, `daemon` and `check --config` share: building the report without rendering it,
// rendering it in the asked format, and the config file's workloads and rules applied to the
// options.
#pragma once

#include "app/options.hpp"
#include "model/report.hpp"
#include "report/render.hpp"
#include "rules/rules.hpp"
#include "service/config.hpp"

#include <memory>
#include <string>

namespace app {

// The whole check (facts, rules, workloads) as a Report; util::Fatal on bad input.
// rules_used, when given, receives the rules the report was built with (a one-shot caller keeps
// them until the process ends: util/process_exit.hpp).
model::Report build_report(const Options& options, std::shared_ptr<const rules::RuleSet>* rules_used = nullptr);
// The report in options.format.
std::string render_report(const Options& options, const model::Report& report, const report::RunTiming& timing);

// --config FILE (or, with ConfigRequired::no, the default file when it exists); util::Fatal on
// a bad file.
service::Config load_service_config(const Options& options, service::ConfigRequired required);
// With --config: its workloads directory's files join --workload/--hf-config, and its rules
// directories apply when no --rules was given. Without --config: nothing changes.
void apply_config_workloads(Options& options);
// Applies a loaded config to options (workloads directory, rules directories).
void apply_config(Options& options, const service::Config& config);

// Unix time now (seconds, fractional).
double unix_time();

} // namespace app
