// `explain`: each workload's verdict on this (or a what-if) node, TE's backend selection under it;
// with --sweep, a support matrix over the swept values. The pipeline is app/diagnosis.hpp.
#include "app/app.hpp"
#include "app/command_io.hpp"
#include "app/diagnosis.hpp"
#include "app/rules_loading.hpp"
#include "app/sweep.hpp"
#include "app/workloads.hpp"
#include "report/render.hpp"
#include "rules/knowledge.hpp"
#include "report/te_log_agreement.hpp"
#include "util/json_text.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <map>

namespace app {

namespace {

// The node finding that decided a workload's verdict (two cuDNN copies put FusedAttention at
// risk) is part of that workload's answer: explain lists no node findings of its own.
void attach_deciding_node_finding(model::Explanation& e, const std::vector<model::Finding>& node_findings) {
  const std::string& id = e.verdict.finding;
  if (id.empty() || std::any_of(e.findings.begin(), e.findings.end(), [&](const model::Finding& f) { return f.id == id; })) return;
  for (const auto& f : node_findings)
    if (f.id == id) {
      e.findings.push_back(f);
      e.findings.back().workload = e.workload.name;
      return;
    }
}

} // namespace

int run_explain(const Options& options) {
  if (options.workload_files.empty() && options.hf_configs.empty() && options.megatron_args.empty() && options.te_logs.empty() && options.workload_sets.empty() &&
      options.sweeps.empty())
    throw util::Fatal{"explain needs a workload: --workload FILE, --hf-config FILE, --megatron-args FILE, --te-log FILE or --workload-set KEY=VALUE"};
  model::Facts facts = load_facts(options);
  rules::RuleSet rules = load_rules(options);
  report::TextOptions text{options.color ? report::Color::yes : report::Color::no, options.verbosity > 0};
  // Every workload file is read once, whatever the number of sweep cells (a TE log on stdin too).
  const SourceWorkloads source = read_workloads(options);
  std::vector<model::Finding> node_findings = verdict_node_findings(rules, facts);

  if (!options.sweeps.empty()) {
    auto axes = parse_sweeps(options.sweeps);
    std::vector<report::SweepCell> cells;
    // A model with several attention variants gives one matrix per variant.
    std::vector<std::string> names;
    std::map<std::string, std::vector<report::SweepCell>> by_workload;
    bool all_unknown = true;
    for (const auto& cell_settings : sweep_cells(axes, 100000)) {
      std::vector<std::shared_ptr<const model::ObservedSelection>> observed;
      auto workloads = complete_workloads(source, options, cell_settings.settings, &observed);
      DiagnosisInputs inputs{FixSearch::no, &node_findings, nullptr, {}};
      auto explained = diagnose(rules, facts, workloads, observed, inputs);
      for (auto& e : explained) {
        all_unknown = all_unknown && e.verdict.verdict == model::Verdict::unknown;
        if (!by_workload.count(e.workload.name)) names.push_back(e.workload.name);
        report::SweepCell cell{cell_settings.values, std::move(e)};
        by_workload[cell.explanation.workload.name].push_back(cell);
        cells.push_back(std::move(cell));
      }
    }
    if (options.format == Format::json) {
      write_output(options, report::render_sweep_json(axes, cells));
    } else {
      std::string matrices;
      for (const auto& name : names) matrices += (matrices.empty() ? "" : "\n") + report::render_sweep_text(axes, by_workload[name], name);
      write_output(options, matrices);
    }
    // A matrix is an answer even with cells that fail; one where the doctor could tell nothing is not.
    return !cells.empty() && all_unknown ? 3 : 0;
  }

  std::vector<std::shared_ptr<const model::ObservedSelection>> observed; // what a TE log says of each
  auto workloads = complete_workloads(source, options, {}, &observed);
  DiagnosisInputs inputs{FixSearch::yes, &node_findings, nullptr, {}};
  std::vector<model::Explanation> explanations = diagnose(rules, facts, workloads, observed, inputs);
  // Where the rules' knowledge ends for this node: a warning on every workload it concerns.
  model::Knowledge knowledge = rules::knowledge_horizon(rules, facts);
  auto beyond = rules::knowledge_finding(knowledge);
  for (auto& e : explanations) {
    attach_deciding_node_finding(e, node_findings);
    if (beyond) {
      e.findings.push_back(*beyond);
      e.findings.back().workload = e.workload.name;
    }
  }
  int code = verdict_exit_code(explanations);
  if (options.fixes_only) {
    write_output(options, options.format == Format::json ? report::render_fix_list_json(explanations)
                                                          : report::render_fix_list_text(explanations));
  } else if (options.format == Format::json) {
    std::vector<const model::ObservedSelection*> te_logs;
    for (const auto& o : observed) te_logs.push_back(o.get());
    write_output(options, report::render_explain_json(explanations, te_logs, &knowledge));
  } else {
    std::string out;
    for (std::size_t i = 0; i < explanations.size(); ++i) {
      if (i) out += "\n";
      out += report::render_explain_text(explanations[i], text, &knowledge);
      if (observed[i]) out += report::render_te_log_text(explanations[i], *observed[i], text);
    }
    write_output(options, out);
  }
  return code;
}

} // namespace app
