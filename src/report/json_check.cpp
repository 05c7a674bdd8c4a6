#include "report/json_model.hpp"
#include "report/render.hpp"
#include "report/te_log_agreement.hpp"
#include "util/json_text.hpp"

namespace report {

std::string render_check_json(const model::Report& report) {
  Json findings = Json::array();
  for (const auto& f : report.findings) findings.push_back(finding_to_json(f));
  Json workloads = Json::array();
  for (const auto& e : report.workloads) workloads.push_back(explanation_to_json(e));
  Json doc{{"schema_version", 1},
           {"tool", Json{{"name", "nvte-doctor"}, {"version", report.tool_version}, {"rules_digest", report.rules_digest}}},
           {"host", report.host},
           {"generated_at", report.generated_at},
           {"fingerprint", report.fingerprint},
           {"facts", facts_to_json(report.facts)},
           {"workloads", workloads},
           {"knowledge", knowledge_to_json(report.knowledge)}};
  if (report.selftest) doc["selftest"] = model::to_json(*report.selftest);
  doc["findings"] = findings;
  // status and the counts are the node's (its own findings); workloads are their verdicts; the
  // exit code is overall_status (ARCHITECTURE.md, "Verdicts").
  const auto& w = report.summary.workloads;
  doc["summary"] =
      Json{{"errors", report.summary.errors},
           {"warnings", report.summary.warnings},
           {"infos", report.summary.infos},
           {"status", report.summary.status},
           {"workloads", Json{{"status", report.summary.workload_status.empty() ? Json(nullptr) : Json(report.summary.workload_status)},
                              {"runs", w.runs},
                              {"at_risk", w.at_risk},
                              {"unknown", w.unknown},
                              {"fails", w.fails},
                              {"no_backend", w.no_backend}}},
           {"overall_status", report.summary.overall_status()}};
  return util::json_text(doc, 2) + "\n";
}

std::string render_explain_json(const std::vector<model::Explanation>& explanations,
                                const std::vector<const model::ObservedSelection*>& te_logs, const model::Knowledge* knowledge) {
  Json list = Json::array();
  for (std::size_t i = 0; i < explanations.size(); ++i) {
    list.push_back(explanation_to_json(explanations[i]));
    if (i < te_logs.size() && te_logs[i]) list.back()["te_log"] = te_log_to_json(explanations[i], *te_logs[i]);
  }
  Json doc{{"schema_version", 1}, {"workloads", list}};
  if (knowledge) doc["knowledge"] = knowledge_to_json(*knowledge);
  return util::json_text(doc, 2) + "\n";
}

std::string render_selftest_json(const model::SelftestSummary& selftest, const std::vector<model::Explanation>& workloads,
                                 const std::vector<model::Finding>& findings, const model::Facts& facts) {
  Json doc = model::to_json(selftest);
  Json list = Json::array();
  for (const auto& f : findings) list.push_back(finding_to_json(f));
  doc["findings"] = list;
  Json facts_out = Json::object();
  for (const auto& [name, value] : facts.entries())
    if (name.starts_with("selftest.")) facts_out[name] = value.to_string();
  doc["facts"] = facts_out;
  Json explained = Json::array();
  for (const auto& e : workloads) explained.push_back(explanation_to_json(e));
  doc["workloads"] = explained;
  return util::json_text(Json{{"schema_version", 1}, {"selftest", doc}}, 2) + "\n";
}

} // namespace report
