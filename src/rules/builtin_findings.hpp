// Findings the doctor's own code writes rather than a rule: the probe denied a directory, a stale
// rules bundle, TE's own log against the doctor's prediction, a node beyond what the rules model.
// Their teaching text lives here, once, so that `nvte-doctor rules show ID` answers for every id
// a report can carry (tests/rules/builtin_ids_test.py holds the sources to this list).
#pragma once

#include <span>
#include <string_view>

namespace rules {

struct BuiltinFix {
  std::string_view kind;
  std::string_view command;
  std::string_view description;
};

struct BuiltinFinding {
  std::string_view id;
  std::string_view severity; // info, warning, error (the finding's; some depend on the case)
  std::string_view area;
  std::string_view title;
  std::string_view message; // the cause, in general terms (the finding itself names the case)
  std::span<const BuiltinFix> fixes;
  std::span<const std::string_view> references;
  std::string_view source; // where the doctor writes it
};

// Every finding id the doctor writes in C++.
std::span<const BuiltinFinding> builtin_findings();
// The entry for id, or nullptr.
const BuiltinFinding* find_builtin_finding(std::string_view id);

} // namespace rules
