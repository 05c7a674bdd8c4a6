// The shipped rules database, tested the way bpftrace tests its shipped tools: every file under
// rules/ loads and lints clean, every rule's own `tests:` cases pass, and every explain case in
// tests/explain/*.yaml gives the expected backend selection. Each case is its own gtest, named by
// rule / file and case, so a failure says which one.
#include "rules/explain_cases.hpp"
#include "rules/fix_search.hpp"
#include "rules/rules.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <ostream>

// gtest prints parameters in test listings: name the case instead of dumping its bytes.
namespace rules {
void PrintTo(const RuleTestCase& c, std::ostream* os) { *os << c.file << ":" << c.line; }
void PrintTo(const ExplainCase& c, std::ostream* os) { *os << c.file << ":" << c.line; }
} // namespace rules

namespace {

const std::filesystem::path k_rules_dir = NVTE_RULES_DIR;
const std::filesystem::path k_explain_dir = NVTE_EXPLAIN_DIR;

const rules::LoadResult& database() {
  static const rules::LoadResult result = rules::RuleSet::load({k_rules_dir});
  return result;
}

std::string test_name(std::string text) {
  for (char& c : text)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return text;
}

std::vector<std::filesystem::path> explain_files() {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(k_explain_dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".yaml") files.push_back(it->path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(RulesDb, LoadsAndLintsClean) {
  const auto& db = database();
  ASSERT_TRUE(db.rules) << rules::render(db.diagnostics);
  auto problems = rules::lint({k_rules_dir});
  EXPECT_TRUE(problems.empty()) << rules::render(problems);
  EXPECT_EQ(db.rules->digest().size(), 16u);
}

TEST(RulesDb, ExplainCaseFilesLoad) {
  std::vector<rules::Diagnostic> diagnostics;
  for (const auto& file : explain_files()) rules::load_explain_cases(file, diagnostics);
  EXPECT_TRUE(diagnostics.empty()) << rules::render(diagnostics);
}

class RuleCase : public testing::TestWithParam<rules::RuleTestCase> {};

TEST_P(RuleCase, Passes) {
  ASSERT_TRUE(database().rules);
  auto failure = rules::run_test_case(*database().rules, GetParam());
  EXPECT_FALSE(failure) << *failure;
}

std::vector<rules::RuleTestCase> rule_cases() {
  if (!database().rules) return {};
  return database().rules->test_cases();
}

INSTANTIATE_TEST_SUITE_P(Rules, RuleCase, testing::ValuesIn(rule_cases()),
                         [](const testing::TestParamInfo<rules::RuleTestCase>& param) {
                           return test_name(param.param.rule_id + (param.param.fires ? "_fires_" : "_quiet_") +
                                            std::to_string(param.param.index + 1));
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(RuleCase);

class ExplainCase : public testing::TestWithParam<rules::ExplainCase> {};

TEST_P(ExplainCase, Matches) {
  ASSERT_TRUE(database().rules);
  auto failure = rules::check_explain_case(*database().rules, GetParam());
  EXPECT_FALSE(failure) << *failure;
}

std::vector<rules::ExplainCase> explain_cases() {
  std::vector<rules::ExplainCase> cases;
  std::vector<rules::Diagnostic> diagnostics;
  for (const auto& file : explain_files())
    for (auto& c : rules::load_explain_cases(file, diagnostics)) cases.push_back(std::move(c));
  // Test names must be unique even when a file repeats a case name (ExplainCaseFilesLoad fails then).
  for (std::size_t i = 0; i < cases.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (cases[j].file == cases[i].file && cases[j].name == cases[i].name) cases[i].name += "_line" + std::to_string(cases[i].line);
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Explain, ExplainCase, testing::ValuesIn(explain_cases()),
                         [](const testing::TestParamInfo<rules::ExplainCase>& param) {
                           return test_name(std::filesystem::path(param.param.file).stem().string() + "_" + param.param.name);
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ExplainCase);

// Issue 15's contract, over every rule's firing cases and every explain case: a fix printed with
// a command is either verified by the model or says why it is not.
std::vector<std::string> commands_without_a_verdict(const model::Facts& facts, const model::Workload& workload) {
  std::vector<std::string> out;
  auto check = [&](const std::vector<model::Fix>& fixes, const std::string& where) {
    for (const auto& fix : fixes)
      if (!fix.command.empty() && !fix.verified && fix.unverified_reason.empty()) out.push_back(where + ": " + fix.command);
  };
  const rules::RuleSet& rules = *database().rules;
  rules::SearchOptions options;
  auto node = rules::evaluate_node(rules, facts);
  rules::verify_node_findings(rules, facts, node, options);
  for (const auto& f : node) check(f.fixes, f.id);
  model::Explanation e = rules::explain(rules, facts, workload);
  rules::verify_explanation(rules, facts, e, options);
  for (const auto& f : e.findings) check(f.fixes, f.id);
  for (const auto& [backend, verdict] : e.backends)
    for (const auto& reason : verdict.reasons) check(reason.fixes, backend + "/" + reason.rule);
  return out;
}

TEST(RulesDb, EveryPrintedCommandIsVerifiedOrSaysWhy) {
  ASSERT_TRUE(database().rules);
  std::size_t cases = 0;
  for (const auto& c : rule_cases()) {
    if (!c.fires) continue;
    ++cases;
    for (const auto& problem : commands_without_a_verdict(c.facts, c.workload))
      ADD_FAILURE() << c.file << ":" << c.line << " (" << c.rule_id << "): " << problem;
  }
  for (const auto& c : explain_cases()) {
    ++cases;
    for (const auto& problem : commands_without_a_verdict(c.facts, c.workload))
      ADD_FAILURE() << c.file << ":" << c.line << " (" << c.name << "): " << problem;
  }
  EXPECT_GT(cases, 300u);
}

} // namespace
