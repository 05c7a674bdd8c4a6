// Explain case files (tests/explain/*.yaml): a node, a workload and what TE's backend selection
// must give for them. Loaded here because src/rules owns the YAML parsing of rules data; the
// rules database test runs each case as its own gtest.
#pragma once

#include "rules/rules.hpp"

#include <map>

namespace rules {

struct BackendExpectation {
  std::optional<bool> available;
  std::optional<std::optional<std::string>> sub_backend; // set when given; inner nullopt = null
  std::vector<std::string> reasons;                      // rule ids that must be among the reasons
};

struct ExplainCase {
  std::string name;
  std::string file;
  int line = 0;
  model::Facts facts;
  model::Workload workload; // completed
  std::optional<std::optional<std::string>> selected; // set when given; inner nullopt = null
  std::optional<std::string> te_version;
  std::map<std::string, BackendExpectation> backends;
  std::optional<std::vector<std::string>> findings; // ids that must be present; [] = no finding at all
};

// Every case of one file: {name, facts: {flat}, workload: {keys}, expect: {...}} items.
// Diagnostics (file:line:column) for malformed files, unknown keys and badly typed values.
std::vector<ExplainCase> load_explain_cases(const std::filesystem::path& file, std::vector<Diagnostic>& diagnostics);

// nullopt when explain() gives what the case expects, else every difference, one per line.
std::optional<std::string> check_explain_case(const RuleSet& rules, const ExplainCase& c);

} // namespace rules
