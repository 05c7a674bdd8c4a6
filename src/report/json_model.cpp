#include "report/json_model.hpp"

namespace report {

namespace {

Json fix_to_json(const model::Fix& fix) {
  Json out{{"kind", fix.kind}, {"command", fix.command}, {"description", fix.description}};
  if (!fix.changes.empty()) {
    Json changes = Json::object();
    for (const auto& [name, value] : fix.changes) changes[name] = value;
    out["changes"] = changes;
  }
  if (fix.verified) {
    Json verified = Json::object();
    if (!fix.verified->backend.empty()) {
      verified["backend"] = fix.verified->backend;
      verified["sub_backend"] = fix.verified->sub_backend.empty() ? Json(nullptr) : Json(fix.verified->sub_backend);
    }
    verified["clears"] = fix.verified->clears;
    out["verified"] = verified;
  }
  if (!fix.unverified_reason.empty()) out["unverified_reason"] = fix.unverified_reason;
  if (fix.refuted) out["refuted"] = true;
  return out;
}

Json verdict_to_json(const std::string& backend, const model::BackendVerdict& verdict) {
  Json reasons = Json::array();
  for (const auto& reason : verdict.reasons) {
    Json fixes = Json::array();
    for (const auto& fix : reason.fixes) fixes.push_back(fix_to_json(fix));
    reasons.push_back(Json{{"rule", reason.rule}, {"message", reason.message}, {"fixes", fixes}});
  }
  Json out{{"available", verdict.available}};
  if (backend == "fused_attention" || backend == "flash_attention")
    out["sub_backend"] = verdict.sub_backend ? Json(*verdict.sub_backend) : Json(nullptr);
  if (verdict.deprioritized) out["deprioritized"] = true;
  out["reasons"] = std::move(reasons);
  return out;
}

} // namespace

Json finding_to_json(const model::Finding& finding) {
  Json evidence = Json::object();
  for (const auto& [name, value] : finding.evidence) evidence[name] = value;
  // `fixes` holds what a user can do; what the model ran and showed does not help, and what would
  // run only on other hardware or with another model, each have their own field.
  Json fixes = Json::array(), rejected = Json::array(), counterfactuals = Json::array();
  for (const auto& fix : finding.fixes) {
    if (fix.refuted) rejected.push_back(fix_to_json(fix));
    else if (fix.verified && (fix.kind == "hardware" || fix.kind == "model")) counterfactuals.push_back(fix_to_json(fix));
    else fixes.push_back(fix_to_json(fix));
  }
  Json out{{"id", finding.id},
           {"severity", std::string(model::to_string(finding.severity))},
           {"title", finding.title},
           {"message", finding.message},
           {"evidence", evidence},
           {"fixes", fixes},
           {"references", finding.references}};
  if (finding.impact != model::Impact::none) out["impact"] = std::string(model::to_string(finding.impact));
  if (!finding.area.empty()) out["area"] = finding.area;
  if (!finding.workload.empty()) out["workload"] = finding.workload;
  if (!rejected.empty()) out["rejected_fixes"] = std::move(rejected);
  if (!counterfactuals.empty()) out["counterfactuals"] = std::move(counterfactuals);
  return out;
}

namespace {

// The verdict's members of a workload object (ARCHITECTURE.md, "Verdicts").
void add_verdict(Json& out, const model::WorkloadVerdict& v) {
  auto text = [](const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); };
  out["verdict"] = std::string(model::to_string(v.verdict));
  out["runnable"] = model::runnable(v.verdict);
  out["backend"] = v.backend ? Json(*v.backend) : Json(nullptr);
  out["backend_sub"] = v.sub_backend ? Json(*v.sub_backend) : Json(nullptr);
  out["evidence"] = Json{{"kind", std::string(model::to_string(v.evidence))}, {"text", v.evidence_text}};
  out["because"] = text(v.because);
  out["verdict_finding"] = text(v.finding);
  out["fix"] = v.fix ? fix_to_json(*v.fix) : Json(nullptr);
  out["how_to_know"] = text(v.how_to_know);
}

} // namespace

Json explanation_to_json(const model::Explanation& e) {
  Json workload = Json::object();
  for (const auto& [key, value] : e.workload.values) {
    switch (value.type()) {
    case model::ValueType::boolean: workload[key] = value.as_bool(); break;
    case model::ValueType::integer: workload[key] = value.as_int(); break;
    case model::ValueType::number: workload[key] = value.as_double(); break;
    default: workload[key] = value.to_string(); break;
    }
  }
  Json backends = Json::object();
  for (const char* name : {"flash_attention", "fused_attention", "unfused_attention"}) {
    auto it = e.backends.find(name);
    backends[name] = verdict_to_json(name, it == e.backends.end() ? model::BackendVerdict{} : it->second);
  }
  Json findings = Json::array();
  for (const auto& f : e.findings) findings.push_back(finding_to_json(f));
  Json out{{"schema_version", 1}, {"name", e.workload.name}};
  add_verdict(out, e.verdict);
  Json rest{{"te_version", e.te_version},
            {"te_version_assumed", e.te_version_assumed},
            {"selected", e.selected ? Json(*e.selected) : Json(nullptr)},
            {"backends", backends},
            {"findings", findings},
            {"workload", workload},
            {"assumed", e.workload.assumed},
            {"notes", e.workload.notes}};
  for (auto& [key, value] : rest.items()) out[key] = std::move(value);
  return out;
}

Json knowledge_to_json(const model::Knowledge& k) {
  auto text = [](const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); };
  Json extrapolated = Json::array();
  for (const auto& e : k.extrapolated) extrapolated.push_back(Json{{"fact", e.fact}, {"value", e.value}, {"newest", e.newest}});
  return Json{{"newest_te_modelled", text(k.newest_te_modelled)},
              {"newest_te_published", text(k.newest_te_published)},
              {"assumed_te_version", text(k.assumed_te)},
              {"newest_cudnn_known", text(k.newest_cudnn_known)},
              {"newest_flash_attn_known", text(k.newest_flash_attn_known)},
              {"newest_flash_attn_3_known", text(k.newest_flash_attn_3_known)},
              {"newest_flash_attn_4_known", text(k.newest_flash_attn_4_known)},
              {"modelled_compute_capabilities", k.modelled_compute_capabilities},
              {"extrapolated", extrapolated}};
}

Json facts_to_json(const model::Facts& facts) { return Json::parse(facts.to_json(-1))["facts"]; }

} // namespace report
