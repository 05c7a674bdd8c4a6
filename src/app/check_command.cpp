// `check`: facts -> node findings + one explanation per workload -> report (text, JSON,
// Prometheus textfile or NFD features). A workload without
// any attention backend is an error finding of its own, carrying the reasons and their fixes.
#include "app/app.hpp"
#include "app/command_io.hpp"
#include "app/rules_loading.hpp"
#include "app/selftest_command.hpp"
#include "app/workloads.hpp"
#include "app/check_core.hpp"
#include "rules/fix_search.hpp"
#include "report/render.hpp"
#include "report/te_log_agreement.hpp"
#include "util/hash.hpp"
#include "util/logging.hpp"

#include <chrono>
#include <future>

namespace app {

model::Report build_report(const Options& options) {
  // The rules load (YAML parsing: most of check's own cost) on a thread while the probes run
  // and NVML initialises in its child; wall time is then max(probe, rules), not the sum.
  util::log::Laps laps("check"); // -vv: where check's own time goes
  std::future<rules::RuleSet> loading;
  model::Facts facts = load_facts(options, [&] { loading = std::async(std::launch::async, [&] { return load_rules(options); }); });
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
  rules::verify_node_findings(rules, facts, report.findings, search);
  laps.lap("node fixes");
  model::Facts scratch;
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    const model::Workload& w = workloads[i];
    const model::Facts& workload_facts = facts_for(facts, observed[i].get(), scratch); // a TE log's versions
    model::Explanation e = rules::explain(rules, workload_facts, w);
    rules::verify_explanation(rules, workload_facts, e, search);
    for (const auto& f : e.findings) report.findings.push_back(f);
    if (observed[i]) report.findings.push_back(report::te_log_finding(e, *observed[i]));
    report.workloads.push_back(std::move(e));
    laps.lap("workload " + w.name);
  }
  report.fingerprint = util::hex64(util::fnv1a64(facts.to_json(-1) + rules.digest()));
  report.facts = std::move(facts);
  report.summarize();
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
  model::Report report = build_report(effective);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_output(options, render_report(options, report, {unix_time(), seconds}));
  return report.summary.exit_code();
}

} // namespace app
