// Unit tests of src/rules: lexer, parser, type checker, evaluation, diagnostics positions,
// templates, the loader's schema checks and explain's selection mechanics, on the engine's own
// test rules (tests/rules-testdata), never on the shipped database.
#include "rules/condition.hpp"
#include "rules/explain_cases.hpp"
#include "rules/loader_internal.hpp"
#include "rules/rules.hpp"
#include "rules/templates.hpp"
#include "util/file.hpp"
#include "util/input_guard.hpp"
#include "util/subprocess.hpp"

#include <gtest/gtest.h>

#include <ctime>
#include <cstdio>
#include <random>
#include <map>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using rules::detail::compile_condition;
using rules::detail::SlotTable;
using rules::detail::SourceError;
using rules::detail::TokenKind;

const std::filesystem::path k_testdata = NVTE_RULES_TESTDATA;

model::Facts facts_of(std::initializer_list<std::string_view> assignments) {
  model::Facts facts;
  for (auto a : assignments) {
    auto r = facts.apply_override(a);
    EXPECT_TRUE(r.ok()) << a << ": " << (r.ok() ? "" : r.error().message);
  }
  facts.derive();
  return facts;
}

model::Workload workload_of(std::initializer_list<std::pair<std::string_view, std::string_view>> keys) {
  model::Workload w;
  w.name = "test";
  for (auto [k, v] : keys) EXPECT_TRUE(w.set_text(k, v).ok()) << k;
  EXPECT_TRUE(w.complete().ok());
  return w;
}

// A one-rule database around a condition.
std::string rule_yaml(std::string_view when, std::string_view extra = "") {
  return "rules:\n  - id: r\n    title: t\n    severity: warning\n    when: '" + std::string(when) +
         "'\n    message: m\n" + std::string(extra);
}

std::vector<SourceError> errors_of(std::string_view condition) {
  SlotTable table;
  std::vector<SourceError> errors;
  auto compiled = compile_condition(condition, table, errors);
  EXPECT_EQ(compiled.has_value(), errors.empty()) << condition;
  return errors;
}

bool fires(std::string_view when, const model::Facts& facts) {
  auto loaded = rules::RuleSet::load_text(rule_yaml(when), "t.yaml");
  EXPECT_TRUE(loaded.rules) << rules::render(loaded.diagnostics);
  if (!loaded.rules) return false;
  return !rules::evaluate_node(*loaded.rules, facts).empty();
}

// ---- lexer ----

TEST(RulesLexer, Tokens) {
  auto tokens = rules::detail::tokenize("gpu[0].sm >= 90 and cudnn.version in \">=9.1,<9.3\" or x != -1");
  std::vector<TokenKind> kinds;
  for (const auto& t : tokens) kinds.push_back(t.kind);
  EXPECT_EQ(kinds, (std::vector<TokenKind>{TokenKind::name, TokenKind::op, TokenKind::number, TokenKind::name, TokenKind::name,
                                           TokenKind::name, TokenKind::string, TokenKind::name, TokenKind::name, TokenKind::op,
                                           TokenKind::number, TokenKind::end}));
  EXPECT_EQ(tokens[0].text, "gpu[0].sm");
  EXPECT_EQ(tokens[6].text, ">=9.1,<9.3");
  EXPECT_EQ(tokens[10].text, "-1");
  EXPECT_EQ(tokens[3].offset, 16u);
}

TEST(RulesLexer, Errors) {
  auto tokens = rules::detail::tokenize("a && b");
  ASSERT_EQ(tokens.back().kind, TokenKind::error);
  EXPECT_NE(tokens.back().text.find("'and'"), std::string::npos);
  EXPECT_EQ(tokens.back().offset, 2u);
  EXPECT_EQ(rules::detail::tokenize("\"open").back().kind, TokenKind::error);
  EXPECT_EQ(rules::detail::tokenize("gpu[x].sm").back().kind, TokenKind::error);
  EXPECT_EQ(rules::detail::tokenize("a = 1").back().kind, TokenKind::error);
}

// ---- parser and type checker ----

TEST(RulesCheck, ValidConditions) {
  for (std::string_view ok :
       {"cudnn.version < 9.3", "gpu.sm >= 90", "gpu.compute_capability >= 9.0", "9.3 > cudnn.version",
        "te.version in \">=1.10,<1.12\"", "te.version not in \">=1.10\"", "workload.cp_comm_type in [\"all_gather\", \"a2a\"]",
        "not has(te.version) or te.version < 2.1", "count(cudnn.copies) > 1", "env_set(NVTE_FLASH_ATTN)",
        "env_is(NVTE_FLASH_ATTN, \"0\")", "workload.context_parallel and (workload.cp_size > 2 or false)",
        "workload.attention_dropout > 0", "workload.window_size_left == -1", "gpu[1].sm == gpu[0].sm",
        "explain.selected == \"FusedAttention\"", "cudnn.copies.version != cudnn.version", "gpu.mig_enabled",
        "package.flash-attn.version >= 2.0", "not not true"}) {
    EXPECT_TRUE(errors_of(ok).empty()) << ok << ": " << (errors_of(ok).empty() ? "" : errors_of(ok)[0].message);
  }
}

struct BadCase {
  std::string_view condition;
  std::size_t offset;
  std::string_view message_part;
  std::string_view hint_part;
};

TEST(RulesCheck, Arithmetic) {
  for (std::string_view ok :
       {"workload.head_dim_qk % 8 == 0", "workload.max_seqlen_q % 64 != 0 or workload.max_seqlen_kv % 64 != 0",
        "max(workload.head_dim_qk, workload.head_dim_v) > 256", "min(workload.head_dim_qk, 128) == 128",
        "workload.head_dim_qk + 7 <= 256", "workload.num_heads * workload.head_dim_qk * workload.max_seqlen_q > 2147483647",
        "gpu.sm % 10 == 0", "2 * workload.head_dim_v == workload.head_dim_qk"}) {
    EXPECT_TRUE(errors_of(ok).empty()) << ok << ": " << (errors_of(ok).empty() ? "" : errors_of(ok)[0].message);
  }
  const BadCase cases[] = {
      {"workload.head_dim_qk % 8", 0, "not a condition", "% 8 == 0"},
      {"cudnn.version % 2 == 0", 0, "arithmetic is on integers", ""},
      {"workload.attention_dropout * 2 > 1", 0, "arithmetic is on integers", ""},
      {"workload.head_dim_qk % 8.5 == 0", 23, "not an integer", ""},
      {"8 % 2 == 0", 0, "two literals", ""},
      {"max(workload.head_dim_qk) > 1", 0, "takes two integers", ""},
      {"max(workload.head_dim_qk, 2)", 0, "not a condition", ""},
  };
  for (const auto& c : cases) {
    auto errors = errors_of(c.condition);
    ASSERT_FALSE(errors.empty()) << c.condition;
    EXPECT_EQ(errors[0].offset, c.offset) << c.condition << ": " << errors[0].message;
    EXPECT_NE(errors[0].message.find(c.message_part), std::string::npos) << c.condition << ": " << errors[0].message;
    EXPECT_NE(errors[0].hint.find(c.hint_part), std::string::npos) << c.condition << ": " << errors[0].hint;
  }
}

TEST(RulesEvaluate, Arithmetic) {
  auto node = facts_of({"gpu.sm=90", "gpu.count=1"});
  EXPECT_TRUE(fires("gpu.sm % 10 == 0", node));
  EXPECT_FALSE(fires("gpu.sm % 7 == 0", node));
  EXPECT_TRUE(fires("gpu.sm + 10 == 100", node));
  EXPECT_TRUE(fires("gpu.sm * 2 + 1 == 181", node));  // * before +
  EXPECT_TRUE(fires("1 + gpu.sm * 2 == 181", node));
  EXPECT_TRUE(fires("max(gpu.sm, 100) == 100 and min(gpu.sm, 100) == 90", node));
  EXPECT_FALSE(fires("gpu.sm % 0 == 0", node));           // % 0 is absent: the comparison is false
  EXPECT_FALSE(fires("gpu.sm % 0 != 0", node));
  EXPECT_FALSE(fires("gpu[3].sm % 10 == 0", node));       // an absent fact makes the value absent
}


TEST(RulesCheck, Errors) {
  const BadCase cases[] = {
      {"cudnn.verison < 9.3", 0, "unknown fact 'cudnn.verison'", "cudnn.version"},
      {"workload.cp_sise > 1", 0, "unknown fact", "workload.cp_size"},
      {"cudnn.version < \"9.3\"", 16, "is a version", "unquoted"},
      {"gpu.sm >= 9.0", 10, "integer", ""},
      {"gpu.name == 5", 12, "is a string", "quote"},
      {"gpu.name < \"A\"", 0, "== and != only", ""},
      {"gpu.sm > 80 and cudnn.copies.version < 9", 16, "one collection", ""},
      {"gpu.sm", 0, "not a condition", "has(gpu.sm)"},
      {"1 < 2", 0, "two literals", ""},
      {"cudnn.version <", 15, "unexpected end", ""},
      {"(cudnn.version < 9", 18, "expected ')'", ""},
      {"cudnn.version < 9 cudnn.version", 18, "after the condition", ""},
      {"gpu.name in \">=1\"", 12, "version range", ""},
      {"te.version in \"~1\"", 14, "invalid version", ""},
      {"frobnicate(gpu)", 0, "unknown function", "has, count"},
      {"count(gpu.sm) > 1", 6, "not a collection", ""},
      {"has(gpu.sm, te.version)", 0, "takes 1 argument", ""},
      {"env_is(X, 1)", 10, "expected a name or a string", ""},
      {"count(gpu)", 0, "not a condition", ""},
      {"workload.fp8 == 1", 16, "boolean", ""},
      {"gpu[0.sm > 1", 3, "index", ""},
  };
  for (const auto& c : cases) {
    auto errors = errors_of(c.condition);
    ASSERT_FALSE(errors.empty()) << c.condition;
    EXPECT_EQ(errors[0].offset, c.offset) << c.condition << ": " << errors[0].message;
    EXPECT_NE(errors[0].message.find(c.message_part), std::string::npos) << c.condition << ": " << errors[0].message;
    EXPECT_NE(errors[0].hint.find(c.hint_part), std::string::npos) << c.condition << ": " << errors[0].hint;
  }
}

TEST(RulesCheck, EveryUnknownNameIsReported) {
  auto errors = errors_of("cudnn.verison < 9 and te.verison < 2");
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[1].offset, 22u);
}

TEST(RulesCheck, BoundedDepthAndGarbage) {
  std::string deep(5000, '(');
  EXPECT_NE(errors_of(deep)[0].message.find("nested too deeply"), std::string::npos);
  EXPECT_NE(errors_of(std::string(100000, '('))[0].message.find("longer than"), std::string::npos);
  EXPECT_TRUE(errors_of(std::string(40, '(') + "true" + std::string(40, ')')).empty());
  std::string chain = "gpu.sm > 0";
  for (int i = 0; i < 500; ++i) chain += i % 2 ? " and gpu.sm > 0" : " or gpu.sm > 0";
  EXPECT_TRUE(errors_of(chain).empty());
  EXPECT_TRUE(fires(chain, facts_of({"gpu.sm=90"})));
  std::string nots;
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_FALSE(errors_of(nots + "true").empty());
  // Random token soup: must neither crash nor hang.
  const char* pieces[] = {"gpu.sm", "cudnn.version", "(", ")", "and", "or", "not", "in", "[", "]", ",", "\"x\"",
                          "9.3", "80", "==", "<", "has(", "count(", "true", "-", "\"", "'", "{", "gpu[", "]."};
  std::mt19937 rng(42);
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    for (int n = static_cast<int>(rng() % 12); n >= 0; --n) text += std::string(pieces[rng() % std::size(pieces)]) + " ";
    SlotTable table;
    std::vector<SourceError> errors;
    compile_condition(text, table, errors);
    for (const auto& e : errors) EXPECT_LE(e.offset, text.size()) << text;
  }
}

// ---- evaluation ----

TEST(RulesEval, VersionsIntegersAndAbsence) {
  auto facts = facts_of({"cudnn.version=9.1.0", "gpu.sm=90", "te.version=2.3.0"});
  EXPECT_TRUE(fires("cudnn.version < 9.3", facts));
  EXPECT_FALSE(fires("cudnn.version < 9.1", facts));
  EXPECT_TRUE(fires("cudnn.version == 9.1", facts)); // 9.1 == 9.1.0
  EXPECT_TRUE(fires("gpu.sm >= 90", facts));
  EXPECT_TRUE(fires("gpu.compute_capability >= 9.0", facts));
  EXPECT_TRUE(fires("te.version in \">=2.0,<2.4\"", facts));
  EXPECT_FALSE(fires("te.version not in \">=2.0,<2.4\"", facts));
  // Absent facts make comparisons false, both ways.
  EXPECT_FALSE(fires("nccl.version < 2.0", facts));
  EXPECT_FALSE(fires("nccl.version != 2.0", facts));
  EXPECT_FALSE(fires("nccl.version not in \">=2\"", facts));
  EXPECT_TRUE(fires("not has(nccl.version)", facts));
  EXPECT_TRUE(fires("not has(nccl.version) or nccl.version < 2.0", facts));
}

TEST(RulesEval, StringsListsEnvAndCount) {
  auto facts = facts_of({"env.NVTE_FLASH_ATTN=0", "cudnn.copies[0].version=9.1.0", "cudnn.copies[1].version=8.9.7",
                         "system.os_id=ubuntu"});
  EXPECT_TRUE(fires("env_set(NVTE_FLASH_ATTN)", facts));
  EXPECT_TRUE(fires("env_is(NVTE_FLASH_ATTN, \"0\")", facts));
  EXPECT_FALSE(fires("env_is(NVTE_FLASH_ATTN, \"1\")", facts));
  EXPECT_FALSE(fires("env_set(NVTE_FUSED_ATTN)", facts));
  EXPECT_TRUE(fires("count(cudnn.copies) == 2", facts));
  EXPECT_TRUE(fires("count(gpu) == 0", facts));
  EXPECT_TRUE(fires("system.os_id in [\"ubuntu\", \"debian\"]", facts));
  EXPECT_TRUE(fires("system.os_id not in [\"rhel\"]", facts));
  EXPECT_TRUE(fires("system.os_id != \"rhel\" and (false or system.os_id == \"ubuntu\")", facts));
}

TEST(RulesEval, CollectionsGiveOneFindingPerElement) {
  auto loaded = rules::RuleSet::load({k_testdata / "engine"});
  ASSERT_TRUE(loaded.rules) << rules::render(loaded.diagnostics);
  auto facts = facts_of({"gpu[0].sm=90", "gpu[1].sm=70", "gpu[2].sm=75", "gpu[1].name=Tesla V100", "gpu[2].name=T4"});
  auto findings = rules::evaluate_node(*loaded.rules, facts);
  std::vector<std::string> messages;
  for (const auto& f : findings)
    if (f.id == "test-gpu-too-old") messages.push_back(f.message);
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0], "GPU 1 (Tesla V100) has SM 70.");
  EXPECT_EQ(messages[1], "GPU 2 (T4) has SM 75.");
  const auto& f = *std::find_if(findings.begin(), findings.end(), [](const auto& x) { return x.id == "test-gpu-too-old"; });
  EXPECT_EQ(f.evidence, (std::vector<std::pair<std::string, std::string>>{{"gpu[1].sm", "70"}}));
  EXPECT_EQ(f.severity, model::Severity::error);
  EXPECT_EQ(f.area, "gpu"); // file stem
  ASSERT_EQ(f.fixes.size(), 1u);
  EXPECT_EQ(f.fixes[0].kind, "hardware");
  EXPECT_EQ(f.references, std::vector<std::string>{"https://example.com/gpu"});
}

TEST(RulesEval, AppliesToUsesAssumedTeVersion) {
  auto loaded = rules::RuleSet::load({k_testdata / "engine"});
  ASSERT_TRUE(loaded.rules);
  auto ids = [&](const model::Facts& facts) {
    std::vector<std::string> out;
    for (const auto& f : rules::evaluate_node(*loaded.rules, facts)) out.push_back(f.id);
    return out;
  };
  auto has = [](const std::vector<std::string>& v, std::string_view id) { return std::find(v.begin(), v.end(), id) != v.end(); };
  EXPECT_TRUE(has(ids(facts_of({"cudnn.version=9.1.0"})), "test-cudnn-old"));                      // assumed TE 2.3.0
  EXPECT_FALSE(has(ids(facts_of({"cudnn.version=9.1.0", "te.version=1.13"})), "test-cudnn-old")); // out of range
  auto findings = rules::evaluate_node(*loaded.rules, facts_of({"cudnn.version=9.1.0", "cudnn.path=/usr/lib/libcudnn.so.9"}));
  auto it = std::find_if(findings.begin(), findings.end(), [](const auto& f) { return f.id == "test-cudnn-old"; });
  ASSERT_NE(it, findings.end());
  EXPECT_EQ(it->message, "cuDNN 9.1.0 (loaded from /usr/lib/libcudnn.so.9) is older than 9.3.");
  EXPECT_EQ(it->evidence, (std::vector<std::pair<std::string, std::string>>{{"cudnn.version", "9.1.0"}}));
}

// ---- diagnostics point into the YAML file ----

rules::Diagnostic first_diagnostic(const std::string& yaml) {
  auto loaded = rules::RuleSet::load_text(yaml, "rules/x.yaml");
  EXPECT_FALSE(loaded.rules);
  EXPECT_FALSE(loaded.diagnostics.empty());
  return loaded.diagnostics.empty() ? rules::Diagnostic{} : loaded.diagnostics[0];
}

TEST(RulesDiagnostics, PlainQuotedAndBlockScalars) {
  const std::string head = "rules:\n  - id: r\n    title: t\n    severity: info\n    message: m\n";
  auto plain = first_diagnostic(head + "    when: gpu.sm > 80 and cudnn.verison < 9\n");
  EXPECT_EQ(plain.line, 6);
  EXPECT_EQ(plain.column, 27);
  EXPECT_EQ(plain.length, 13);
  EXPECT_EQ(plain.hint, "did you mean cudnn.version?");

  auto quoted = first_diagnostic(head + "    when: \"gpu.sm > 80 and cudnn.verison < 9\"\n");
  EXPECT_EQ(quoted.column, 28);

  auto folded = first_diagnostic(head + "    when: >\n      gpu.sm > 80\n      and cudnn.verison < 9\n");
  EXPECT_EQ(folded.line, 8);
  EXPECT_EQ(folded.column, 11);
  EXPECT_EQ(folded.source_line, "      and cudnn.verison < 9");

  auto literal = first_diagnostic(head + "    when: |-\n      gpu.sm > 80 and\n        cudnn.version < \"9\"\n");
  EXPECT_EQ(literal.line, 8);
  EXPECT_EQ(literal.column, 25);

  auto multi_plain = first_diagnostic(head + "    when: gpu.sm > 80\n      and gpu.name < 9\n");
  EXPECT_EQ(multi_plain.line, 7);
  EXPECT_EQ(multi_plain.column, 22);

  EXPECT_EQ(plain.rendered(),
            "rules/x.yaml:6:27: error: unknown fact 'cudnn.verison'\n"
            "      when: gpu.sm > 80 and cudnn.verison < 9\n"
            "                            ^~~~~~~~~~~~~\n"
            "  hint: did you mean cudnn.version?\n");
}

TEST(RulesDiagnostics, TemplatePositions) {
  auto d = first_diagnostic(
      "rules:\n  - id: r\n    title: t\n    severity: info\n    when: true\n    message: |\n      Hello\n      GPU {{gpu.nmae}}\n");
  EXPECT_EQ(d.line, 8);
  EXPECT_EQ(d.column, 13);
  EXPECT_NE(d.hint.find("gpu.name"), std::string::npos);
  auto f = first_diagnostic(
      "rules:\n  - id: r\n    title: t\n    severity: info\n    when: true\n    message: m\n    fixes:\n"
      "      - kind: pip\n        command: \"{{pip_instal('x')}}\"\n");
  EXPECT_EQ(f.line, 9);
  EXPECT_EQ(f.column, 21);
  EXPECT_NE(f.message.find("unknown template function"), std::string::npos);
}

TEST(RulesDiagnostics, MalformedYaml) {
  auto d = first_diagnostic("rules:\n  - id: r\n    title: [unclosed\n");
  EXPECT_EQ(d.file, "rules/x.yaml");
  EXPECT_GT(d.line, 0);
  EXPECT_NE(d.message.find("malformed YAML"), std::string::npos);
}

// ---- loader schema ----

TEST(RulesLoader, SchemaErrorsAreAllReported) {
  auto loaded = rules::RuleSet::load_text(
      "rules:\n"
      "  - id: Bad_Id\n    title: t\n    severity: fatal\n    when: true\n    message: m\n    colour: red\n"
      "    applies_to: {tensorflow: \">=1\", te: \"~~\"}\n    fixes: [{kind: magic, command: x}]\n"
      "    effect: deprioritized\n    backend: flash_attn\n"
      "  - title: no id\n"
      "other: 1\n",
      "x.yaml");
  ASSERT_FALSE(loaded.rules);
  std::string all = rules::render(loaded.diagnostics);
  for (std::string_view part : {"invalid rule id 'Bad_Id'", "unknown severity 'fatal'", "unknown rule key 'colour'",
                                "unknown applies_to key 'tensorflow'", "invalid version", "unknown fix kind 'magic'",
                                "unknown backend 'flash_attn'", "rule without 'id'", "unknown top-level key 'other'"})
    EXPECT_NE(all.find(part), std::string::npos) << part << "\n" << all;
}

// `explains:` names self-test failure classes: a known one reaches the finding, an unknown one is
// an error that lists them.
TEST(RulesLoader, ExplainsNamesSelftestFailureClasses) {
  auto good = rules::RuleSet::load_text("rules:\n  - id: r\n    title: t\n    severity: warning\n    explains: [sublibrary_load, crash]\n"
                                        "    when: true\n    message: m\n",
                                        "x.yaml");
  ASSERT_TRUE(good.rules) << rules::render(good.diagnostics);
  auto summaries = good.rules->rule_summaries();
  ASSERT_EQ(summaries.size(), 1U);
  EXPECT_EQ(summaries[0].explains, (std::vector<std::string>{"sublibrary_load", "crash"}));
  auto bad = rules::RuleSet::load_text("rules:\n  - id: r\n    title: t\n    severity: warning\n    explains: [two_copies]\n"
                                       "    when: true\n    message: m\n",
                                       "x.yaml");
  ASSERT_FALSE(bad.rules);
  std::string all = rules::render(bad.diagnostics);
  EXPECT_NE(all.find("unknown self-test failure class 'two_copies'"), std::string::npos) << all;
  EXPECT_NE(all.find("sublibrary_load"), std::string::npos) << all;
}

TEST(RulesLoader, DuplicateIdsAcrossFilesNameBothPlaces) {
  auto dir = std::filesystem::temp_directory_path() / ("nvte-rules-dup-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "sub");
  std::string rule = "rules:\n  - id: same\n    title: t\n    severity: info\n    when: true\n    message: m\n";
  ASSERT_TRUE(util::write_file_atomic(dir / "a.yaml", rule).ok());
  ASSERT_TRUE(util::write_file_atomic(dir / "sub" / "b.yaml", "# comment\n" + rule).ok());
  ASSERT_TRUE(util::write_file_atomic(dir / "ignored.yml", "not: [yaml").ok());
  auto loaded = rules::RuleSet::load({dir});
  ASSERT_EQ(loaded.diagnostics.size(), 1u);
  EXPECT_EQ(loaded.diagnostics[0].file, (dir / "sub/b.yaml").string());
  EXPECT_EQ(loaded.diagnostics[0].line, 3);
  EXPECT_EQ(loaded.diagnostics[0].hint, "first defined at " + (dir / "a.yaml").string() + ":2");
  std::filesystem::remove_all(dir);
  auto missing = rules::RuleSet::load({dir});
  ASSERT_EQ(missing.diagnostics.size(), 1u);
  EXPECT_NE(missing.diagnostics[0].message.find("cannot read rules directory"), std::string::npos);
}

TEST(RulesLoader, TestCasesAreTypedLikeSet) {
  auto loaded = rules::RuleSet::load_text(rule_yaml("gpu.sm < 80", "    tests:\n      fires: [{gpu.sm: seventy}]\n"), "x.yaml");
  ASSERT_FALSE(loaded.rules);
  EXPECT_NE(loaded.diagnostics[0].message.find("not an integer"), std::string::npos);
  EXPECT_EQ(loaded.diagnostics[0].line, 8);
  auto unknown = rules::RuleSet::load_text(rule_yaml("true", "    tests:\n      quiet: [{workload.nope: 1}]\n"), "x.yaml");
  ASSERT_FALSE(unknown.rules);
  EXPECT_NE(unknown.diagnostics[0].message.find("unknown workload key"), std::string::npos);
}

TEST(RulesLoader, CountingTestCasesSkipsCompilingThem) {
  // check and explain load with TestCases::count: the cases are counted, not compiled, so a
  // case only lint would reject does not stop them; the same counts as a compiling load.
  auto full = rules::RuleSet::load({k_testdata / "engine"});
  auto counted = rules::RuleSet::load({k_testdata / "engine"}, rules::TestCases::count);
  ASSERT_TRUE(full.rules && counted.rules) << rules::render(counted.diagnostics);
  EXPECT_FALSE(full.rules->test_cases().empty());
  EXPECT_TRUE(counted.rules->test_cases().empty());
  auto a = full.rules->rule_summaries(), b = counted.rules->rule_summaries();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].fires_cases, b[i].fires_cases) << a[i].id;
    EXPECT_EQ(a[i].quiet_cases, b[i].quiet_cases) << a[i].id;
  }
  std::string bad_case = rule_yaml("gpu.sm < 80", "    tests:\n      fires: [{gpu.sm: seventy}]\n");
  auto dir = std::filesystem::temp_directory_path() / ("nvte-count-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(util::write_file_atomic(dir / "x.yaml", bad_case).ok());
  EXPECT_FALSE(rules::RuleSet::load({dir}).rules);
  auto lenient = rules::RuleSet::load({dir}, rules::TestCases::count);
  ASSERT_TRUE(lenient.rules) << rules::render(lenient.diagnostics);
  EXPECT_EQ(lenient.rules->rule_summaries().at(0).fires_cases, 1u);
  // The shape of the block is still checked.
  ASSERT_TRUE(util::write_file_atomic(dir / "x.yaml", rule_yaml("true", "    tests:\n      maybe: []\n")).ok());
  EXPECT_FALSE(rules::RuleSet::load({dir}, rules::TestCases::count).rules);
  std::filesystem::remove_all(dir);
}

TEST(RulesLoader, DigestFollowsContent) {
  auto a = rules::RuleSet::load_text(rule_yaml("true"), "x.yaml");
  auto b = rules::RuleSet::load_text(rule_yaml("true"), "x.yaml");
  auto c = rules::RuleSet::load_text(rule_yaml("false"), "x.yaml");
  ASSERT_TRUE(a.rules && b.rules && c.rules);
  EXPECT_EQ(a.rules->digest(), b.rules->digest());
  EXPECT_NE(a.rules->digest(), c.rules->digest());
  EXPECT_EQ(a.rules->digest().size(), 16u);
  auto empty = rules::RuleSet::load_text("", "empty.yaml");
  ASSERT_TRUE(empty.rules);
  EXPECT_EQ(empty.rules->size(), 0u);
}

TEST(RulesLoader, KindsAndSummaries) {
  auto loaded = rules::RuleSet::load({k_testdata / "engine"});
  ASSERT_TRUE(loaded.rules) << rules::render(loaded.diagnostics);
  EXPECT_EQ(loaded.rules->selection().default_te_version, "2.3.0");
  EXPECT_EQ(loaded.rules->selection().orders.size(), 2u);
  for (const auto& s : loaded.rules->rule_summaries()) {
    if (s.id == "test-cp-all-gather") {
      EXPECT_EQ(s.kind, "workload");
    }
    if (s.id == "test-gpu-too-old") {
      EXPECT_EQ(s.kind, "node");
    }
    if (s.id == "test-flash-hopper-preference") {
      EXPECT_EQ(s.kind, "backend");
      EXPECT_EQ(s.effect, "deprioritized");
      EXPECT_EQ(s.applies_to, (std::vector<std::pair<std::string, std::string>>{{"te", ">=1.10"}}));
    }
  }
  auto bad = rules::RuleSet::load_text(rule_yaml("explain.selected == \"none\"", "    backend: flash_attention\n"), "x.yaml");
  ASSERT_FALSE(bad.rules);
  EXPECT_NE(bad.diagnostics[0].message.find("cannot read explain"), std::string::npos);
}

TEST(RulesLint, ReportsEveryProblem) {
  auto dir = std::filesystem::temp_directory_path() / ("nvte-rules-lint-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(util::write_file_atomic(dir / "a.yaml",
                                      "rules:\n"
                                      "  - id: no-refs\n    title: t\n    severity: info\n    when: gpu.sm < 80\n    message: m\n"
                                      "  - id: wrong-tests\n    title: t\n    severity: info\n    when: gpu.sm < 80\n    message: m\n"
                                      "    references: [TE source]\n"
                                      "    tests:\n      fires: [{gpu.sm: 90}]\n      quiet: [{gpu.sm: 70}]\n")
                  .ok());
  ASSERT_TRUE(util::write_file_atomic(dir / "b.yaml",
                                      "rules:\n  - id: broken\n    title: t\n    severity: info\n    when: gpu.smm < 80\n    message: m\n")
                  .ok());
  auto problems = rules::lint({dir});
  std::string all = rules::render(problems);
  EXPECT_NE(all.find("b.yaml:5:11: error: unknown fact 'gpu.smm'"), std::string::npos) << all;
  EXPECT_NE(all.find("no-refs has no references"), std::string::npos) << all;
  EXPECT_NE(all.find("no-refs has no 'fires' test case"), std::string::npos) << all;
  EXPECT_NE(all.find("no-refs has no 'quiet' test case"), std::string::npos) << all;
  EXPECT_NE(all.find("'TE source' of rule wrong-tests is not a URL"), std::string::npos) << all;
  EXPECT_NE(all.find("a.yaml:14:15: error: rule wrong-tests did not fire on its 'fires' case #1"), std::string::npos) << all;
  EXPECT_NE(all.find("wrong-tests fired on its 'quiet' case #1"), std::string::npos) << all;
  EXPECT_EQ(problems.size(), 7u) << all;
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(rules::lint({k_testdata / "engine"}).empty()) << rules::render(rules::lint({k_testdata / "engine"}));
}

// ---- templates ----

class MapScope final : public rules::detail::Scope {
public:
  explicit MapScope(model::Facts facts) : m_facts(std::move(facts)) {}
  const model::Value* get(std::string_view name) const override { return m_facts.get(name); }
  std::size_t count(std::string_view collection) const override { return m_facts.count(collection); }

private:
  model::Facts m_facts;
};

std::string render_command(std::string_view text, const model::Facts& facts) {
  SlotTable table;
  std::vector<SourceError> errors;
  auto t = rules::detail::compile_template(text, table, errors);
  EXPECT_TRUE(t.has_value()) << text << ": " << (errors.empty() ? "" : errors[0].message);
  if (!t) return {};
  MapScope scope(facts);
  return rules::detail::render_template(*t, table, scope, {}, rules::detail::RenderMode::command);
}

TEST(RulesTemplates, PipInstallFollowsCudaMajor) {
  EXPECT_EQ(render_command("{{pip_install('nvidia-cudnn', '9.3.0.75')}}", facts_of({})),
            "python3 -m pip install nvidia-cudnn-cu12==9.3.0.75");
  EXPECT_EQ(render_command("{{pip_install('nvidia-cudnn', '9.3.0.75')}}", facts_of({"torch.cuda_version=13.0", "cuda.runtime_version=12.8"})),
            "python3 -m pip install nvidia-cudnn-cu13==9.3.0.75");
  EXPECT_EQ(render_command("{{pip_install('nvidia-nccl', '2.21.5')}}", facts_of({"driver.cuda_version=11.8"})),
            "python3 -m pip install nvidia-nccl-cu11==2.21.5");
  EXPECT_EQ(render_command("{{pip_install('nvidia-cuda-nvrtc', '13.0.48')}}", facts_of({"cuda.runtime_version=13.0"})),
            "python3 -m pip install nvidia-cuda-nvrtc==13.0.48");
  EXPECT_EQ(render_command("{{pip_install('nvidia-cuda-nvrtc')}}", facts_of({"cuda.runtime_version=12.4"})),
            "python3 -m pip install nvidia-cuda-nvrtc-cu12");
  EXPECT_EQ(render_command("{{pip_install('flash-attn', cudnn.version)}}", facts_of({"cudnn.version=2.6.3"})),
            "python3 -m pip install flash-attn==2.6.3");
}

TEST(RulesTemplates, NodeValuesAreShellQuoted) {
  const std::string evil = "/opt/my venv/it's $(rm -rf ~)/bin/python";
  auto facts = facts_of({"python.executable=" + evil, "python.env_kind=venv", "python.site_packages=/opt/my venv/$(x)/site-packages",
                         "te.cudnn.path=/usr/local/cuda/lib64/libcudnn.so.9", "cudnn.path=/a b/`id`"});
  EXPECT_EQ(render_command("{{python}}", facts), "'/opt/my venv/it'\\''s $(rm -rf ~)/bin/python'");
  EXPECT_EQ(render_command("{{pip_install('nvidia-cudnn', '9.3.0.75')}}", facts),
            "'/opt/my venv/it'\\''s $(rm -rf ~)/bin/python' -m pip install nvidia-cudnn-cu12==9.3.0.75");
  EXPECT_EQ(render_command("ls {{cudnn.path}}", facts), "ls '/a b/`id`'");
  EXPECT_EQ(render_command("{{cudnn_path_fix}}", facts), "export CUDNN_PATH='/opt/my venv/$(x)/site-packages/nvidia/cudnn'");
  // The rendered command really is harmless: a shell sees one word.
  std::string command = "printf '%s\\n' " + render_command("{{python}}", facts);
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buffer[256] = {};
  std::string out;
  while (std::fgets(buffer, sizeof buffer, pipe)) out += buffer;
  ::pclose(pipe);
  EXPECT_EQ(out, evil + "\n");
}

TEST(RulesTemplates, PythonIsPython3OnPath) {
  EXPECT_EQ(render_command("{{python}}", facts_of({"python.executable=/usr/bin/python3", "python.env_kind=system", "env.PATH=/usr/local/bin:/usr/bin"})), "python3");
  EXPECT_EQ(render_command("{{python}}", facts_of({"python.executable=/usr/bin/python3", "python.env_kind=system", "env.PATH=/opt/bin"})), "/usr/bin/python3");
  EXPECT_EQ(render_command("{{python}}", facts_of({"python.executable=/venv/bin/python3", "python.env_kind=venv", "env.PATH=/venv/bin"})), "/venv/bin/python3");
}

TEST(RulesTemplates, CudnnPathFix) {
  // The wheel already wins: nothing to do (and the helper-only fix line disappears).
  EXPECT_EQ(render_command("{{cudnn_path_fix}}", facts_of({"python.site_packages=/v/lib/site-packages",
                                                            "te.cudnn.path=/v/lib/site-packages/nvidia/cudnn/lib/libcudnn.so.9"})), "");
  // A system copy from the loader's cache loses to the wheel anyway.
  EXPECT_EQ(render_command("{{cudnn_path_fix}}", facts_of({"python.site_packages=/v/sp", "te.cudnn.path=/usr/lib/x86_64-linux-gnu/libcudnn.so.9"})), "");
  // CUDA_HOME's copy and CUDNN_HOME are searched before site-packages.
  EXPECT_EQ(render_command("{{cudnn_path_fix}}", facts_of({"python.site_packages=/v/sp", "te.cudnn.path=/usr/local/cuda/lib64/libcudnn.so.9"})),
            "export CUDNN_PATH=/v/sp/nvidia/cudnn");
  EXPECT_EQ(render_command("a && {{cudnn_path_fix}}", facts_of({"python.site_packages=/v/sp", "env.CUDNN_HOME=/opt/cudnn"})),
            "a && unset CUDNN_HOME && export CUDNN_PATH=/v/sp/nvidia/cudnn");
  EXPECT_EQ(render_command("a && {{cudnn_path_fix}}", facts_of({"python.site_packages=/v/sp"})), "a");
  // A whole collection in a command is one word per value (pip install of several requirements).
  EXPECT_EQ(render_command("{{quote(gpu[0].name)}} {{gpu.name}}", facts_of({"gpu[0].name=NVIDIA H100", "gpu[1].name=NVIDIA A100"})),
            "'NVIDIA H100' 'NVIDIA H100' 'NVIDIA A100'");
  EXPECT_EQ(render_command("pip install {{te.requirements.missing.requirement}}",
                           facts_of({"te.requirements.missing[0].requirement=pydantic", "te.requirements.missing[1].requirement=importlib-metadata>=1.0"})),
            "pip install pydantic 'importlib-metadata>=1.0'");
  // TE 2.11+ dlopens libcudnn.so before the wheels: a system copy it finds that way wins over
  // the wheel (the reference node: TE 2.15 on the system 9.14), so CUDNN_PATH is the step.
  const std::string system = "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0";
  std::vector<std::string> node = {"python.site_packages=/v/sp", "te.cudnn.path=" + system, "cudnn.copies[0].path=" + system,
                                   "cudnn.copies[0].source=system"};
  auto with = [&](const std::string& te) {
    model::Facts f;
    for (const auto& a : node) EXPECT_TRUE(f.apply_override(a).ok()) << a;
    EXPECT_TRUE(f.apply_override("te.version=" + te).ok());
    f.derive();
    return f;
  };
  EXPECT_EQ(render_command("{{cudnn_path_fix}}", with("2.15.0")), "export CUDNN_PATH=/v/sp/nvidia/cudnn");
  EXPECT_EQ(render_command("{{cudnn_path_fix}}", with("2.10.0")), ""); // the wheel comes before ldconfig there
}

TEST(RulesTemplates, Errors) {
  for (std::string_view bad : {"{{nope.fact}}", "{{frob()}}", "{{pip_install()}}", "{{quote('x')}}", "{{gpu.sm", "{{ }}", "{{a b}}"}) {
    SlotTable table;
    std::vector<SourceError> errors;
    EXPECT_FALSE(rules::detail::compile_template(bad, table, errors).has_value()) << bad;
    EXPECT_FALSE(errors.empty()) << bad;
  }
}

// ---- explain ----

TEST(RulesExplain, SelectionMechanics) {
  auto loaded = rules::RuleSet::load({k_testdata / "engine"});
  ASSERT_TRUE(loaded.rules) << rules::render(loaded.diagnostics);
  std::vector<rules::Diagnostic> diagnostics;
  auto cases = rules::load_explain_cases(k_testdata / "explain" / "engine.yaml", diagnostics);
  ASSERT_TRUE(diagnostics.empty()) << rules::render(diagnostics);
  ASSERT_EQ(cases.size(), 3u);
  for (const auto& c : cases) {
    auto failure = rules::check_explain_case(*loaded.rules, c);
    EXPECT_FALSE(failure) << *failure;
  }
  // A wrong expectation is reported, not ignored.
  auto wrong = cases[0];
  wrong.selected = std::optional<std::string>("FlashAttention");
  wrong.backends["unfused_attention"].reasons = {"no-such-rule"};
  auto failure = rules::check_explain_case(*loaded.rules, wrong);
  ASSERT_TRUE(failure);
  EXPECT_NE(failure->find("selected FusedAttention, expected FlashAttention"), std::string::npos) << *failure;
  EXPECT_NE(failure->find("no reason from rule no-such-rule"), std::string::npos) << *failure;
}

// `while_in`: a filter that TE nests inside `if use_flash_attention_2 and ...` runs only while that
// sub-backend is still in, at its place in the order (file order), not when a filter before it
// has taken it out; a filter after it does not matter.
TEST(RulesExplain, WhileInSeesOnlyTheFiltersBeforeIt) {
  std::string yaml =
      "selection:\n  orders:\n    - te: \">=1.0\"\n      backends: [FlashAttention, FusedAttention, UnfusedDotProductAttention]\n"
      "      fused_sub_backends: {default: [F16_arbitrary_seqlen]}\n"
      "      flash_sub_backends: [FlashAttention3, FlashAttention2]\n"
      "rules:\n"
      "  - id: fa2-off-before\n    title: t\n    severity: info\n    backend: flash_attention.FlashAttention2\n"
      "    when: workload.head_dim_qk == 96\n    message: m\n"
      "  - id: nested-in-fa2\n    title: t\n    severity: info\n    backend: flash_attention\n"
      "    while_in: flash_attention.FlashAttention2\n    when: workload.max_seqlen_q != workload.max_seqlen_kv\n    message: m\n"
      "  - id: fa2-off-after\n    title: t\n    severity: info\n    backend: flash_attention.FlashAttention2\n"
      "    when: workload.head_dim_qk == 80\n    message: m\n";
  auto loaded = rules::RuleSet::load_text(yaml, "x.yaml");
  ASSERT_TRUE(loaded.rules) << rules::render(loaded.diagnostics);
  auto nested = [&](const model::Workload& w) {
    auto ex = rules::explain(*loaded.rules, facts_of({"te.version=2.18.0"}), w);
    for (const auto& r : ex.backends["flash_attention"].reasons)
      if (r.rule == "nested-in-fa2") return true;
    return false;
  };
  EXPECT_TRUE(nested(workload_of({{"max_seqlen_q", "128"}, {"max_seqlen_kv", "256"}})));
  EXPECT_FALSE(nested(workload_of({{"max_seqlen_q", "128"}, {"max_seqlen_kv", "256"}, {"head_dim_qk", "96"}})))
      << "flash-attn 2 out before";
  EXPECT_TRUE(nested(workload_of({{"max_seqlen_q", "128"}, {"max_seqlen_kv", "256"}, {"head_dim_qk", "80"}}))) << "out only after";

  auto bad = rules::RuleSet::load_text("rules:\n  - id: r\n    title: t\n    severity: info\n    when: true\n    message: m\n"
                                       "    while_in: flash_attention.FlashAttention9\n"
                                       "  - id: s\n    title: t\n    severity: info\n    when: true\n    message: m\n"
                                       "    while_in: fused_attention\n",
                                       "x.yaml");
  ASSERT_FALSE(bad.rules);
  std::string all = rules::render(bad.diagnostics);
  EXPECT_NE(all.find("unknown backend 'flash_attention.FlashAttention9'"), std::string::npos) << all;
  EXPECT_NE(all.find("'while_in' only applies to rules with 'backend:'"), std::string::npos) << all;
}

TEST(RulesExplain, AssumedTeAndOrderByVersion) {
  auto loaded = rules::RuleSet::load({k_testdata / "engine"});
  ASSERT_TRUE(loaded.rules);
  auto ex = rules::explain(*loaded.rules, facts_of({"gpu.sm=80", "cudnn.version=9.1"}), workload_of({}));
  EXPECT_TRUE(ex.te_version_assumed);
  EXPECT_EQ(ex.te_version, "2.3.0");
  EXPECT_EQ(ex.selected, "FlashAttention");
  EXPECT_EQ(ex.backends["fused_attention"].sub_backend, "F16_arbitrary_seqlen");
  // TE 1.9 prefers FusedAttention and tries max512 first.
  auto old = rules::explain(*loaded.rules, facts_of({"gpu.sm=80", "cudnn.version=9.1", "te.version=1.9"}), workload_of({}));
  EXPECT_FALSE(old.te_version_assumed);
  EXPECT_EQ(old.selected, "FusedAttention");
  EXPECT_EQ(old.backends["fused_attention"].sub_backend, "F16_max512_seqlen");
  // The deprioritizing rule only applies when FlashAttention would be selected.
  auto hopper = rules::explain(*loaded.rules, facts_of({"gpu.sm=90", "cudnn.version=9.1", "te.version=1.9"}), workload_of({{"max_seqlen_q", "1024"}}));
  EXPECT_EQ(hopper.selected, "FusedAttention");
  EXPECT_TRUE(hopper.backends["flash_attention"].available);
  EXPECT_TRUE(hopper.backends["flash_attention"].reasons.empty());
  // ... and only when the next backend of the order takes the workload.
  auto no_fused = rules::explain(*loaded.rules, facts_of({"gpu.sm=90", "cudnn.version=8.6"}), workload_of({{"max_seqlen_q", "1024"}}));
  EXPECT_FALSE(no_fused.backends["fused_attention"].available);
  EXPECT_EQ(no_fused.selected, "FlashAttention");
  EXPECT_TRUE(no_fused.backends["flash_attention"].reasons.empty());
  // Findings name their workload; reasons carry rendered messages.
  auto cp = rules::explain(*loaded.rules, facts_of({"gpu.sm=90", "cudnn.version=9.1"}),
                           workload_of({{"max_seqlen_q", "1024"}, {"cp_size", "2"}, {"cp_comm_type", "all_gather"}}));
  ASSERT_EQ(cp.findings.size(), 1u);
  EXPECT_EQ(cp.findings[0].workload, "test");
  EXPECT_EQ(cp.findings[0].message, "cuDNN 9.1 cannot run all_gather context parallelism (F16_arbitrary_seqlen).");
  EXPECT_EQ(cp.backends["flash_attention"].reasons.at(0).message, "FlashAttention disabled to give FusedAttention preference on Hopper.");
}

TEST(RulesExplain, CaseFileErrors) {
  auto file = std::filesystem::temp_directory_path() / ("nvte-explain-" + std::to_string(::getpid()) + ".yaml");
  ASSERT_TRUE(util::write_file_atomic(file,
                                      "- name: a\n  facts: {gpu.smm: 90}\n  expect: {selected: FusedAttention}\n"
                                      "- name: b\n  workload: {cp_size: two}\n"
                                      "- name: c\n  expect: {backends: {flash: {available: false}}, colour: red}\n"
                                      "- name: d\n- name: d\n")
                  .ok());
  std::vector<rules::Diagnostic> diagnostics;
  auto cases = rules::load_explain_cases(file, diagnostics);
  std::filesystem::remove(file);
  std::string all = rules::render(diagnostics);
  EXPECT_NE(all.find(":2:11: error: --set: unknown fact 'gpu.smm'"), std::string::npos) << all;
  EXPECT_NE(all.find(":5:14: error: workload key cp_size"), std::string::npos) << all;
  EXPECT_NE(all.find("unknown backend 'flash'"), std::string::npos) << all;
  EXPECT_NE(all.find("unknown expect key 'colour'"), std::string::npos) << all;
  EXPECT_NE(all.find(":9:3: error: a second case named 'd'"), std::string::npos) << all;
  EXPECT_EQ(cases.size(), 2u); // the two d's
}

TEST(RulesExplain, PhasesStayApart) {
  auto loaded = rules::RuleSet::load({k_testdata / "engine"});
  ASSERT_TRUE(loaded.rules);
  auto facts = facts_of({"gpu.sm=70", "cudnn.version=9.1", "gpu.name=V100"});
  for (const auto& f : rules::evaluate_node(*loaded.rules, facts)) {
    EXPECT_TRUE(f.id == "test-gpu-too-old" || f.id == "test-cudnn-old") << f.id;
    EXPECT_TRUE(f.workload.empty());
  }
  auto ex = rules::explain(*loaded.rules, facts, workload_of({}));
  for (const auto& f : ex.findings) EXPECT_EQ(f.id, "test-cp-all-gather");
  EXPECT_EQ(ex.backends["flash_attention"].reasons.at(0).rule, "test-flash-needs-ampere");
  EXPECT_EQ(ex.backends["flash_attention"].reasons.at(0).message, "FlashAttention needs SM 8.0 or newer; GPU 0 is SM 70.");
}

TEST(RulesExplain, RuleTestCasesOfTheTestData) {
  auto loaded = rules::RuleSet::load({k_testdata / "engine"});
  ASSERT_TRUE(loaded.rules);
  auto cases = loaded.rules->test_cases();
  EXPECT_GE(cases.size(), 20u);
  for (const auto& c : cases) {
    auto failure = rules::run_test_case(*loaded.rules, c);
    EXPECT_FALSE(failure) << *failure;
  }
}

// ---- speed (reported, not asserted: see ARCHITECTURE.md "How it is tested") ----

// Explains per second over ~300 rules: once with a realistic mix (about one rule in ten fires),
// once with rules that mostly fire (every finding rendered with evidence and fixes).
double explain_rate(const std::vector<std::string_view>& conditions, std::size_t* findings_per_explain) {
  std::string yaml = "selection:\n  default_te_version: \"2.3.0\"\nrules:\n";
  const char* backends[] = {"flash_attention", "fused_attention.F16_arbitrary_seqlen", "fused_attention.F16_max512_seqlen",
                            "unfused_attention", "", "", ""};
  for (std::size_t i = 0; i < 300; ++i) {
    yaml += "  - id: r" + std::to_string(i) + "\n    title: t\n    severity: info\n    when: '" +
            std::string(conditions[i % conditions.size()]) + "'\n    message: cuDNN {{cudnn.version}} on {{gpu[0].name}}\n" +
            "    fixes: [{kind: pip, command: \"{{pip_install('nvidia-cudnn', '9.3.0.75')}}\"}]\n";
    if (*backends[(i / conditions.size()) % 7]) yaml += std::string("    backend: ") + backends[(i / conditions.size()) % 7] + "\n";
  }
  auto loaded = rules::RuleSet::load_text(yaml, "bench.yaml");
  EXPECT_TRUE(loaded.rules) << rules::render(loaded.diagnostics);
  if (!loaded.rules) return 0;
  auto facts = facts_of({"gpu[0].sm=90", "gpu[1].sm=90", "gpu.name=NVIDIA H100 80GB HBM3", "cudnn.version=9.1.0",
                         "te.version=2.0.0", "flash_attn.version=2.6.3", "cudnn.path=/usr/lib/libcudnn.so.9",
                         "driver.version=570.86", "torch.version=2.5.1", "torch.cuda_version=12.4"});
  for (int i = 0; i < 100; ++i) facts.set("env.VAR" + std::to_string(i), "x");
  auto workload = workload_of({{"max_seqlen_q", "4096"}, {"cp_size", "2"}, {"cp_comm_type", "a2a"}, {"attn_mask_type", "padding_causal"}});
  std::size_t n = 0;
  std::size_t found = 0;
  // CPU time of this thread: the machine may be shared, and waiting is not the engine's cost.
  auto cpu_seconds = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  };
  double start = cpu_seconds();
  auto elapsed = [&] { return cpu_seconds() - start; };
  while (elapsed() < 1.0) {
    auto ex = rules::explain(*loaded.rules, facts, workload);
    found += ex.findings.size();
    for (const auto& [key, verdict] : ex.backends) found += verdict.reasons.size();
    ++n;
  }
  *findings_per_explain = found / n;
  return static_cast<double>(n) / elapsed();
}

TEST(RulesBench, ExplainRateWith300Rules) {
  std::size_t typical_hits = 0;
  double typical = explain_rate({"gpu.sm < 80 and workload.qkv_dtype == \"fp8\"",
                                 "cudnn.version < 9.0 and workload.context_parallel and workload.cp_comm_type in [\"all_gather\", \"a2a\"]",
                                 "te.version in \">=1.10,<1.12\" and workload.max_seqlen_q > 512",
                                 "workload.head_dim_qk > 256 and gpu[0].sm != 90",
                                 "not has(flash_attn.version) or flash_attn.version < 2.1",
                                 "workload.attn_mask_type == \"padding_causal\" and cudnn.version in \">=9.0,<9.2\"",
                                 "env_is(NVTE_FLASH_ATTN, \"0\")",
                                 "count(cudnn.copies) > 1 and workload.is_training",
                                 "workload.deterministic and cudnn.version < 9.8",
                                 "driver.version < 535.0 or torch.version < 2.1"},
                                &typical_hits);
  std::size_t heavy_hits = 0;
  double heavy = explain_rate({"gpu.sm >= 80 and workload.qkv_dtype == \"bf16\"", "cudnn.version < 9.3 and workload.context_parallel",
                               "te.version in \">=1.10,<2.1\" and workload.max_seqlen_q > 512"},
                              &heavy_hits);
  std::printf("explain: %.0f per CPU second with 300 rules, %zu firing; %.0f per second with %zu firing\n", typical, typical_hits,
              heavy, heavy_hits);
  RecordProperty("explains_per_second", static_cast<int>(typical));
  EXPECT_GT(typical_hits, 0u);
  EXPECT_GT(heavy_hits, typical_hits);
}

} // namespace

// Audit 2026-11-25 item 14: an unreadable rules subdirectory was skipped in silence (CRITICAL
// became WARNING). As another user (root reads through any mode) it is now a load error naming
// the directory and the permission.
TEST(RulesLoad, UnreadableSubdirectoryIsAnError) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to load as another user";
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("nvte-rules-denied-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "attention");
  ASSERT_TRUE(util::write_file_atomic(dir / "attention" / "a.yaml", "rules: []\n").ok());
  ASSERT_TRUE(util::write_file_atomic(dir / "b.yaml", "rules: []\n").ok());
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(dir / "attention", fs::perms::none);
  auto outcome = util::run_function([&](int result_fd) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) return 2;
    auto loaded = rules::RuleSet::load({dir});
    std::string text;
    for (const auto& d : loaded.diagnostics) text += d.rendered();
    util::write_all(result_fd, text);
    return loaded.rules ? 1 : 0;
  }, std::chrono::seconds(30));
  fs::permissions(dir / "attention", fs::perms::owner_all);
  fs::remove_all(dir);
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(outcome->exit_code.value_or(-1), 0) << "the load succeeded without the directory: " << outcome->out;
  EXPECT_NE(outcome->out.find((dir / "attention").string() + ": error: cannot read rules directory"), std::string::npos) << outcome->out;
  EXPECT_NE(outcome->out.find("Permission denied"), std::string::npos) << outcome->out;
}

// Audit item 13: nothing loaded was OK.
TEST(RulesLoad, NoRulesIsAnError) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("nvte-rules-none-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto empty = rules::RuleSet::load({dir});
  EXPECT_FALSE(empty.rules);
  ASSERT_EQ(empty.diagnostics.size(), 1u);
  EXPECT_NE(empty.diagnostics[0].message.find("no rules loaded"), std::string::npos);
  ASSERT_TRUE(util::write_file_atomic(dir / "a.yaml", "rules: []\n").ok());
  EXPECT_FALSE(rules::RuleSet::load({dir}).rules);
  EXPECT_FALSE(rules::lint({dir}).empty());
  fs::remove_all(dir);
}

// The tree caps of util/input_guard.hpp hold for a rules tree (one shared layer): past the
// walk-depth, rule-files or rules-size cap the load is one diagnostic naming the cap, its value
// and the directory, and no rules; at a cap the tree loads.
TEST(RulesLoad, TreeCapsAreErrorsNamingThem) {
  namespace fs = std::filesystem;
  fs::path base = fs::temp_directory_path() / ("nvte-rules-caps-" + std::to_string(::getpid()));
  fs::remove_all(base);
  const std::string rule = "rules:\n  - id: r\n    title: t\n    severity: info\n    when: \"true\"\n    message: m\n";
  auto only_message = [](const rules::LoadResult& loaded) {
    EXPECT_FALSE(loaded.rules);
    return loaded.diagnostics.size() == 1 ? loaded.diagnostics[0].file + ": " + loaded.diagnostics[0].message : std::string("?");
  };

  // 16 directories down loads; 17 is the walk-depth cap.
  fs::path deep = base / "deep";
  fs::path at = deep;
  for (std::size_t i = 0; i < util::k_max_walk_depth; ++i) at /= "d" + std::to_string(i);
  fs::create_directories(at);
  ASSERT_TRUE(util::write_file_atomic(at / "r.yaml", rule).ok());
  auto at_cap = rules::RuleSet::load({deep});
  EXPECT_TRUE(at_cap.rules) << (at_cap.diagnostics.empty() ? "" : at_cap.diagnostics[0].message);
  fs::create_directories(at / "d16");
  fs::rename(at / "r.yaml", at / "d16" / "r.yaml");
  EXPECT_EQ(only_message(rules::RuleSet::load({deep})),
            (at / "d16").string() + ": rules directories nested more than 16 levels deep (limit 16, the walk-depth cap); keep rules files "
                                    "fewer levels down");

  // One file more than the rule-files cap.
  fs::path many = base / "many";
  fs::create_directories(many);
  ASSERT_TRUE(util::write_file_atomic(many / "a.yaml", rule).ok());
  for (std::size_t i = 1; i <= util::k_max_rule_files; ++i) {
    std::FILE* f = std::fopen((many / ("f" + std::to_string(i) + ".yaml")).c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("rules: []\n", f);
    std::fclose(f);
  }
  EXPECT_EQ(only_message(rules::RuleSet::load({many})),
            many.string() + ": more than 4096 rules files (limit 4096, the rule-files cap); put more rules in each file");
  fs::remove(many / "a.yaml");
  EXPECT_TRUE(rules::RuleSet::load({many}).diagnostics.size() == 1) << "4096 files without a rule: only 'no rules loaded'";

  // More bytes together than the rules-size cap: nine files of 7.5 MiB (comments) beside a rule.
  fs::path large = base / "large";
  fs::create_directories(large);
  ASSERT_TRUE(util::write_file_atomic(large / "a.yaml", rule).ok());
  const std::string comment = "#" + std::string((15u << 19) - 2, 'x') + "\n";
  for (int i = 0; i < 9; ++i) ASSERT_TRUE(util::write_file_atomic(large / ("big" + std::to_string(i) + ".yaml"), comment).ok());
  EXPECT_EQ(only_message(rules::RuleSet::load({large})),
            large.string() + ": rules files of more than 67108864 bytes together (limit 67108864, the rules-size cap); load fewer rules");
  for (int i = 0; i < 1; ++i) fs::remove(large / ("big" + std::to_string(i) + ".yaml"));
  auto under = rules::RuleSet::load({large});
  EXPECT_TRUE(under.rules) << (under.diagnostics.empty() ? "" : under.diagnostics[0].message);
  fs::remove_all(base);
}

// Reading a tree by its entries' types (d_type) keeps what a stat of each entry said: files in
// nested directories named by their path under the rules directory (a rule's default area is
// its file's name), a symlink to a file read, a symlink to a directory not entered, a *.yaml
// that is not a regular file a diagnostic.
TEST(RulesLoad, ATreeIsReadAsTheStatsOfItsEntriesSay) {
  namespace fs = std::filesystem;
  fs::path base = fs::temp_directory_path() / ("nvte-rules-tree-" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::path dir = base / "rules";
  fs::create_directories(dir / "attention" / "flash");
  fs::create_directories(base / "elsewhere");
  auto rule = [](const std::string& id) {
    return "rules:\n  - id: " + id + "\n    title: t\n    severity: info\n    when: \"true\"\n    message: m\n";
  };
  ASSERT_TRUE(util::write_file_atomic(dir / "attention" / "flash" / "heads.yaml", rule("nested")).ok());
  ASSERT_TRUE(util::write_file_atomic(base / "elsewhere" / "linked.yaml", rule("linked")).ok());
  ASSERT_TRUE(util::write_file_atomic(base / "elsewhere" / "hidden.yaml", rule("hidden")).ok());
  fs::create_symlink(base / "elsewhere" / "linked.yaml", dir / "link.yaml");
  fs::create_directory_symlink(base / "elsewhere", dir / "linkdir");
  ASSERT_TRUE(util::write_file_atomic(dir / "notes.txt", "not rules").ok());
  auto loaded = rules::RuleSet::load({dir});
  ASSERT_TRUE(loaded.rules) << (loaded.diagnostics.empty() ? "" : loaded.diagnostics[0].message);
  std::map<std::string, std::string> areas;
  for (const auto& s : loaded.rules->rule_summaries()) areas[s.id] = s.area;
  EXPECT_EQ(areas, (std::map<std::string, std::string>{{"linked", "link"}, {"nested", "heads"}}));
  std::vector<rules::detail::SourceFile> files = {{"x", "attention/flash/heads.yaml", rule("nested")}, {"y", "link.yaml", rule("linked")}};
  EXPECT_EQ(loaded.rules->digest(), rules::detail::database_digest(files)) << "the files' names under the directory";

  ASSERT_EQ(::mkfifo((dir / "pipe.yaml").c_str(), 0600), 0);
  auto with_fifo = rules::RuleSet::load({dir});
  EXPECT_FALSE(with_fifo.rules);
  ASSERT_EQ(with_fifo.diagnostics.size(), 1u);
  EXPECT_EQ(with_fifo.diagnostics[0].file, (dir / "pipe.yaml").string());
  EXPECT_EQ(with_fifo.diagnostics[0].message, "not a regular file (a FIFO): not read as rules");
  fs::remove_all(base);
}
