// Fuzz target: check's report building on TE-log input (issue 37, "What to build" 3): the log's
// text -> workloads -> the node facts each log names over the node's (app::facts_for) ->
// explanation and fix search -> one pin per package per context -> TE's verdict as a finding ->
// each workload's verdict (rules::decide_verdict, as app::diagnose gives it) -> the report as
// JSON and text, and explain's text and JSON beside it. The node is the fuzz
// node with TE; the shipped rules load once. It must not crash; an exception other than
// util::Fatal (check's exit 3: a version the log names that the catalog refuses) is a finding;
// the JSON must parse, and no text rendering may carry a terminal escape (audit 2026-12-01
// item 23: the agreement line printed the log's path raw).
//
// For speed, at most three workloads of a log are explained and each fix search gets a small
// budget: the search itself has its own target (fix_search), this one is about the pipeline.
// That budget is why the steps of app::diagnose are spelt out here rather than called (it
// searches with fix_search_options()'s full budget); keep them in step with it.
#include "app/workloads.hpp"
#include "fuzz_common.hpp"
#include "model/report.hpp"
#include "probe/relink.hpp"
#include "report/render.hpp"
#include "report/te_log_agreement.hpp"
#include "rules/fix_search.hpp"
#include "rules/knowledge.hpp"
#include "rules/verdict.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"
#include "workload/te_log.hpp"
#include "workload/workload_io.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#ifndef NVTE_RULES_DIR
#error "NVTE_RULES_DIR must name the shipped rules"
#endif

namespace {

constexpr std::size_t k_max_workloads = 3;

const rules::RuleSet& shipped() {
  static const rules::RuleSet set = [] {
    // NVTE_FUZZ_RULES_DIR: a fuzzer carried to another machine finds the rules of its checkout.
    const char* dir = std::getenv("NVTE_FUZZ_RULES_DIR");
    auto loaded = rules::RuleSet::load({dir != nullptr && *dir != '\0' ? dir : NVTE_RULES_DIR}, rules::TestCases::count);
    if (!loaded.rules) {
      for (const auto& d : loaded.diagnostics) std::fprintf(stderr, "fuzz_te_log_report: %s\n", d.rendered().c_str());
      std::abort();
    }
    return std::move(*loaded.rules);
  }();
  return set;
}

// The node's own findings, with their fixes: the same for every input, made once.
const std::vector<model::Finding>& node_findings(const rules::SearchOptions& search) {
  static const std::vector<model::Finding> findings = [&] {
    auto found = rules::evaluate_node(shipped(), fuzz::small_node());
    rules::verify_node_findings(shipped(), fuzz::small_node(), found, search);
    return found;
  }();
  return findings;
}

rules::SearchOptions search_options() {
  rules::SearchOptions search;
  search.budget = 8;
  search.relink = [](model::Facts& f, std::string_view lib) { probe::relink_from_facts(f, lib); };
  return search;
}

void require_no_escape(const std::string& text, const char* what) {
  if (text.find('\x1b') == std::string::npos) return;
  std::fprintf(stderr, "fuzz_te_log_report: an escape sequence in %s\n", what);
  std::abort();
}

void require_json(const std::string& text, const char* what) {
  if (nlohmann::json::accept(text)) return;
  std::fprintf(stderr, "fuzz_te_log_report: %s is not JSON\n", what);
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)node_findings(search_options());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto log = workload::parse_te_log(fuzz::as_text(data, size), "train.log", "train");
  if (!log) return 0;
  std::vector<model::Workload> workloads;
  std::vector<std::shared_ptr<const model::ObservedSelection>> observed;
  for (auto& [w, seen] : log->workloads) {
    if (workloads.size() == k_max_workloads) break;
    if (!workload::finish_workload(w)) return 0; // the reader checked the values: a bug if this fails
    workloads.push_back(w);
    observed.push_back(seen);
  }
  const rules::RuleSet& rules = shipped();
  const model::Facts& node = fuzz::small_node();
  const rules::SearchOptions search = search_options();
  model::Report report;
  report.tool_version = "fuzz";
  report.host = "fuzz";
  report.generated_at = "2026-12-01T00:00:00Z";
  report.findings = node_findings(search);
  std::vector<model::Explanation> explanations(workloads.size());
  try {
    // As check: each workload on the facts its log names, then one pin per package per context.
    std::vector<model::Facts> scratch(workloads.size());
    std::vector<const model::Facts*> facts(workloads.size());
    for (std::size_t i = 0; i < workloads.size(); ++i) {
      facts[i] = &app::facts_for(node, observed[i].get(), scratch[i]);
      explanations[i] = rules::explain(rules, *facts[i], workloads[i]);
      rules::verify_explanation(rules, *facts[i], explanations[i], search);
    }
    app::unify_pins_per_context(rules, node, explanations, observed, &report.findings, search);
    for (std::size_t i = 0; i < workloads.size(); ++i) {
      rules::VerdictInputs in;
      in.facts = facts[i];
      in.node_findings = &report.findings;
      in.observed = observed[i].get();
      in.workload_index = static_cast<int>(i);
      rules::decide_verdict(explanations[i], in);
    }
  } catch (const util::Fatal&) {
    return 0; // check's exit 3, naming the log's line
  }
  report::TextOptions text{report::Color::no, true};
  std::string explain_text;
  std::vector<const model::ObservedSelection*> te_logs;
  for (std::size_t i = 0; i < explanations.size(); ++i) {
    explain_text += report::render_explain_text(explanations[i], text, nullptr);
    explain_text += report::render_te_log_text(explanations[i], *observed[i], text);
    // As json_check.cpp writes it: bytes of the log that are not UTF-8 become U+FFFD.
    require_json(util::json_text(report::te_log_to_json(explanations[i], *observed[i])), "te_log_to_json");
    te_logs.push_back(observed[i].get());
  }
  require_no_escape(explain_text, "explain's text");
  require_json(report::render_explain_json(explanations, te_logs, nullptr), "explain's JSON");
  for (std::size_t i = 0; i < explanations.size(); ++i) {
    for (const auto& f : explanations[i].findings) report.findings.push_back(f);
    report.findings.push_back(report::te_log_finding(explanations[i], *observed[i]));
    report.workloads.push_back(std::move(explanations[i]));
  }
  report.knowledge = rules::knowledge_horizon(rules, node);
  report.facts = node;
  report.summarize();
  require_json(report::render_check_json(report), "check's JSON");
  require_no_escape(report::render_check_text(report, text), "check's text");
  require_no_escape(report::render_check_text(report, {report::Color::no, false}), "check's short text");
  return 0;
}
