// The edge of the knowledge (rules/knowledge.cpp) and the rule key `impact`: which facts lie
// beyond the rules' selection block and catalog, and what the loader accepts.
#include "rules/knowledge.hpp"
#include "rules/rules.hpp"

#include <gtest/gtest.h>

namespace {

constexpr const char* k_database = R"(selection:
  default_te_version: "2.18.0"
  newest_te_modelled: "2.20.0.dev0"
  modelled_sms: [90, 100, 103]
  orders:
    - te: ">=1.10"
      backends: [FlashAttention, FusedAttention, UnfusedDotProductAttention]
packages:
  - name: nvidia-cudnn-cu12
    fact: cudnn.version
    library: cudnn
    requirement: "nvidia-cudnn-cu12=={version}"
    cuda: 12
    releases:
      - {version: 9.26.0.51, source: "https://example.org/a"}
      - {version: 9.27.0.42, source: "https://example.org/b"}
rules:
  - id: kernel-wrong
    title: t
    severity: error
    impact: wrong_results
    when: gpu.sm == 120
    message: m
    references: [https://example.org/issue]
)";

rules::RuleSet database() {
  auto loaded = rules::RuleSet::load_text(k_database, "k.yaml");
  EXPECT_TRUE(loaded.rules) << rules::render(loaded.diagnostics);
  return *loaded.rules;
}

std::vector<std::string> extrapolated_facts(const model::Knowledge& k) {
  std::vector<std::string> out;
  for (const auto& e : k.extrapolated) out.push_back(e.fact + "=" + e.value);
  return out;
}

model::Facts facts(std::initializer_list<std::pair<const char*, const char*>> sets) {
  model::Facts f;
  for (const auto& [name, value] : sets) EXPECT_TRUE(f.apply_override(std::string(name) + "=" + value).ok()) << name;
  f.derive();
  return f;
}

} // namespace

TEST(Knowledge, TeNewerThanModelledIsExtrapolated) {
  auto rules = database();
  EXPECT_EQ(extrapolated_facts(rules::knowledge_horizon(rules, facts({{"te.version", "2.21.0"}}))),
            std::vector<std::string>{"te.version=2.21.0"});
  EXPECT_EQ(extrapolated_facts(rules::knowledge_horizon(rules, facts({{"te.version", "3.0.0"}}))),
            std::vector<std::string>{"te.version=3.0.0"});
  EXPECT_TRUE(rules::knowledge_horizon(rules, facts({{"te.version", "2.20.0"}})).extrapolated.empty());
  EXPECT_TRUE(rules::knowledge_horizon(rules, facts({{"te.version", "2.19.0"}})).extrapolated.empty());
}

TEST(Knowledge, TeAbsentAssumesThePublishedRelease) {
  auto k = rules::knowledge_horizon(database(), facts({}));
  EXPECT_EQ(k.assumed_te, "2.18.0");
  EXPECT_EQ(k.newest_te_published, "2.18.0");
  EXPECT_EQ(k.newest_te_modelled, "2.20.0.dev0");
  EXPECT_TRUE(k.extrapolated.empty());
  EXPECT_FALSE(rules::knowledge_finding(k));
}

TEST(Knowledge, CudnnComparesOnTheRelease) {
  auto rules = database();
  EXPECT_EQ(rules::knowledge_horizon(rules, facts({})).newest_cudnn_known, "9.27.0.42");
  EXPECT_TRUE(rules::knowledge_horizon(rules, facts({{"cudnn.version", "9.27.0.51"}})).extrapolated.empty());
  EXPECT_TRUE(rules::knowledge_horizon(rules, facts({{"cudnn.version", "9.27.0"}})).extrapolated.empty());
  EXPECT_EQ(extrapolated_facts(rules::knowledge_horizon(rules, facts({{"cudnn.version", "9.27.1"}}))),
            std::vector<std::string>{"cudnn.version=9.27.1"});
}

TEST(Knowledge, UnmodelledArchitecturesOncePerComputeCapability) {
  auto rules = database();
  auto k = rules::knowledge_horizon(rules, facts({{"gpu[0].sm", "107"}, {"gpu[1].sm", "107"}, {"gpu[2].sm", "103"}}));
  EXPECT_EQ(extrapolated_facts(k), std::vector<std::string>{"gpu.compute_capability=10.7"});
  EXPECT_EQ(k.modelled_compute_capabilities, (std::vector<std::string>{"9.0", "10.0", "10.3"}));
  auto finding = rules::knowledge_finding(k);
  ASSERT_TRUE(finding);
  EXPECT_EQ(finding->id, "knowledge-extrapolated");
  EXPECT_EQ(finding->severity, model::Severity::warning);
  EXPECT_NE(finding->title.find("gpu.compute_capability 10.7"), std::string::npos);
}

TEST(Knowledge, ImpactReachesTheFinding) {
  auto rules = database();
  auto findings = rules::evaluate_node(rules, facts({{"gpu.sm", "120"}}));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact, model::Impact::wrong_results);
  EXPECT_EQ(model::describe(findings[0].impact), "runs but computes wrong results");
  EXPECT_EQ(rules.rule_summaries().at(0).impact, model::Impact::wrong_results);
}

TEST(Knowledge, LoaderRejectsBadImpactAndSms) {
  auto loaded =
      rules::RuleSet::load_text("selection:\n  default_te_version: \"2.18.0\"\n  newest_te_modelled: \"x\"\n  modelled_sms: [90, ninety]\n"
                                "rules:\n  - id: r\n    title: t\n    severity: error\n    impact: slow\n    when: true\n    message: m\n",
                                "bad.yaml");
  ASSERT_FALSE(loaded.rules);
  std::string all = rules::render(loaded.diagnostics);
  for (std::string_view part : {"unknown impact 'slow'", "'modelled_sms' is a list of sm numbers", "invalid version"})
    EXPECT_NE(all.find(part), std::string::npos) << part << "\n" << all;
}
