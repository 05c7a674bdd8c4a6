// `run`, `daemon` and `fleet`: the service commands. `run` is the timer's entry point: under the
// run lock, fingerprint the node without probing vendor libraries; when nothing changed and the
// last full check is younger than max_age, refresh the textfile's last-run metric, retry the
// push spool and stop. Otherwise run the full check, write every output atomically, save the
// state (with the fingerprint recomputed from the new report, so the next run compares like with
// like) and push. `daemon` calls the same step on an interval and on changes; `fleet` reads
// reports.
#include "app/app.hpp"
#include "app/command_io.hpp"
#include "app/check_core.hpp"
#include "app/rules_update.hpp"
#include "report/render.hpp"
#include "service/daemon.hpp"
#include "service/fleet.hpp"
#include "service/push.hpp"
#include "service/run.hpp"
#include "util/error.hpp"
#include "util/file.hpp"
#include "util/input_guard.hpp"
#include "util/logging.hpp"
#include "util/path_trust.hpp"
#include "util/process_exit.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace app {

namespace fs = std::filesystem;

double unix_time() { return service::unix_now(); }

service::Config load_service_config(const Options& options, service::ConfigRequired required) {
  fs::path path = options.config_file ? *options.config_file : fs::path(service::k_default_config_path);
  auto config = service::load_config(path, options.config_file ? service::ConfigRequired::yes : required);
  if (!config) throw util::Fatal{config.error().message};
  return std::move(*config);
}

void apply_config(Options& options, const service::Config& config) {
  // The config's `rules:` replaces the shipped rules, as --rules-only does; --rules adds to either.
  if (options.rules_only_dirs.empty()) options.rules_only_dirs = config.rules_dirs;
  // The config's facts first: a --set of the same fact on the command line wins.
  options.sets.insert(options.sets.begin(), config.sets.begin(), config.sets.end());
  if (config.workloads_dir) {
    auto files = service::list_workload_files(*config.workloads_dir);
    if (!files) throw util::Fatal{"workloads_dir: " + files.error().message};
    options.workload_files.insert(options.workload_files.end(), files->workload_files.begin(), files->workload_files.end());
    options.hf_configs.insert(options.hf_configs.end(), files->hf_configs.begin(), files->hf_configs.end());
    options.megatron_args.insert(options.megatron_args.end(), files->megatron_args.begin(), files->megatron_args.end());
  }
}

void apply_config_workloads(Options& options) {
  if (!options.config_file) return;
  apply_config(options, load_service_config(options, service::ConfigRequired::yes));
}

namespace {

// Writes one of run's outputs. One that cannot be written (a FIFO nobody reads, a link another
// user planted, a full disk) is a warning naming the file, and the other outputs are still
// written: a broken textfile must not cost the node its report or its NFD labels.
void write_or_warn(const fs::path& path, std::string_view content, util::Sync sync = util::Sync::yes) {
  // Missing directories are made only below a path the output policy would follow: mkdir
  // follows links, and must not create one where another user's link points.
  std::error_code ec;
  fs::path existing = path.parent_path();
  while (!existing.empty() && existing != existing.parent_path() && !fs::exists(existing, ec)) existing = existing.parent_path();
  if (util::walk_path(existing.empty() ? fs::path(".") : existing, util::Walk::output)) fs::create_directories(path.parent_path(), ec);
  auto written = util::write_file_atomic(path, content, 0644, sync);
  if (!written) util::log::warning("run: " + written.error().message + " (the other outputs are written)");
}

service::FingerprintInputs fingerprint_inputs(const Options& options, const service::Config& config,
                                              const std::optional<std::string>& last_report) {
  service::FingerprintInputs in;
  in.root = options.root;
  in.last_report_json = last_report;
  in.rules_dirs = rules_directories(options);
  in.workload_files = options.workload_files;
  in.workload_files.insert(in.workload_files.end(), options.hf_configs.begin(), options.hf_configs.end());
  in.workload_files.insert(in.workload_files.end(), options.megatron_args.begin(), options.megatron_args.end());
  if (options.facts_file) in.workload_files.push_back(*options.facts_file);
  if (!config.source.empty()) in.config_file = config.source;
  in.environment = service::current_environment();
  // What-if overrides on the command line change the answer like the environment does.
  for (std::size_t i = 0; i < options.sets.size(); ++i) in.environment["NVTE_DOCTOR_SET_" + std::to_string(i)] = options.sets[i];
  for (std::size_t i = 0; i < options.workload_sets.size(); ++i) {
    in.environment["NVTE_DOCTOR_WORKLOAD_SET_" + std::to_string(i)] = options.workload_sets[i];
  }
  in.tool_version = NVTE_VERSION_STRING;
  in.report_paths_file = config.state_dir / "report.paths";
  return in;
}

void report_push(const service::FlushResult& result) {
  if (result.sent) util::log::info("push: delivered " + std::to_string(result.sent) + " report(s)");
  if (!result.last_error.empty()) {
    util::log::warning("push: " + std::to_string(result.pending) + " report(s) kept in the spool for the next run: " +
                       result.last_error);
  }
}

bool selftest_due(service::SelftestPolicy policy, bool node_changed) {
  switch (policy) {
  case service::SelftestPolicy::never: return false;
  case service::SelftestPolicy::always: return true;
  case service::SelftestPolicy::on_change: return node_changed;
  }
  return false;
}

} // namespace

int run_run(const Options& given) {
  auto start = std::chrono::steady_clock::now();
  util::log::Laps laps("run"); // -vv: where an unchanged run's time goes (issue 40: <= 5 ms)
  const double now = service::unix_now();
  service::Config config = load_service_config(given, service::ConfigRequired::no);
  Options options = given;
  apply_config(options, config);
  laps.lap("configuration");

  std::error_code ec;
  fs::create_directories(config.state_dir, ec);
  if (ec) throw util::Fatal{"cannot create state directory " + config.state_dir.string() + ": " + ec.message()};
  require_private_state_directory(config.state_dir);
  auto lock = service::RunLock::acquire(config.state_dir / "run.lock",
                                        options.wait ? service::RunLock::Wait::yes : service::RunLock::Wait::no);
  if (!lock) throw util::Fatal{lock.error().message};
  laps.lap("state directory and lock");

  std::optional<std::string> last_report;
  if (auto text = util::read_input(config.outputs.report)) last_report = std::move(*text);
  laps.lap("last report read");
  auto fingerprint = service::compute_fingerprint(fingerprint_inputs(options, config, last_report));
  laps.lap("fingerprint (" + std::to_string(fingerprint.inputs.size()) + " inputs)");
  auto state = service::load_state(config.state_dir / "state.json");
  auto decision = service::decide(state, fingerprint, last_report.has_value(), config.max_age, now,
                                  options.force ? service::Force::yes : service::Force::no);
  if (state && state->last_full_run > now + service::k_clock_slack_seconds) {
    util::log::warning((config.state_dir / "state.json").string() + ": the last full check is dated in the future; running a full check");
  }
  // A torn or corrupted output is repaired by a full check, never refreshed in place.
  std::optional<std::string> last_status = fingerprint.last_report_status;
  laps.lap("state read and decided");
  if (last_report && !last_status) {
    util::log::warning(config.outputs.report.string() + ": the last report is not a readable report; running a full check");
    if (!options.force) decision = {true, "the last report is unreadable"};
  }

  if (!decision.full) {
    if (config.outputs.prometheus) {
      auto text = util::read_file(*config.outputs.prometheus);
      if (!text) {
        decision = {true, "the Prometheus textfile is missing"};
      } else if (!service::textfile_intact(*text)) {
        util::log::warning(config.outputs.prometheus->string() + ": the Prometheus textfile is torn or corrupted; running a full check");
        decision = {true, "the Prometheus textfile is unreadable"};
      } else {
        // No fsync: a lost timestamp is rewritten by the next run, and the sync would be most of
        // this path's wall time on a busy disk.
        write_or_warn(*config.outputs.prometheus, service::refresh_metric(*text, report::k_last_run_metric, now), util::Sync::no);
      }
    }
  }
  if (!decision.full) {
    if (config.push) {
      service::Spool spool(config.push->spool_dir, config.push->spool_max_reports, config.push->spool_max_bytes);
      if (auto pending = spool.pending(); pending && !pending->empty()) report_push(service::flush_spool(*config.push, spool));
    }
    laps.lap("outputs refreshed");
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    char line[512];
    std::snprintf(line, sizeof line, "nvte-doctor run: %s (unchanged: %s; %.1f ms)\n", last_status->c_str(), decision.reason.c_str(), ms);
    std::fputs(line, stdout);
    return model::exit_code_of_status(*last_status);
  }

  util::log::info("run: full check: " + decision.reason);
  bool node_changed = !state || state->fingerprint != fingerprint.digest;
  if (selftest_due(config.selftest_policy, node_changed)) {
    // The self-test runs in children with their own timeouts; its checks at each workload's
    // shape are the evidence of that workload's verdict ("ran here").
    util::log::info("run: self-test policy " + std::string(service::to_string(config.selftest_policy)) + ": running the self-test");
    options.selftest = true;
    if (!options.selftest_timeout) options.selftest_timeout = static_cast<double>(config.selftest_timeout.count());
  }
  // The probe's file cache lives with the state (private, this user's: checked above).
  if (!options.cache_dir) options.cache_dir = config.state_dir;
  model::Report report = build_report(options);
  report.fingerprint = fingerprint.digest;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string json = report::render_check_json(report);
  write_or_warn(config.outputs.report, json);
  if (config.outputs.prometheus) write_or_warn(*config.outputs.prometheus, report::render_prometheus(report, {now, seconds}));
  if (config.outputs.nfd) {
    // Labels expire when the doctor stops refreshing them (two max_age periods).
    write_or_warn(*config.outputs.nfd,
                  report::render_nfd(report, rfc3339(static_cast<std::int64_t>(now + 2.0 * static_cast<double>(config.max_age.count())))));
  }
  auto saved_fingerprint = service::compute_fingerprint(fingerprint_inputs(options, config, json));
  auto saved = service::save_state(config.state_dir / "state.json", {saved_fingerprint.digest, now, saved_fingerprint.inputs});
  if (!saved) util::log::warning("run: " + saved.error().message + " (the next run is a full check)");
  service::save_report_paths(config.state_dir / "report.paths", json);
  if (config.push) report_push(service::push_report(*config.push, json));

  const auto& w = report.summary.workloads;
  std::printf("nvte-doctor run: %s (%d error(s), %d warning(s); workloads: %d run, %d at risk, %d fail, %d no backend, %d unknown; "
              "full check: %s; %.2f s)\n",
              report.summary.status.c_str(), report.summary.errors, report.summary.warnings, w.runs, w.at_risk, w.fails, w.no_backend,
              w.unknown, decision.reason.c_str(), seconds);
  std::fflush(stdout);
  // The timer's unit answers for the node: its status is the node's own (a workload's verdict is
  // in the report and the outputs, never a failed unit).
  return model::exit_code_of_status(report.summary.status);
}

namespace {

service::DaemonSettings daemon_settings(const Options& options, const service::Config& config) {
  service::DaemonSettings settings;
  settings.interval = config.interval;
  settings.debounce = config.debounce;
  if (!config.source.empty()) settings.watch.push_back(config.source);
  if (config.workloads_dir) settings.watch.push_back(*config.workloads_dir);
  for (const auto& dir : options.rules_only_dirs.empty() ? config.rules_dirs : options.rules_only_dirs) settings.watch.push_back(dir);
  for (const auto& dir : options.rules_dirs) settings.watch.push_back(dir);
  settings.watch.push_back(util::under_root(options.root, "/etc/ld.so.cache"));
  settings.watch.push_back(util::under_root(options.root, "/usr/local"));
  // The site-packages directories the last report saw: pip installs land there.
  if (auto text = util::read_input(config.outputs.report); text && util::check_json(*text, config.outputs.report.string())) {
    auto doc = nlohmann::json::parse(*text, nullptr, false);
    if (!doc.is_discarded() && doc.contains("facts") && doc["facts"].contains("python") &&
        doc["facts"]["python"].contains("site_packages") && doc["facts"]["python"]["site_packages"].is_string()) {
      settings.watch.push_back(util::under_root(options.root, doc["facts"]["python"]["site_packages"].get<std::string>()));
    }
  }
  settings.watch.insert(settings.watch.end(), config.watch.begin(), config.watch.end());
  return settings;
}

} // namespace

int run_daemon(const Options& options) {
  util::set_long_lived(); // each run's probe and report are freed after it, not kept to the end
  service::Config config = load_service_config(options, service::ConfigRequired::no);
  Options run_options = options;
  run_options.wait = true; // a timer run in progress delays this one rather than failing it
  service::DaemonHooks hooks;
  hooks.run_once = [&run_options]() {
    try {
      return run_run(run_options);
    } catch (const util::Fatal& fatal) {
      util::log::error("run: " + fatal.message);
      return 3;
    }
  };
  hooks.reload = [&options]() -> util::Result<service::DaemonSettings> {
    try {
      return daemon_settings(options, load_service_config(options, service::ConfigRequired::no));
    } catch (const util::Fatal& fatal) {
      return util::make_error(util::ErrorKind::invalid, fatal.message);
    }
  };
  return service::run_daemon(daemon_settings(options, config), hooks);
}

int run_fleet(const Options& options) {
  if (options.fleet_inputs.empty()) throw util::Fatal{"fleet needs report files or directories"};
  auto max_age = service::parse_duration(options.max_age.empty() ? "1d" : options.max_age);
  if (!max_age) throw util::Fatal{"--max-age '" + options.max_age + "' is not a duration (e.g. 30m, 2h, 1d)"};
  std::vector<std::string> matrix_by;
  if (options.fleet_by) {
    auto keys = service::parse_matrix_keys(*options.fleet_by);
    if (!keys) throw util::Fatal{keys.error().message};
    matrix_by = std::move(*keys);
  }
  auto summary = service::summarize_fleet(options.fleet_inputs, std::chrono::duration_cast<std::chrono::seconds>(*max_age),
                                          service::unix_now(), matrix_by);
  if (summary.nodes.empty() && !summary.unreadable.empty()) throw util::Fatal{"no readable report: " + summary.unreadable.front()};
  if (summary.nodes.empty()) {
    // "Nodes: 0" with exit 0 would tell a monitor that an empty or mistyped directory is a healthy fleet.
    std::string where;
    for (const auto& input : options.fleet_inputs) where += (where.empty() ? "" : ", ") + input.string();
    throw util::Fatal{"no report found in " + where + " (fleet reads report files and the *.json files of directories)"};
  }
  report::FleetTextOptions text{options.fleet_hosts, options.fleet_all};
  write_output(options, options.format == Format::json ? report::render_fleet_json(summary) : report::render_fleet_text(summary, text));
  return summary.exit_code();
}

} // namespace app
