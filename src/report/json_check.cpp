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
           {"workloads", workloads}};
  if (report.selftest) doc["selftest"] = model::to_json(*report.selftest);
  doc["findings"] = findings;
  doc["summary"] = Json{{"errors", report.summary.errors},
                        {"warnings", report.summary.warnings},
                        {"infos", report.summary.infos},
                        {"status", report.summary.status}};
  return util::json_text(doc, 2) + "\n";
}

std::string render_explain_json(const std::vector<model::Explanation>& explanations,
                                const std::vector<const model::ObservedSelection*>& te_logs) {
  Json list = Json::array();
  for (std::size_t i = 0; i < explanations.size(); ++i) {
    list.push_back(explanation_to_json(explanations[i]));
    if (i < te_logs.size() && te_logs[i]) list.back()["te_log"] = te_log_to_json(explanations[i], *te_logs[i]);
  }
  return util::json_text(Json{{"schema_version", 1}, {"workloads", list}}, 2) + "\n";
}

} // namespace report
