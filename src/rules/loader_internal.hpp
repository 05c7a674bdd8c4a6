// What loader.cpp shares with the rest of src/rules (the engine's lint, the explain case files):
// a rules file's text with its line table, diagnostics pointing into it, and loading. Internal.
#pragma once

#include "rules/rules.hpp"
#include "rules/ruleset_impl.hpp"
#include "rules/yaml_tree.hpp"

#include <map>

namespace rules::detail {

// At most four threads read and compile the rules. `check` compiles them beside the probe, and on the
// 16-core H200 node more threads made both slower: with 8 or 16 the probe inside check took
// 15.7-16.8 ms instead of 8.7-9.0 ms (its file reads stall: site-packages 14.5 ms instead of
// 3.0), the compile itself 11.5-14.1 ms instead of 8.9-10.0, check + 3 workloads 23.4-24.9 ms
// instead of 18.4-20.1 (scripts/gpu-validate.sh threads, docs/records/performance.md, round 6).
constexpr unsigned k_compile_threads = 4;

struct SourceFile {
  SourceFile(std::string display_name, std::string relative_name, std::string content);

  std::string name;     // as shown in diagnostics (the path as given)
  std::string relative; // relative to its rules directory (digest, area)
  std::string text;
  std::vector<std::size_t> line_starts;

  std::string line_text(int line) const;
  // A diagnostic at a byte offset of the file.
  Diagnostic at_offset(std::size_t offset, std::size_t length, std::string message, std::string hint = {}) const;
  // A diagnostic at a yaml-cpp mark (0-based line and column; line < 0: no position).
  Diagnostic at_mark(int mark_line, int mark_column, std::string message, std::string hint = {}) const;
  std::size_t mark_offset(int mark_line, int mark_column) const;
  // The file offset of character `offset` of a scalar's parsed value whose node starts at start.
  std::size_t value_offset(std::size_t start, std::string_view value, std::size_t offset) const;
};

// What the files of one load share: ids seen and where the selection block is.
struct Registry {
  std::map<std::string, Location> ids;
  std::optional<Location> selection_at;
  std::map<std::string, std::string> packages; // normalized name -> file:line
};

// A file's YAML tree, or why it has none.
struct ParsedFile {
  std::optional<YamlDocument> document;
  YamlError problem;
};

// Validates one file's tree and compiles its rules, `packages:` and `selection:` into impl; every
// problem becomes a diagnostic. The ids, packages and selection block it defines go to registry,
// which also says whether another file defined them first.
void compile_file(const SourceFile& file, const ParsedFile& parsed, RuleSet::Impl& impl, std::vector<Diagnostic>& diagnostics,
                  Registry& registry, TestCases tests);

struct PreparsedFile;

// One file compiled on its own (load_impl compiles each file so, then merges them in order).
struct FilePart {
  RuleSet::Impl impl;
  Registry registry;
  std::vector<Diagnostic> diagnostics;
  const PreparsedFile* shipped = nullptr; // the stored file its text equals, if any
};

// Whether a load takes a shipped file's stored compiled form (compiled_form.hpp) or compiles it.
// The tests compile every file to compare the two.
enum class StoredForm { use, ignore };

// Compiles file on its own into part (fresh): from its stored compiled form when it is a shipped
// file (same relative name and text) loaded with TestCases::count, else from its stored tree or
// text.
void compile_part(const SourceFile& file, FilePart& part, TestCases tests, StoredForm stored = StoredForm::use);

// The same database as load_impl, every file compiled in turn on this thread into one slot table
// (what load_impl does when files clash; the tests compare the two).
std::shared_ptr<RuleSet::Impl> load_impl_in_order(const std::vector<SourceFile>& files, std::vector<Diagnostic>& diagnostics,
                                                  TestCases tests = TestCases::compile);
// FNV-1a 64 (16 hex digits) over the files sorted by relative name: their names and bytes.
std::string database_digest(const std::vector<SourceFile>& files);
// Slot and collection numbers of a rule compiled into another slot table, made this table's
// (SlotTable::absorb says what each became).
void renumber(Rule& rule, const SlotTable::Renumbering& renumbering);

std::vector<SourceFile> read_rule_files(const std::vector<std::filesystem::path>& dirs, std::vector<Diagnostic>& diagnostics);
// Adds a diagnostic naming dirs when impl holds no rule and nothing else went wrong.
void require_some_rules(const RuleSet::Impl& impl, const std::vector<std::filesystem::path>& dirs,
                        std::vector<Diagnostic>& diagnostics);
// Every rule that loaded without error, even when others did not (lint checks those too).
std::shared_ptr<RuleSet::Impl> load_impl(const std::vector<SourceFile>& files, std::vector<Diagnostic>& diagnostics,
                                         TestCases tests = TestCases::compile, StoredForm stored = StoredForm::use);
LoadResult load_files(const std::vector<SourceFile>& files, std::vector<Diagnostic> diagnostics,
                      TestCases tests = TestCases::compile);

} // namespace rules::detail
