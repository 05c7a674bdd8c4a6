// `explain`: TE's backend selection for each workload on this (or a what-if) node; with
// --sweep, a support matrix over the swept values.
#include "app/app.hpp"
#include "app/command_io.hpp"
#include "app/rules_loading.hpp"
#include "app/workloads.hpp"
#include "report/render.hpp"
#include "report/te_log_agreement.hpp"
#include "util/json_text.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <map>

namespace app {

namespace {

using Sweep = report::SweepAxis;

std::vector<Sweep> parse_sweeps(const std::vector<std::string>& specs) {
  std::vector<Sweep> sweeps;
  for (const auto& spec : specs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw util::Fatal{"--sweep '" + spec + "': expected KEY=V1,V2,..."};
    Sweep s{spec.substr(0, eq), {}};
    // window_size values contain a comma themselves: sweep them separated by ';'.
    char sep = s.key == "window_size" ? ';' : ',';
    for (auto value : util::split(std::string_view(spec).substr(eq + 1), sep)) s.values.emplace_back(util::trim(value));
    sweeps.push_back(std::move(s));
  }
  return sweeps;
}

} // namespace

int run_explain(const Options& options) {
  if (options.workload_files.empty() && options.hf_configs.empty() && options.megatron_args.empty() && options.te_logs.empty() && options.workload_sets.empty() &&
      options.sweeps.empty())
    throw util::Fatal{"explain needs a workload: --workload FILE, --hf-config FILE, --megatron-args FILE, --te-log FILE or --workload-set KEY=VALUE"};
  model::Facts facts = load_facts(options);
  rules::RuleSet rules = load_rules(options);
  report::TextOptions text{options.color ? report::Color::yes : report::Color::no, options.verbosity > 0};

  if (!options.sweeps.empty()) {
    auto sweeps = parse_sweeps(options.sweeps);
    std::vector<report::SweepCell> cells;
    std::vector<std::size_t> index(sweeps.size(), 0);
    std::size_t total = 1;
    for (const auto& s : sweeps) total *= s.values.size();
    if (total > 100000) throw util::Fatal{"--sweep: " + std::to_string(total) + " cells is too many (at most 100000)"};
    // A model with several attention variants gives one matrix per variant.
    std::vector<std::string> names;
    std::map<std::string, std::vector<report::SweepCell>> by_workload;
    for (std::size_t n = 0; n < total; ++n) {
      std::vector<std::string> settings, values;
      for (std::size_t i = 0; i < sweeps.size(); ++i) {
        settings.push_back(sweeps[i].key + "=" + sweeps[i].values[index[i]]);
        values.push_back(sweeps[i].values[index[i]]);
      }
      std::vector<std::shared_ptr<const model::ObservedSelection>> observed;
      auto workloads = load_workloads(options, settings, &observed);
      for (std::size_t i = 0; i < workloads.size(); ++i) {
        const model::Workload& w = workloads[i];
        if (!by_workload.count(w.name)) names.push_back(w.name);
        model::Facts scratch;
        report::SweepCell cell{values, rules::explain(rules, facts_for(facts, observed[i].get(), scratch), w)};
        cells.push_back(cell);
        by_workload[w.name].push_back(std::move(cell));
      }
      for (std::size_t i = sweeps.size(); i-- > 0;) {
        if (++index[i] < sweeps[i].values.size()) break;
        index[i] = 0;
      }
    }
    if (options.format == Format::json) {
      write_output(options, report::render_sweep_json(sweeps, cells));
      return 0;
    }
    std::string matrices;
    for (const auto& name : names) matrices += (matrices.empty() ? "" : "\n") + report::render_sweep_text(sweeps, by_workload[name], name);
    write_output(options, matrices);
    return 0;
  }

  std::vector<model::Explanation> explanations;
  rules::SearchOptions search = fix_search_options();
  model::Facts scratch;
  std::vector<std::shared_ptr<const model::ObservedSelection>> observed; // what a TE log says of each
  auto workloads = load_workloads(options, {}, &observed);
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    const model::Workload& w = workloads[i];
    const model::Facts& workload_facts = facts_for(facts, observed[i].get(), scratch); // a TE log's versions
    explanations.push_back(rules::explain(rules, workload_facts, w));
    rules::verify_explanation(rules, workload_facts, explanations.back(), search);
  }
  // One pin per package within each context of node facts (a TE log's workloads run on the
  // versions it names).
  unify_pins_per_context(rules, facts, explanations, observed, nullptr, search);
  int code = 0;
  for (const auto& e : explanations) {
    if (!e.selected) code = 2;
    for (const auto& f : e.findings) {
      if (f.severity == model::Severity::error) code = 2;
      if (f.severity == model::Severity::warning && code == 0) code = 1;
    }
  }
  if (options.fixes_only) {
    write_output(options, options.format == Format::json ? report::render_fix_list_json(explanations)
                                                          : report::render_fix_list_text(explanations));
  } else if (options.format == Format::json) {
    std::vector<const model::ObservedSelection*> te_logs;
    for (const auto& o : observed) te_logs.push_back(o.get());
    write_output(options, report::render_explain_json(explanations, te_logs));
  } else {
    std::string out;
    for (std::size_t i = 0; i < explanations.size(); ++i) {
      if (i) out += "\n";
      out += report::render_explain_text(explanations[i], text);
      if (observed[i]) out += report::render_te_log_text(explanations[i], *observed[i], text);
    }
    write_output(options, out);
  }
  return code;
}

} // namespace app
