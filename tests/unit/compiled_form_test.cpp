// The shipped rules' compiled form stored in the binary (rules/compiled_form.hpp): it must be what
// compiling each file gives, read back to the same thing under any display name, give the
// database compiling gives (every shipped case and every finding alike), and be taken only for a
// file whose name and text are the shipped one's.
#include "rules/compiled_form.hpp"
#include "rules/preparsed.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

using namespace rules::detail;

std::vector<SourceFile> shipped_files() {
  std::vector<rules::Diagnostic> diagnostics;
  auto files = read_rule_files({NVTE_RULES_DIR}, diagnostics);
  EXPECT_TRUE(diagnostics.empty());
  return files;
}

const PreparsedFile& stored(const SourceFile& file) {
  const PreparsedFile* entry = preparsed_file(file.text);
  EXPECT_NE(entry, nullptr) << file.relative;
  return *entry;
}

// Everything a finding says, for comparing two databases' outputs.
void dump(std::string& out, const model::Finding& f) {
  out += "finding " + f.id + " " + std::to_string(static_cast<int>(f.severity)) + " " + std::to_string(static_cast<int>(f.impact)) + " " +
         f.title + "\n  " + f.message + "\n  area " + f.area + " workload " + f.workload + " verdict " +
         std::to_string(static_cast<int>(f.verdict)) + "\n";
  for (const auto& [k, v] : f.evidence) out += "  evidence " + k + "=" + v + "\n";
  for (const auto& fix : f.fixes) out += "  fix " + fix.kind + " | " + fix.command + " | " + fix.description + "\n";
  for (const auto& r : f.references) out += "  ref " + r + "\n";
  for (const auto& t : f.tags) out += "  tag " + t + "\n";
  for (const auto& b : f.verdict_backends) out += "  verdict_backend " + b + "\n";
  for (const auto& e : f.explains) out += "  explains " + e + "\n";
}

void dump(std::string& out, const model::Explanation& e) {
  out += "selected " + e.selected.value_or("-") + " te " + e.te_version + "\n";
  for (const auto& [name, verdict] : e.backends) {
    out += "backend " + name + " " + (verdict.available ? "available" : "out") + " " + verdict.sub_backend.value_or("-") +
           (verdict.deprioritized ? " deprioritized" : "") + "\n";
    for (const auto& reason : verdict.reasons) {
      out += "  reason " + reason.rule + ": " + reason.message + "\n";
      for (const auto& fix : reason.fixes) out += "    fix " + fix.kind + " | " + fix.command + " | " + fix.description + "\n";
    }
  }
  for (const auto& f : e.findings) dump(out, f);
}

std::string dump(const rules::RuleSummary& s) {
  std::string out = s.id + "|" + s.title + "|" + std::to_string(static_cast<int>(s.severity)) + "|" +
                    std::to_string(static_cast<int>(s.impact)) + "|" + std::to_string(static_cast<int>(s.verdict)) + "|" + s.area + "|" +
                    s.file + ":" + std::to_string(s.line) + "|" + s.when + "|" + s.backend + "|" + s.effect + "|" + s.kind + "|" +
                    s.message + "|" + std::to_string(s.fires_cases) + "/" + std::to_string(s.quiet_cases);
  for (const auto& [k, v] : s.applies_to) out += "|applies " + k + "=" + v;
  for (const auto& fix : s.fixes) out += "|fix " + fix.kind + " " + fix.command + " " + fix.description;
  for (const auto& r : s.references) out += "|ref " + r;
  for (const auto& t : s.tags) out += "|tag " + t;
  for (const auto& b : s.verdict_backends) out += "|vb " + b;
  for (const auto& e : s.explains) out += "|explains " + e;
  return out + "\n";
}

std::string dump(const rules::RuleSet& rules) {
  std::string out = "digest " + rules.digest() + "\n";
  for (const auto& s : rules.rule_summaries()) out += dump(s);
  const auto& selection = rules.selection();
  out += "selection " + selection.default_te_version + " " + selection.newest_te_modelled + " " + std::to_string(selection.orders.size()) +
         " " + std::to_string(selection.modelled_sms.size()) + "\n";
  for (const auto& p : rules.catalog().packages) {
    out += "package " + p.name + " " + p.fact + " " + p.requirement + " " + p.file + ":" + std::to_string(p.line) + "\n";
    for (const auto& r : p.releases)
      out += "  " + r.version.text() + " " + (r.python ? r.python->text() : "-") + " " + (r.glibc ? r.glibc->text() : "-") + " " +
             std::to_string(r.driver.size()) + " " + std::to_string(r.requirements.size()) + " " + r.source + "\n";
  }
  return out;
}

rules::RuleSet load(const std::vector<SourceFile>& files, rules::TestCases tests, StoredForm form) {
  std::vector<rules::Diagnostic> diagnostics;
  auto impl = load_impl(files, diagnostics, tests, form);
  EXPECT_TRUE(diagnostics.empty()) << (diagnostics.empty() ? "" : diagnostics.front().rendered());
  return rules::RuleSet::from_impl(std::move(impl));
}

// The stored bytes are those of compiling the file now: a stale table (the build step not run) or
// a compile that depends on more than the file's name and text fails here.
TEST(CompiledForm, EveryShippedFileIsStoredAsCompilingGivesIt) {
  auto files = shipped_files();
  ASSERT_GT(files.size(), 40u);
  for (const auto& file : files) {
    const PreparsedFile& entry = stored(file);
    ASSERT_FALSE(entry.compiled.empty()) << file.relative << " has no compiled form";
    FilePart part;
    compile_part(file, part, rules::TestCases::count, StoredForm::ignore);
    EXPECT_TRUE(encode_compiled(file, part) == entry.compiled) << file.relative; // bytes: not printed
  }
}

// Read back under another display name, a file's part is the one compiling it under that name
// gives, byte for byte, the name put where compiling puts it.
TEST(CompiledForm, ReadsBackToWhatCompilingGivesUnderAnyName) {
  for (const auto& shipped : shipped_files()) {
    SourceFile file("/elsewhere/" + shipped.relative, shipped.relative, shipped.text);
    FilePart decoded;
    compile_part(file, decoded, rules::TestCases::count);
    ASSERT_TRUE(decoded.diagnostics.empty());
    FilePart compiled;
    compile_part(file, compiled, rules::TestCases::count, StoredForm::ignore);
    EXPECT_TRUE(encode_compiled(file, decoded) == encode_compiled(file, compiled)) << file.relative;
    EXPECT_TRUE(encode_compiled(file, decoded) == stored(file).compiled) << file.relative;
    for (const auto& rule : decoded.impl.rules) {
      EXPECT_EQ(rule.summary.file, file.name);
      EXPECT_EQ(rule.at.file, file.name);
      for (const auto& at : rule.reference_at) EXPECT_EQ(at.file, file.name);
    }
    for (const auto& [name, place] : decoded.registry.packages) EXPECT_TRUE(place.starts_with(file.name + ":")) << place;
  }
}

// The database from the stored forms is the compiled one: the same rules, and on every shipped
// case the same findings and backend verdicts, messages and fixes rendered.
TEST(CompiledForm, StoredDatabaseGivesWhatTheCompiledOneGives) {
  auto files = shipped_files();
  auto from_stored = load(files, rules::TestCases::count, StoredForm::use);
  auto compiled = load(files, rules::TestCases::count, StoredForm::ignore);
  EXPECT_EQ(dump(from_stored), dump(compiled));
  auto with_cases = load(files, rules::TestCases::compile, StoredForm::use);
  auto cases = with_cases.test_cases();
  ASSERT_GT(cases.size(), 900u);
  for (const auto& c : cases) {
    auto failure = rules::run_test_case(from_stored, c);
    EXPECT_FALSE(failure) << *failure;
    std::string a, b;
    for (const auto& f : rules::evaluate_node(from_stored, c.facts)) dump(a, f);
    for (const auto& f : rules::evaluate_node(compiled, c.facts)) dump(b, f);
    dump(a, rules::explain(from_stored, c.facts, c.workload));
    dump(b, rules::explain(compiled, c.facts, c.workload));
    EXPECT_EQ(a, b) << c.rule_id << " case " << c.index;
  }
}

// A file that differs from a shipped one by a byte compiles from its text: what it says now is
// what loads.
TEST(CompiledForm, AFileOneByteAwayIsCompiled) {
  auto files = shipped_files();
  auto it = std::find_if(files.begin(), files.end(), [](const auto& f) { return f.relative == "cudnn.yaml"; });
  ASSERT_NE(it, files.end());
  auto at = it->text.find("    title: ");
  ASSERT_NE(at, std::string::npos);
  std::size_t first = at + 11;
  char was = it->text[first];
  it->text[first] = was == 'X' ? 'Y' : 'X';
  SourceFile edited(it->name, it->relative, it->text);
  EXPECT_EQ(preparsed_file(edited.text), nullptr);
  FilePart part;
  compile_part(edited, part, rules::TestCases::count);
  ASSERT_TRUE(part.diagnostics.empty());
  ASSERT_FALSE(part.impl.rules.empty());
  EXPECT_EQ(part.impl.rules.front().summary.title.front(), edited.text[first]);
}

// A shipped file's text under another name is not the shipped file: a rule without `area:` takes
// its area from the file's name.
TEST(CompiledForm, AShippedTextUnderAnotherNameIsCompiled) {
  auto files = shipped_files();
  auto it = std::find_if(files.begin(), files.end(), [](const auto& f) { return f.relative == "cudnn.yaml"; });
  ASSERT_NE(it, files.end());
  SourceFile renamed("site/site-cudnn.yaml", "site-cudnn.yaml", it->text);
  ASSERT_NE(preparsed_file(renamed.text), nullptr); // the same text: its tree is still taken
  FilePart part;
  compile_part(renamed, part, rules::TestCases::count);
  ASSERT_TRUE(part.diagnostics.empty());
  std::size_t renamed_areas = 0;
  for (const auto& rule : part.impl.rules) renamed_areas += rule.summary.area == "site-cudnn";
  EXPECT_GT(renamed_areas, 0u);
  FilePart compiled;
  compile_part(renamed, compiled, rules::TestCases::count, StoredForm::ignore);
  EXPECT_TRUE(encode_compiled(renamed, part) == encode_compiled(renamed, compiled));
}

// Loads that compile the test cases (lint, the rules tests) compile the files: the stored form
// holds none.
TEST(CompiledForm, CaseCompilingLoadsCompile) {
  auto files = shipped_files();
  FilePart part;
  compile_part(files.front(), part, rules::TestCases::compile);
  std::size_t cases = 0;
  for (const auto& rule : part.impl.rules) cases += rule.tests.size();
  EXPECT_GT(cases, 0u);
  EXPECT_EQ(encode_compiled(files.front(), part), ""); // such a part has no stored form
}

// A file with a problem has no stored form; bytes cut short or changed do not read back, and
// leave the part as it came.
TEST(CompiledForm, OnlyWholeFormsReadBack) {
  SourceFile bad("bad.yaml", "bad.yaml", "rules:\n  - id: Bad\n");
  FilePart broken;
  compile_part(bad, broken, rules::TestCases::count);
  ASSERT_FALSE(broken.diagnostics.empty());
  EXPECT_EQ(encode_compiled(bad, broken), "");

  auto files = shipped_files();
  const SourceFile& file = files.front();
  std::string bytes(stored(file).compiled);
  for (std::size_t n = 0; n < bytes.size(); n += 97) {
    FilePart part;
    EXPECT_FALSE(decode_compiled(std::string_view(bytes).substr(0, n), file, part)) << n;
    EXPECT_TRUE(part.impl.rules.empty() && part.impl.slots.slots().empty() && part.registry.ids.empty()) << n;
  }
  FilePart extended;
  EXPECT_FALSE(decode_compiled(bytes + "x", file, extended));
  std::string other = bytes;
  other[0] = 'X';
  FilePart wrong_magic;
  EXPECT_FALSE(decode_compiled(other, file, wrong_magic));
}

} // namespace
