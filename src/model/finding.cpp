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

} // namespace model
