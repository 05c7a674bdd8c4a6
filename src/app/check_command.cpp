// `check`: facts -> node findings + one explanation per workload -> report (text, JSON,
// Prometheus textfile or NFD features). A workload without
// any attention backend is an error finding of its own, carrying the reasons and their fixes.
#include "app/app.hpp"
#include "app/command_io.hpp"
#include "app/rules_loading.hpp"
#include "app/rules_update.hpp"
#include "app/selftest_command.hpp"
#include "app/workloads.hpp"
#include "app/check_core.hpp"
#include "app/diagnosis.hpp"
#include "app/fix_cache.hpp"
#include "rules/fix_search.hpp"
#include "rules/knowledge.hpp"
#include "report/render.hpp"
#include "report/te_log_agreement.hpp"
#include "util/file.hpp"
#include "util/hash.hpp"
#include "util/logging.hpp"
#include "util/process_exit.hpp"
#include "util/parallel.hpp"
#include "util/strings.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <future>

namespace app {

namespace {

// A probe that could not read a directory saw nothing there; "PyTorch not installed" or "cuDNN not
// found" would then be a guess. The paths and the permission are said, and the run is not OK.
std::optional<model::Finding> unreadable_paths_finding(const model::Facts& facts) {
  auto paths = facts.get_string("probe.unreadable_paths");
  if (!paths || paths->empty()) return std::nullopt;
  auto list = util::split(*paths, ';');
  model::Finding f;
  f.id = "probe-permission-denied";
  f.severity = model::Severity::warning;
  f.area = "probe";
  f.title = std::to_string(list.size()) + " director" + (list.size() == 1 ? "y" : "ies") + " could not be read (permission denied)";
  f.message = "The probes were denied access to: " + *paths +
              ". What they hold (Python packages, CUDA libraries) is unknown, so findings such as \"not installed\" or "
              "\"not found\" may be wrong. Run as a user who can read them (the service runs as root).";
  f.evidence = {{"probe.unreadable_paths", *paths}};
  return f;
}

// Freeze protection (TUF's rule): a mirror that keeps serving the same validly signed bundle
// holds back every later rule without a failed update to show for it. The signing time is inside
// the signature, so only the age is left to notice: an updated bundle signed longer ago than
// rules_update.max_age_days (default 180, 0: off) is a warning.
std::optional<model::Finding> stale_bundle_finding(const Options& options) {
  auto active = active_bundle(options);
  if (!active) return std::nullopt;
  auto dirs = rules_directories(options);
  if (dirs.size() != 1 || dirs.front() != *active) return std::nullopt; // --rules or NVTE_DOCTOR_RULES chose others
  auto version = installed_version(*active);
  if (version.created <= 0) return std::nullopt;
  std::filesystem::path config = options.config_file.value_or("/etc/nvte-doctor/config.yaml");
  auto configured = service::load_bundle_max_age_days(config);
  if (!configured) throw util::Fatal{configured.error().message};
  const long max_days = configured->value_or(180);
  const double age_days = (unix_time() - static_cast<double>(version.created)) / 86400.0;
  if (max_days == 0 || age_days <= static_cast<double>(max_days)) return std::nullopt;
  std::string source = "?";
  if (auto text = util::read_file(*active / "BUNDLE.json", 1u << 16)) {
    auto doc = nlohmann::json::parse(*text, nullptr, false);
    if (doc.is_object() && doc.contains("source") && doc["source"].is_string()) source = doc["source"].get<std::string>();
  }
  const long days = static_cast<long>(age_days);
  model::Finding f;
  f.id = "rules-bundle-stale";
  f.severity = model::Severity::warning;
  f.area = "rules";
  f.title = "The installed rules bundle was signed " + std::to_string(days) + " days ago";
  f.message = "The active rules bundle (serial " + std::to_string(version.serial) + ", signed " + utc_date(version.created) + ", from " +
              source + ") is older than rules_update.max_age_days (" + std::to_string(max_days) +
              "). Rules released since then are not checked: the update job may be failing, or its source may be serving an "
              "old bundle (a freeze).";
  f.evidence = {{"rules.bundle.serial", std::to_string(version.serial)},
                {"rules.bundle.created", utc_date(version.created)},
                {"rules_update.max_age_days", std::to_string(max_days)}};
  model::Fix fix;
  fix.kind = "config";
  fix.command = "nvte-doctor rules update " + source;
  fix.description = "fetch the current bundle (its serial must be higher)";
  fix.unverified_reason = "a rules update is outside the node model";
  f.fixes.push_back(std::move(fix));
  return f;
}

// Whether anything the report says may differ from another report's: every fact exactly and the
// rules (the facts' JSON was built for it once, a third of a millisecond with TE's facts).
std::string fingerprint(const model::Facts& facts, const rules::RuleSet& rules) {
  return util::hex64(util::fnv1a64(facts.exact_text(), util::fnv1a64(rules.digest())));
}

} // namespace

model::Report build_report(const Options& options, std::shared_ptr<const rules::RuleSet>* rules_used) {
  // The rules load (YAML parsing: most of check's own cost) on a thread while the probes run
  // and NVML initialises in its child; wall time is then max(probe, rules), not the sum.
  util::log::Laps laps("check"); // -vv: where check's own time goes
  std::future<rules::RuleSet> loading;
  // With one CPU to use (NVTE_DOCTOR_THREADS=1, a one-CPU cgroup) everything runs in turn.
  model::Facts facts = load_facts(options, [&] {
    if (util::available_cpus() > 1)
      loading = std::async(std::launch::async, [&] {
        // -vv: how long loading took beside the probe (the lap below is only what was left of it).
        util::log::Laps rules_laps("check");
        rules::RuleSet loaded = load_rules(options);
        rules_laps.lap("rules loaded (on their thread)");
        return loaded;
      });
  });
  laps.lap("facts");
  rules::RuleSet rules = loading.valid() ? loading.get() : load_rules(options);
  laps.lap("rules (beyond the facts)");
  std::vector<std::shared_ptr<const model::ObservedSelection>> observed; // what a TE log says of each workload
  auto workloads = load_workloads(options, {}, &observed);
  // What the rules need to know about this run rather than the node: whether TE's absence
  // matters (workloads to run) and which TE release the verdicts then model.
  facts.set("doctor.workloads", static_cast<long>(workloads.size()));
  if (!facts.has("te.version") && !rules.selection().default_te_version.empty())
    if (auto assumed = model::Version::parse(rules.selection().default_te_version)) facts.set("doctor.assumed_te_version", *assumed);

  model::Report report;
  report.tool_version = NVTE_VERSION_STRING;
  report.rules_digest = rules.digest();
  report.host = facts.get_string("system.hostname").value_or(host_name());
  report.generated_at = now_rfc3339();
  if (options.selftest) report.selftest = run_selftest_step(options, facts, rules, workloads);
  rules::SearchOptions search = fix_search_options();
  report.findings = rules::evaluate_node(rules, facts);
  laps.lap("node rules");
  // The workloads' verdicts (app/diagnosis.hpp): explanations, fix searches, one pin per package
  // across the node's findings and the workloads' (a TE log's workloads within their own
  // context), the node findings and self-test checks that concern each workload. The node
  // findings' fix search runs beside the workloads' explanations (on the H200 node with TE: 5 ms
  // and 2.5 ms, one after the other before).
  const FixCache fix_cache(options);
  DiagnosisInputs inputs{FixSearch::yes, &report.findings, report.selftest ? &*report.selftest : nullptr, {}, &fix_cache};
  inputs.beside = [&] {
    util::log::Laps fix_laps("check");
    fix_cache.verify_node_findings(rules, facts, report.findings, search);
    if (report.selftest) explain_selftest_failures(*report.selftest, report.findings);
    fix_laps.lap("node fixes (beside the workloads)");
  };
  std::vector<model::Explanation> explanations = diagnose(rules, facts, workloads, observed, inputs);
  laps.lap("node fixes and workloads (" + std::to_string(workloads.size()) + ")");
  fix_cache.save();
  if (report.selftest) explain_selftest_failures(*report.selftest, report.findings, explanations);
  for (std::size_t i = 0; i < explanations.size(); ++i) {
    auto& e = explanations[i];
    for (const auto& f : e.findings) report.findings.push_back(f);
    if (observed[i]) report.findings.push_back(report::te_log_finding(e, *observed[i]));
    report.workloads.push_back(std::move(e));
  }
  report.knowledge = rules::knowledge_horizon(rules, facts);
  if (auto beyond = rules::knowledge_finding(report.knowledge)) report.findings.push_back(std::move(*beyond));
  if (auto stale = stale_bundle_finding(options)) report.findings.push_back(std::move(*stale));
  if (auto denied = unreadable_paths_finding(facts)) report.findings.push_back(std::move(*denied));
  report.fingerprint = fingerprint(facts, rules);
  report.facts = std::move(facts);
  report.summarize();
  if (rules_used) *rules_used = std::make_shared<const rules::RuleSet>(std::move(rules));
  return report;
}

std::string render_report(const Options& options, const model::Report& report, const report::RunTiming& timing) {
  switch (options.format) {
  case Format::json: return report::render_check_json(report);
  case Format::prometheus: return report::render_prometheus(report, timing);
  case Format::nfd: return report::render_nfd(report);
  case Format::text: break;
  }
  return report::render_check_text(report, {options.color ? report::Color::yes : report::Color::no, options.verbosity > 0});
}

int run_check(const Options& options) {
  Options effective = options;
  apply_config_workloads(effective);
  auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const rules::RuleSet> rules;
  auto report = std::make_shared<model::Report>(build_report(effective, &rules));
  // Freed by the process's end, not here (util/process_exit.hpp).
  util::keep_until_exit(rules);
  util::keep_until_exit(report);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_output(options, render_report(options, *report, {unix_time(), seconds}));
  if (options.termination_log) {
    // The verdict is the exit code; a termination log that cannot be written must not turn a
    // CRITICAL into UNKNOWN (a wrapper may start the job on UNKNOWN), so it is a warning.
    auto written = util::write_file_in_place(*options.termination_log, report::render_termination_message(*report));
    if (!written) util::log::warning("--termination-log: " + written.error().message);
  }
  return report->summary.exit_code();
}

} // namespace app
