#include "rules/node_rules.hpp"

#include <algorithm>

namespace rules::detail {

namespace {

// The collections an operand counts (count(gpu)), arithmetic included.
void counted_collections(const Condition& c, const Operand& o, std::vector<int>& out) {
  if (o.kind == Operand::Kind::count) out.push_back(o.index);
  if (o.kind == Operand::Kind::arithmetic) {
    const Arithmetic& a = c.arithmetic[static_cast<std::size_t>(o.index)];
    counted_collections(c, a.lhs, out);
    counted_collections(c, a.rhs, out);
  }
}

} // namespace

NodeRules::NodeRules(const RuleSet::Impl& impl) : m_impl(impl) {
  const auto& slots = impl.slots.slots();
  const auto& collections = impl.slots.collections();
  std::vector<std::vector<std::size_t>> by_collection(collections.size());
  for (std::size_t r = 0; r < impl.rules.size(); ++r) {
    const Rule& rule = impl.rules[r];
    if (rule.kind != RuleKind::node) continue;
    const std::size_t position = m_rules.size();
    m_rules.push_back(r);
    std::vector<int> read = rule.when.slots;
    std::vector<int> walked;
    if (rule.when.collection >= 0) walked.push_back(rule.when.collection);
    for (const auto& node : rule.when.nodes) {
      counted_collections(rule.when, node.lhs, walked);
      counted_collections(rule.when, node.rhs, walked);
    }
    bool known = rule.when.root >= 0;
    for (const auto& a : rule.applies_to) {
      if (a.slot < 0) known = false;
      else read.push_back(a.slot);
    }
    if (!known) {
      m_always.push_back(position);
      continue;
    }
    for (int slot : read) {
      const SlotSpec& spec = slots[static_cast<std::size_t>(slot)];
      if (spec.collection >= 0) walked.push_back(spec.collection);
      else m_by_fact[spec.name].push_back(position);
    }
    std::sort(walked.begin(), walked.end());
    walked.erase(std::unique(walked.begin(), walked.end()), walked.end());
    for (int c : walked) by_collection[static_cast<std::size_t>(c)].push_back(position);
  }
  for (std::size_t c = 0; c < collections.size(); ++c)
    if (!by_collection[c].empty()) m_by_collection.emplace_back(collections[c] + "[", std::move(by_collection[c]));
}

std::vector<std::size_t> NodeRules::reading(const std::vector<std::string>& facts) const {
  std::vector<std::size_t> out = m_always;
  for (const auto& name : facts) {
    if (auto it = m_by_fact.find(name); it != m_by_fact.end()) out.insert(out.end(), it->second.begin(), it->second.end());
    if (name.find('[') == std::string::npos) continue;
    for (const auto& [prefix, positions] : m_by_collection)
      if (name.starts_with(prefix)) out.insert(out.end(), positions.begin(), positions.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void NodeRules::fire(const model::Facts& facts, const std::vector<std::size_t>& positions, std::vector<unsigned char>& out) const {
  std::vector<std::size_t> indices;
  indices.reserve(positions.size());
  for (std::size_t p : positions) indices.push_back(m_rules[p]);
  node_rules_fire(m_impl, facts, indices, out);
}

} // namespace rules::detail

namespace rules {

bool node_rules_may_read(const RuleSet& rules, const std::vector<std::string>& facts) {
  return !detail::NodeRules(rules.impl()).reading(facts).empty();
}

namespace {

// Whether a template names one of facts (a message's or fix's {{fact}}, pip_install's arguments).
bool template_reads(const std::vector<detail::Segment>& segments, const std::vector<std::string>& facts) {
  for (const auto& segment : segments) {
    if (segment.kind == detail::Segment::Kind::fact && segment.collection < 0 &&
        std::find(facts.begin(), facts.end(), segment.text) != facts.end())
      return true;
    if (template_reads(segment.args, facts)) return true;
  }
  return false;
}

} // namespace

bool rules_may_read(const RuleSet& rules, const std::vector<std::string>& facts) {
  // A condition's operands read through the slots of the one table; templates name facts.
  const auto& impl = rules.impl();
  for (const auto& spec : impl.slots.slots())
    if (spec.collection < 0 && std::find(facts.begin(), facts.end(), spec.name) != facts.end()) return true;
  for (const auto& rule : impl.rules) {
    if (template_reads(rule.message.segments, facts)) return true;
    for (const auto& fix : rule.fixes)
      if (template_reads(fix.command.segments, facts)) return true;
  }
  return node_rules_may_read(rules, facts);
}

} // namespace rules
