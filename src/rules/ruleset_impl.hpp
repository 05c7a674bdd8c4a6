// The compiled form of a rules database, shared by the loader (which builds it) and the engine
// (which evaluates it). Internal to src/rules.
#pragma once

#include "rules/catalog.hpp"
#include "rules/condition.hpp"
#include "rules/rules.hpp"
#include "rules/templates.hpp"
#include "util/unique_id.hpp"

#include <unordered_map>

namespace rules::detail {

enum class RuleKind { node, workload, backend };

struct CompiledFix {
  std::string kind;
  Template command;
  std::string description;
};

struct AppliesTo {
  std::string key;  // te, cudnn, ...
  int slot = -1;    // the version fact it reads
  model::VersionRange range;
};

struct Location {
  std::string file;
  int line = 0;
  int column = 0;
  std::string source_line;
};

// What an explain reads of every rule it visits comes first (a few cache lines); the summary
// (~1 KB of strings, read when a rule fires) after it.
struct Rule {
  RuleKind kind = RuleKind::node;
  bool deprioritized = false;
  Condition when;
  std::vector<AppliesTo> applies_to;
  std::string backend;     // flash_attention | fused_attention | unfused_attention
  std::string sub_backend; // for fused_attention.<sub>
  // `while_in:` the filter runs only while this backend (or sub-backend) is still in TE's running
  // at its place in the filter order (TE nests the check inside `if use_flash_attention_2 and ...`).
  std::string while_backend, while_sub;
  RuleSummary summary;
  Template message;
  std::vector<CompiledFix> fixes;
  std::vector<RuleTestCase> tests;
  Location at;                             // the rule's `id:`
  std::vector<Location> reference_at;      // each reference
};

} // namespace rules::detail

struct rules::RuleSet::Impl {
  // Which database this is: an Impl is never changed once loaded (RuleSet holds it const), so
  // caches of what it computed (the engine's node memo) key on this.
  const std::uint64_t id = util::next_unique_id();
  detail::SlotTable slots;
  std::vector<detail::Rule> rules;
  std::unordered_map<std::string, std::size_t> rule_index; // id -> index in rules (ids are unique once loaded)
  Selection selection;
  std::optional<model::Version> default_te_version;
  std::string digest;
  Catalog catalog; // `packages:` of every file
};
