// The rules engine: loads the YAML rules database (docs/rules-format.md), type-checks every
// condition and template against the fact catalog at load time, and evaluates the rules against a
// node's facts (node findings) or against a node and an attention workload (TE's backend
// selection plus workload findings). A RuleSet only exists when loading found no error, so the
// engine never runs on a broken database; lint() reports every problem in one run.
#pragma once

#include "model/facts.hpp"
#include "rules/catalog.hpp"
#include "model/explanation.hpp"
#include "model/workload.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rules {

// One problem in a rules file, pointing into the file (line and column 1-based; 0 = unknown).
struct Diagnostic {
  std::string file;
  int line = 0;
  int column = 0;
  int length = 1;          // characters to underline from column
  std::string message;
  std::string hint;        // "did you mean cudnn.version?", may be empty
  std::string source_line; // the file's line, for the caret

  // "file:line:column: error: message", the source line, a caret line and the hint.
  std::string rendered() const;
};

// All diagnostics rendered one after another (for a one-line-reason exit the caller takes the first).
std::string render(const std::vector<Diagnostic>& diagnostics);

// A rule as written, for `rules list` / `rules show` and for the tests.
struct RuleSummary {
  std::string id;
  std::string title;
  model::Severity severity = model::Severity::info;
  model::Impact impact = model::Impact::none; // wrong_results, runtime_failure: what the kernel does
  // What the finding does to the verdict of the workloads it concerns (`verdict:`, or the default
  // of a workload rule: error -> fails, a warning with an impact -> at_risk), and for a node rule
  // which selected backends it concerns (`verdict_backends:`; empty = every workload).
  model::VerdictEffect verdict = model::VerdictEffect::none;
  std::vector<std::string> verdict_backends;
  std::vector<std::string> explains; // self-test failure classes its finding explains (`explains:`)
  std::string area;
  std::string file;
  int line = 0;
  std::string when;
  std::string backend; // empty for non-filter rules
  std::string effect;  // unavailable | deprioritized (backend rules only)
  std::string kind;    // node | workload | backend
  std::vector<std::pair<std::string, std::string>> applies_to;
  std::string message; // the template as written
  std::vector<model::Fix> fixes; // command templates as written
  std::vector<std::string> references;
  std::vector<std::string> tags;
  std::size_t fires_cases = 0;
  std::size_t quiet_cases = 0;
};

// TE's backend preference for a TE version (the `selection:` block, or the built-in default).
struct SelectionOrder {
  std::optional<model::VersionRange> te; // nullopt = every version
  std::vector<std::string> backends;     // FlashAttention, FusedAttention, UnfusedDotProductAttention
  std::vector<std::pair<std::string, std::vector<std::string>>> fused_sub_backends; // dtype key -> order
  // FlashAttention's generations, the one TE uses first (FlashAttention4, FlashAttention3,
  // FlashAttention2); empty: FlashAttention is one backend without generations.
  std::vector<std::string> flash_sub_backends;
};
struct Selection {
  std::string default_te_version; // assumed when te.version is absent; may be empty
  std::vector<SelectionOrder> orders;
  // The edge of the knowledge (model::Knowledge): the newest TE release the selection was checked
  // against (TE's conformance data), and the GPU architectures it was checked on (sm numbers).
  std::string newest_te_modelled;
  std::vector<long> modelled_sms;
};

// One `tests:` case of a rule: node facts and, when it names workload.* keys, a workload.
struct RuleTestCase {
  std::string rule_id;
  bool fires = true; // fires: the rule must fire; quiet: it must not
  std::size_t index = 0;
  std::string file;
  int line = 0;
  int column = 0;
  model::Facts facts;
  model::Workload workload; // completed with TE's defaults (all defaults when the case names no workload.* key)
};

struct LoadResult;

// How much of each rule's `tests:` block a load compiles: every case (lint, the rules tests,
// test_cases()), or only their shape and count (check, explain, which never run the cases;
// compiling them is about 40% of loading the database). With count, test_cases() is empty and
// an error inside a case (an unknown fact, a bad value) is left to `rules lint`.
enum class TestCases { compile, count };

class RuleSet {
public:
  // Loads every *.yaml under each directory (recursive, sorted by path). Never throws; any
  // malformed file, schema error, type error or duplicate id becomes a diagnostic and no RuleSet.
  static LoadResult load(const std::vector<std::filesystem::path>& dirs, TestCases tests = TestCases::compile);
  // The same from one in-memory document (tests, fuzzing); file names the diagnostics.
  static LoadResult load_text(std::string_view text, std::string file);

  std::vector<RuleSummary> rule_summaries() const;
  std::size_t size() const;
  // FNV-1a 64 (16 hex digits) over the sorted relative file names and their bytes.
  const std::string& digest() const;
  const Selection& selection() const;
  // The installable versions (`packages:` blocks, rules/catalog/).
  const Catalog& catalog() const;
  // Every rule's fires/quiet cases, in file order.
  std::vector<RuleTestCase> test_cases() const;

  // For src/rules itself: the compiled form.
  struct Impl;
  const Impl& impl() const { return *m_impl; }
  static RuleSet from_impl(std::shared_ptr<const Impl> impl) { return RuleSet(std::move(impl)); }

private:
  explicit RuleSet(std::shared_ptr<const Impl> impl) : m_impl(std::move(impl)) {}
  std::shared_ptr<const Impl> m_impl;
};

struct LoadResult {
  std::optional<RuleSet> rules;        // present only when diagnostics is empty
  std::vector<Diagnostic> diagnostics; // every load-time error
};

// Node findings: every node rule (no workload.*/explain.* names, no backend:) whose applies_to
// holds and whose condition is true; per-GPU / per-copy rules give one finding per element.
std::vector<model::Finding> evaluate_node(const RuleSet& rules, const model::Facts& facts);

// Whether a node rule may read one of these facts (full names): one that names it, walks its
// collection, or whose reads are not known in advance. What evaluate_node and the node fix search
// make of facts does not depend on facts for which this is false.
bool node_rules_may_read(const RuleSet& rules, const std::vector<std::string>& facts);
// Whether any rule (node, workload, a message's or fix's template) may read one of these facts:
// a compiled operand names it, or a node rule's reads are not known in advance. An explanation
// and its fix search do not depend on facts for which this is false.
bool rules_may_read(const RuleSet& rules, const std::vector<std::string>& facts);

// TE's attention-backend selection for one completed workload on a node, with the reasons each
// backend is out, followed by the workload rules' findings (Finding::workload set).
model::Explanation explain(const RuleSet& rules, const model::Facts& node_facts, const model::Workload& workload);

// Whether one test case passes; nullopt when it does, else why not (what fired or did not).
std::optional<std::string> run_test_case(const RuleSet& rules, const RuleTestCase& test_case);

// Every problem of the database in one run: load errors, then (when it loads) rules without
// references or without fires/quiet cases, references that are not URLs, and failing cases.
std::vector<Diagnostic> lint(const std::vector<std::filesystem::path>& dirs);

} // namespace rules
