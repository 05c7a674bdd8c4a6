// The node fix search's incremental evaluation (rules/fix_session.hpp, NodeBase): each candidate
// change is applied to one working copy of the facts and taken back, and only the node rules that
// read a fact it moved are evaluated again. Here every candidate the shipped rules' searches try on
// the fixture snapshots and on every node rule's `fires` case is also worked out in full (a copy
// of the facts, every node rule: SearchOptions::check_incremental) and must agree; and a change
// that clears a finding but makes another rule fire (one that reads a fact the finding's own rule
// does not) is no fix, whether that rule reads a single fact or walks a collection.
#include "support/shipped_rules.hpp"
#include "probe/relink.hpp"
#include "rules/fix_search.hpp"

#include <gtest/gtest.h>

#include <iostream>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <unistd.h>

namespace {

rules::SearchOptions checked_search(rules::IncrementalCheck& check) {
  rules::SearchOptions o;
  o.relink = [](model::Facts& f, std::string_view lib) { probe::relink_from_facts(f, lib); };
  o.check_incremental = &check;
  return o;
}

model::Facts snapshot(const std::string& name) {
  std::ifstream in(std::string(NVTE_FIXTURES_DIR) + "/snapshots/" + name);
  std::stringstream text;
  text << in.rdbuf();
  auto facts = model::Facts::from_json(text.str(), name);
  EXPECT_TRUE(facts.ok()) << name;
  return facts.ok() ? *facts : model::Facts{};
}

// The node findings of facts with their fixes, every node outcome checked against the full one.
std::vector<model::Finding> searched(const rules::RuleSet& rules, model::Facts facts, rules::IncrementalCheck& check) {
  // What check adds before it evaluates the node rules (app/check_command.cpp).
  facts.set("doctor.workloads", 3L);
  if (!facts.has("te.version") && !rules.selection().default_te_version.empty())
    facts.set("doctor.assumed_te_version", *model::Version::parse(rules.selection().default_te_version));
  auto findings = rules::evaluate_node(rules, facts);
  rules::verify_node_findings(rules, facts, findings, checked_search(check));
  return findings;
}

std::string differences(const rules::IncrementalCheck& check) {
  std::string out;
  for (std::size_t i = 0; i < check.differences.size() && i < 20; ++i) out += "\n  " + check.differences[i];
  return out;
}

TEST(FixSearchIncremental, EveryCandidateOnTheSnapshotsAgreesWithTheFullEvaluation) {
  rules::IncrementalCheck check;
  std::size_t verified = 0;
  for (std::string name : {"h100-node-te.json", "h100-node.json", "a100-node.json"}) {
    for (const auto& f : searched(test_support::shipped_rules(), snapshot(name), check))
      verified += static_cast<std::size_t>(
          std::count_if(f.fixes.begin(), f.fixes.end(), [](const model::Fix& x) { return x.verified.has_value(); }));
  }
  EXPECT_TRUE(check.differences.empty()) << check.differences.size() << " of " << check.compared << " differ:" << differences(check);
  std::cerr << "snapshots: " << check.compared << " compared, " << verified << " verified\n";
  EXPECT_GT(check.compared, 100u);
  EXPECT_GT(verified, 0u);
}

TEST(FixSearchIncremental, EveryCandidateOnEveryNodeRulesFiresCaseAgreesWithTheFullEvaluation) {
  auto loaded = rules::RuleSet::load({NVTE_RULES_DIR});
  ASSERT_TRUE(loaded.rules) << rules::render(loaded.diagnostics);
  const rules::RuleSet& rules = *loaded.rules;
  std::set<std::string> node_rules;
  for (const auto& r : rules.rule_summaries())
    if (r.kind == "node") node_rules.insert(r.id);
  rules::IncrementalCheck check;
  std::size_t cases = 0;
  std::set<std::string> searched_rules;
  for (const auto& c : rules.test_cases()) {
    if (!c.fires || !node_rules.count(c.rule_id)) continue;
    ++cases;
    for (const auto& f : searched(rules, c.facts, check))
      if (f.id == c.rule_id && f.severity != model::Severity::info) searched_rules.insert(f.id);
  }
  EXPECT_TRUE(check.differences.empty()) << check.differences.size() << " of " << check.compared << " differ:" << differences(check);
  std::cerr << "fires cases: " << cases << " cases, " << searched_rules.size() << " rules, " << check.compared << " compared\n";
  EXPECT_GT(cases, 80u);
  EXPECT_GT(searched_rules.size(), 40u) << "node rules whose own finding was searched";
  EXPECT_GT(check.compared, 2000u);
}

// Rules besides the shipped ones, in a directory that goes away with the object.
struct ExtraRules {
  std::filesystem::path dir;
  explicit ExtraRules(const std::string& text) {
    dir = std::filesystem::temp_directory_path() / ("nvte-fix-incremental-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "extra.yaml") << text;
  }
  ~ExtraRules() { std::filesystem::remove_all(dir); }
  ExtraRules(const ExtraRules&) = delete;
  ExtraRules& operator=(const ExtraRules&) = delete;
};

constexpr const char* k_old_nccl = R"(rules:
  - id: test-nccl-before-2-20
    title: NCCL older than 2.20
    severity: error
    when: nccl.version < 2.20
    message: NCCL {{nccl.version}} is older than 2.20.
    references: [https://docs.nvidia.com/deeplearning/nccl/release-notes/]
    tests:
      fires: [{nccl.version: 2.19.3}]
      quiet: [{nccl.version: 2.20.3}]
)";

// The fixes the search verifies for test-nccl-before-2-20 with the extra rules, and the check.
std::vector<model::Fix> old_nccl_fixes(const std::string& extra, rules::IncrementalCheck& check) {
  ExtraRules dir(std::string(k_old_nccl) + extra);
  auto loaded = rules::RuleSet::load({NVTE_RULES_DIR, dir.dir.string()});
  EXPECT_TRUE(loaded.rules) << rules::render(loaded.diagnostics);
  if (!loaded.rules) return {};
  model::Facts facts;
  for (std::string s : {"gpu.compute_capability=9.0", "nccl.version=2.19.3", "torch.version=2.6.0", "torch.cuda_version=12.4",
                        "python.version=3.12.3", "python.site_packages=/venv/lib/python3.12/site-packages"})
    EXPECT_TRUE(facts.apply_override(s).ok()) << s;
  facts.derive();
  auto findings = rules::evaluate_node(*loaded.rules, facts);
  rules::verify_node_findings(*loaded.rules, facts, findings, checked_search(check));
  for (const auto& f : findings)
    if (f.id == "test-nccl-before-2-20") return f.fixes;
  ADD_FAILURE() << "test-nccl-before-2-20 did not fire";
  return {};
}

bool installs_nccl(const model::Fix& fix) {
  return fix.verified && std::any_of(fix.changes.begin(), fix.changes.end(), [](const auto& c) { return c.first == "nccl.version"; });
}

TEST(FixSearchIncremental, AWheelThatMakesARuleReadingAnotherFactFireIsNoFix) {
  rules::IncrementalCheck check;
  // Without another rule, an NCCL wheel clears the finding.
  auto alone = old_nccl_fixes("", check);
  EXPECT_TRUE(std::any_of(alone.begin(), alone.end(), installs_nccl));
  // A rule on the path TE would then load NCCL from: the wheel makes it fire (an error, the
  // finding's own severity), so the wheel is no fix. test-nccl-before-2-20 reads nccl.version
  // only: re-evaluating the finding's own rule would have verified it.
  auto path = old_nccl_fixes(R"(  - id: test-nccl-wheel-path
    title: NCCL from the venv's wheel
    severity: error
    when: nccl.path == "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"
    message: NCCL from the wheel.
    references: [https://docs.nvidia.com/deeplearning/nccl/release-notes/]
    tests:
      fires: [{nccl.path: /venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2}]
      quiet: [{nccl.path: /usr/lib/libnccl.so.2}]
)",
                             check);
  EXPECT_FALSE(std::any_of(path.begin(), path.end(), installs_nccl));
  // The same through a rule that walks the library's copies (a collection: the wheel adds one).
  auto copies = old_nccl_fixes(R"(  - id: test-nccl-wheel-copy
    title: an NCCL copy from a wheel
    severity: error
    when: nccl.copies.source == "site_packages"
    message: a copy of NCCL from a wheel.
    references: [https://docs.nvidia.com/deeplearning/nccl/release-notes/]
    tests:
      fires: [{"nccl.copies[0].source": site_packages}]
      quiet: [{"nccl.copies[0].source": system}]
)",
                               check);
  EXPECT_FALSE(std::any_of(copies.begin(), copies.end(), installs_nccl));
  EXPECT_TRUE(check.differences.empty()) << differences(check);
  EXPECT_GT(check.compared, 3u);
}

} // namespace
