#include "model/observed_selection.hpp"

#include <array>
#include <utility>

namespace model {

namespace {

// TE's class names in its Disabling lines, by the doctor's backend names.
constexpr std::array<std::pair<std::string_view, std::string_view>, 3> k_backends = {{
    {"flash_attention", "FlashAttention"},
    {"fused_attention", "FusedAttention"},
    {"unfused_attention", "UnfusedDotProductAttention"},
}};

std::vector<std::string> te_reasons_for(const ObservedSelection& te, std::string_view te_name) {
  std::vector<std::string> out;
  for (const auto& line : te.disabling) {
    // "Disabling FlashAttention 2 due to ...", "Disabling FusedAttention as ...": the backend
    // follows the verb; "UnfusedDotProductAttention" must not count as FusedAttention's.
    std::string_view rest = std::string_view(line).substr(line.starts_with("Disabling ") ? 10 : 0);
    if (rest.starts_with(te_name)) out.push_back(line);
  }
  return out;
}

std::vector<std::string> doctor_rules_for(const Explanation& doctor, std::string_view backend) {
  std::vector<std::string> out;
  auto found = doctor.backends.find(backend);
  if (found == doctor.backends.end()) return out;
  for (const auto& reason : found->second.reasons) out.push_back(reason.rule);
  return out;
}

} // namespace

std::vector<SelectionDifference> compare_selection(const ObservedSelection& te, const Explanation& doctor) {
  std::vector<SelectionDifference> out;
  auto te_name_of = [](std::string_view backend) {
    for (const auto& [name, te_name] : k_backends)
      if (name == backend) return te_name;
    return std::string_view();
  };
  if (te.selected_known && te.selected != doctor.selected) {
    SelectionDifference d{"selected", te.selected.value_or("none"), doctor.selected.value_or("none"), {}, {}};
    // The backend the two pick differently is the one whose filters to look at.
    for (const auto& name : {te.selected, doctor.selected}) {
      if (!name) continue;
      for (const auto& [backend, te_name] : k_backends) {
        if (te_name != *name) continue;
        for (auto& r : te_reasons_for(te, te_name)) d.te_reasons.push_back(std::move(r));
        for (auto& r : doctor_rules_for(doctor, backend)) d.doctor_rules.push_back(std::move(r));
      }
    }
    out.push_back(std::move(d));
  }
  for (const auto& [backend, te_available] : te.available) {
    auto found = doctor.backends.find(backend);
    if (found == doctor.backends.end()) continue;
    const BackendVerdict& verdict = found->second;
    bool doctor_available = verdict.available || verdict.deprioritized;
    if (te_available != doctor_available) {
      out.push_back({backend, te_available ? "yes" : "no", doctor_available ? "yes" : "no",
                     te_reasons_for(te, te_name_of(backend)), doctor_rules_for(doctor, backend)});
      continue;
    }
    if (!te_available) continue;
    if (backend == "fused_attention" && te.fused_sub_backend && verdict.sub_backend != te.fused_sub_backend)
      out.push_back({"fused sub-backend", *te.fused_sub_backend, verdict.sub_backend.value_or("none"), {}, {}});
    if (backend == "flash_attention" && te.flash_version && verdict.sub_backend) {
      std::string generation = "FlashAttention" + te.flash_version->substr(0, te.flash_version->find('.'));
      if (*verdict.sub_backend != generation)
        out.push_back({"flash-attn generation", generation, *verdict.sub_backend, {}, {}});
    }
  }
  return out;
}

} // namespace model
