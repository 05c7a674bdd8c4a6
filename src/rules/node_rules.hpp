// The node rules as the fix search evaluates them again after a change (internal to src/rules):
// which facts each one reads and whether each fires. A node rule's outcome depends only on the
// facts its condition and its applies_to read (Condition::slots, the elements and the size of a
// collection it walks or counts), so after a change that moved a few facts only the rules that
// read one of them can change; every other rule's outcome is the one before the change.
#pragma once

#include "model/facts.hpp"
#include "rules/ruleset_impl.hpp"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rules::detail {

class NodeRules {
public:
  // Indexes the node rules of impl by the facts they read (the database outlives this).
  explicit NodeRules(const RuleSet::Impl& impl);

  // The node rules: indices into RuleSet::Impl::rules, in database order. A position below is
  // an index into this list.
  const std::vector<std::size_t>& rules() const { return m_rules; }
  // The positions of the rules that read one of the facts named (full names, "cudnn.copies[2].path"),
  // ascending.
  std::vector<std::size_t> reading(const std::vector<std::string>& facts) const;
  // Whether the rule at each position fires on facts (out[i] for positions[i]): as evaluate_node
  // finds it, without making the finding.
  void fire(const model::Facts& facts, const std::vector<std::size_t>& positions, std::vector<unsigned char>& out) const;

private:
  const RuleSet::Impl& m_impl;
  std::vector<std::size_t> m_rules;
  std::unordered_map<std::string, std::vector<std::size_t>> m_by_fact;           // a fact's full name -> positions
  std::vector<std::pair<std::string, std::vector<std::size_t>>> m_by_collection; // "gpu[" -> positions
  std::vector<std::size_t> m_always; // rules whose reads are not known: evaluated after every change
};

// engine.cpp: whether each rule (indices into impl.rules, node rules) fires on facts: its
// applies_to holds and its condition holds (for some element of the collection it walks).
void node_rules_fire(const RuleSet::Impl& impl, const model::Facts& facts, const std::vector<std::size_t>& rules,
                     std::vector<unsigned char>& out);

} // namespace rules::detail
