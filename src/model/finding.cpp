#include "model/finding.hpp"

namespace model {

std::string_view to_string(Severity severity) {
  switch (severity) {
  case Severity::info: return "info";
  case Severity::warning: return "warning";
  case Severity::error: return "error";
  }
  return "info";
}

std::optional<Severity> parse_severity(std::string_view text) {
  if (text == "info") return Severity::info;
  if (text == "warning") return Severity::warning;
  if (text == "error") return Severity::error;
  return std::nullopt;
}

std::string_view to_string(Impact impact) {
  switch (impact) {
  case Impact::none: return "";
  case Impact::wrong_results: return "wrong_results";
  case Impact::runtime_failure: return "runtime_failure";
  }
  return "";
}

std::optional<Impact> parse_impact(std::string_view text) {
  if (text == "wrong_results") return Impact::wrong_results;
  if (text == "runtime_failure") return Impact::runtime_failure;
  return std::nullopt;
}

std::string_view describe(Impact impact) {
  switch (impact) {
  case Impact::none: return "";
  case Impact::wrong_results: return "runs but computes wrong results";
  case Impact::runtime_failure: return "fails at run time";
  }
  return "";
}

std::string_view to_string(VerdictEffect effect) {
  switch (effect) {
  case VerdictEffect::none: return "";
  case VerdictEffect::at_risk: return "at_risk";
  case VerdictEffect::unknown: return "unknown";
  case VerdictEffect::fails: return "fails";
  }
  return "";
}

std::optional<VerdictEffect> parse_verdict_effect(std::string_view text) {
  for (VerdictEffect e : {VerdictEffect::at_risk, VerdictEffect::unknown, VerdictEffect::fails})
    if (text == to_string(e)) return e;
  return std::nullopt;
}

bool is_counterfactual(const Fix& fix) { return fix.verified && (fix.kind == "hardware" || fix.kind == "model"); }

const Fix* best_fix(const std::vector<Fix>& fixes) {
  for (const auto& fix : fixes)
    if (fix.verified && !is_counterfactual(fix)) return &fix;
  return nullptr;
}

} // namespace model
