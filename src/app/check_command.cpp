// `check`: facts -> node findings + one explanation per workload -> report (text, JSON,
// Prometheus textfile or NFD features). A workload without
// any attention backend is an error finding of its own, carrying the reasons and their fixes.
#include "app/app.hpp"
#include "app/context.hpp"
#include "app/rules_loading.hpp"
#include "app/selftest_command.hpp"
#include "app/workloads.hpp"
#include "app/service_glue.hpp"
#include "rules/fix_search.hpp"
#include "report/render.hpp"
#include "util/hash.hpp"
#include "util/logging.hpp"

#include <algorithm>
#include <chrono>
#include <future>

namespace app {

namespace {

model::Finding no_backend_finding(const model::Explanation& e) {
  model::Finding f;
  f.id = "workload-no-attention-backend";
  f.severity = model::Severity::error;
  f.title = "No attention backend for workload " + e.workload.name;
  f.area = "attention";
  f.workload = e.workload.name;
  f.message = "TE " + e.te_version + " would raise \"No dot product attention backend is available\" for this workload:";
  for (const auto& [backend, verdict] : e.backends)
    for (const auto& reason : verdict.reasons) f.message += "\n" + backend + ": " + reason.message;
  f.evidence.emplace_back("te.version", e.te_version);
  return f;
}

} // namespace

model::Report build_report(const Options& options) {
  // The rules load (YAML parsing: most of check's own cost) on a thread while the probes run
  // and NVML initialises in its child; wall time is then max(probe, rules), not the sum.
  util::log::Laps laps("check"); // -vv: where check's own time goes
  std::future<rules::RuleSet> loading;
  model::Facts facts = load_facts(options, [&] { loading = std::async(std::launch::async, [&] { return load_rules(options); }); });
  laps.lap("facts");
  rules::RuleSet rules = loading.valid() ? loading.get() : load_rules(options);
  laps.lap("rules (beyond the facts)");
  auto workloads = load_workloads(options);
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
  if (options.selftest) report.selftest_json = run_selftest_step(options, facts, rules, workloads);
  rules::SearchOptions search = fix_search_options();
  report.findings = rules::evaluate_node(rules, facts);
  laps.lap("node rules");
  rules::verify_node_findings(rules, facts, report.findings, search);
  laps.lap("node fixes");
  std::vector<model::Explanation> explanations;
  for (const auto& w : workloads) {
    explanations.push_back(rules::explain(rules, facts, w));
    rules::verify_explanation(rules, facts, explanations.back(), search);
    laps.lap("workload " + w.name);
  }
  // One pin per package across the node's findings and every workload's.
  rules::unify_pins(rules, facts, explanations, &report.findings, search);
  laps.lap("one pin per package");
  for (auto& e : explanations) {
    if (!e.selected) {
      model::Finding f = no_backend_finding(e);
      // The same question as the attention-no-backend rule's: reuse its verified fixes.
      auto rule = std::find_if(e.findings.begin(), e.findings.end(), [](const auto& x) { return x.id == "attention-no-backend"; });
      f.fixes = rule != e.findings.end() ? rule->fixes : rules::search_fixes(rules, facts, &e.workload, f, search);
      report.findings.push_back(std::move(f));
    }
    for (const auto& f : e.findings) report.findings.push_back(f);
    report.workloads.push_back(std::move(e));
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
