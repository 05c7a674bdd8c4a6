// The rules database put together from files compiled on their own (rules/database_load.cpp):
// it must be the database that compiling every file in turn into one slot table gives, and the
// digest stored at build time must be the digest of the shipped files.
#include "rules/loader_internal.hpp"
#include "rules/preparsed.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

using namespace rules::detail;

void dump_operand(std::string& out, const Operand& o) {
  out += " " + std::to_string(static_cast<int>(o.kind)) + ":" + std::to_string(o.index);
}

void dump_segments(std::string& out, const std::vector<Segment>& segments) {
  for (const auto& s : segments) {
    out += " [" + std::to_string(static_cast<int>(s.kind)) + " " + s.text + " c" + std::to_string(s.collection) + " " + s.field;
    dump_segments(out, s.args);
    out += "]";
  }
}

void dump_template(std::string& out, const Template& t) {
  dump_segments(out, t.segments);
  out += " collections";
  for (int c : t.collections) out += " " + std::to_string(c);
  out += "\n";
}

// Every number that names a slot or a collection, and what it names.
std::string dump(const rules::RuleSet::Impl& impl) {
  std::string out = "digest " + impl.digest + "\n";
  for (const auto& s : impl.slots.slots())
    out += "slot " + s.name + " c" + std::to_string(s.collection) + " " + s.field + " t" + std::to_string(static_cast<int>(s.type)) + "\n";
  for (const auto& c : impl.slots.collections()) out += "collection " + c + "\n";
  for (const auto& rule : impl.rules) {
    out += "rule " + rule.summary.id + " kind " + std::to_string(static_cast<int>(rule.kind)) + " root " + std::to_string(rule.when.root) +
           " c" + std::to_string(rule.when.collection) + " slots";
    for (int s : rule.when.slots) out += " " + std::to_string(s);
    out += "\n";
    for (const auto& n : rule.when.nodes) {
      out += "  node " + std::to_string(static_cast<int>(n.kind));
      dump_operand(out, n.lhs);
      dump_operand(out, n.rhs);
      out += "\n";
    }
    for (const auto& a : rule.when.arithmetic) {
      out += "  arithmetic";
      dump_operand(out, a.lhs);
      dump_operand(out, a.rhs);
      out += "\n";
    }
    out += "  message";
    dump_template(out, rule.message);
    for (const auto& fix : rule.fixes) {
      out += "  fix " + fix.kind;
      dump_template(out, fix.command);
    }
    for (const auto& a : rule.applies_to) out += "  applies_to " + a.key + " " + std::to_string(a.slot) + "\n";
    out += "  tests " + std::to_string(rule.tests.size()) + "\n";
  }
  for (const auto& p : impl.catalog.packages) out += "package " + p.name + " " + std::to_string(p.releases.size()) + "\n";
  out += "default te " + (impl.default_te_version ? impl.default_te_version->to_string() : "-") + "\n";
  out += "orders " + std::to_string(impl.selection.orders.size()) + "\n";
  return out;
}

std::vector<SourceFile> shipped_files() {
  std::vector<rules::Diagnostic> diagnostics;
  auto files = read_rule_files({NVTE_RULES_DIR}, diagnostics);
  EXPECT_TRUE(diagnostics.empty());
  return files;
}

TEST(DatabaseLoad, StoredDigestIsTheDigestOfTheShippedFiles) {
  auto files = shipped_files();
  ASSERT_GT(files.size(), 40u);
  EXPECT_EQ(preparsed_digest(), database_digest(files));
  std::vector<rules::Diagnostic> diagnostics;
  EXPECT_EQ(load_impl(files, diagnostics)->digest, database_digest(files));
  // One byte changed: the digest is computed, and differs.
  files.back().text += "\n";
  EXPECT_EQ(load_impl(files, diagnostics)->digest, database_digest(files));
  EXPECT_NE(database_digest(files), preparsed_digest());
}

TEST(DatabaseLoad, MergedFilesAreTheDatabaseOfCompilingInTurn) {
  for (auto tests : {rules::TestCases::compile, rules::TestCases::count}) {
    auto files = shipped_files();
    std::vector<rules::Diagnostic> merged_diagnostics, in_order_diagnostics;
    auto merged = load_impl(files, merged_diagnostics, tests);
    auto in_order = load_impl_in_order(files, in_order_diagnostics, tests);
    EXPECT_TRUE(merged_diagnostics.empty());
    EXPECT_TRUE(in_order_diagnostics.empty());
    EXPECT_GT(merged->rules.size(), 300u);
    EXPECT_GT(merged->slots.collections().size(), 0u);
    EXPECT_EQ(dump(*merged), dump(*in_order));
  }
}

// A user's file after the shipped ones: its slots number after theirs, as before.
TEST(DatabaseLoad, UserFileMergesAfterTheShippedOnes) {
  auto files = shipped_files();
  files.emplace_back("site/site.yaml", "site.yaml",
                     "rules:\n  - id: site-check\n    title: t\n    severity: warning\n"
                     "    when: gpu.sm < 90 and cudnn.version >= 9.0.0 and count(gpu) > 1\n"
                     "    message: \"GPU {{gpu.sm}} with {{cudnn.version}}\"\n");
  std::vector<rules::Diagnostic> a, b;
  auto merged = load_impl(files, a);
  auto in_order = load_impl_in_order(files, b);
  EXPECT_TRUE(a.empty()) << (a.empty() ? "" : a.front().message);
  EXPECT_EQ(dump(*merged), dump(*in_order));
  EXPECT_NE(merged->digest, preparsed_digest());
}

// What one file says about another is said where compiling in turn says it.
TEST(DatabaseLoad, FilesThatClashSayWhatCompilingInTurnSays) {
  const std::string rule = "rules:\n  - id: same-id\n    title: t\n    severity: info\n    when: gpu.sm < 90\n    message: m\n";
  const std::string selection = "selection:\n  default_te_version: 2.1.0\n  orders:\n    - backends: [FusedAttention]\n";
  const std::string package = "packages:\n  - name: nvidia-x\n    fact: cudnn.version\n    requirement: x=={version}\n"
                              "    releases: [{version: 9.1.0, source: https://example.com}]\n";
  // The last pair does not clash: a problem inside one file.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {rule, rule}, {selection, selection}, {package, package}, {rule, "rules:\n  - id: Bad\n"}};
  for (const auto& [first, second] : cases) {
    std::vector<SourceFile> files;
    files.emplace_back("a.yaml", "a.yaml", first);
    files.emplace_back("b.yaml", "b.yaml", second);
    std::vector<rules::Diagnostic> a, b;
    load_impl(files, a);
    load_impl_in_order(files, b);
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(rules::render(a), rules::render(b));
  }
}

} // namespace
