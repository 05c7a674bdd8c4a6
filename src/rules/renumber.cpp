// Moving the rules of a file compiled on its own (its own SlotTable, slots numbered from 0) into
// the database: the file's slots and collections join the database's table in the file's order,
// and every slot and collection number in its rules is rewritten. Files are merged in file order,
// so each slot gets the number it would have had with every file compiled into one table in turn.
#include "rules/loader_internal.hpp"

namespace rules::detail {

SlotTable::Renumbering SlotTable::absorb(const SlotTable& part) {
  Renumbering out;
  out.collections.reserve(part.m_collections.size());
  for (const auto& prefix : part.m_collections) out.collections.push_back(intern_collection(prefix));
  auto collection = [&](int c) { return c < 0 ? c : out.collections[static_cast<std::size_t>(c)]; };
  out.slots.reserve(part.m_slots.size());
  for (SlotSpec spec : part.m_slots) {
    spec.collection = collection(spec.collection);
    out.slots.push_back(intern(spec));
  }
  // resolve_fact's memo, for a later compile against this table.
  for (const auto& [name, resolved] : part.m_resolved) {
    if (m_resolved.count(name)) continue;
    SlotSpec spec = resolved;
    spec.collection = collection(spec.collection);
    m_resolved.emplace(name, std::move(spec));
  }
  return out;
}

SlotTable SlotTable::of(std::vector<SlotSpec> slots, std::vector<std::string> collections) {
  SlotTable table;
  table.m_slots = std::move(slots);
  table.m_collections = std::move(collections);
  for (std::size_t i = 0; i < table.m_slots.size(); ++i)
    table.m_index.emplace(std::make_pair(table.m_slots[i].name, table.m_slots[i].collection), static_cast<int>(i));
  return table;
}

namespace {

int slot_of(const SlotTable::Renumbering& r, int slot) { return slot < 0 ? slot : r.slots[static_cast<std::size_t>(slot)]; }
int collection_of(const SlotTable::Renumbering& r, int c) { return c < 0 ? c : r.collections[static_cast<std::size_t>(c)]; }

void renumber(Operand& operand, const SlotTable::Renumbering& r) {
  if (operand.kind == Operand::Kind::fact) operand.index = slot_of(r, operand.index);
  else if (operand.kind == Operand::Kind::count) operand.index = collection_of(r, operand.index);
  // literal: no number; arithmetic: an index into the condition's own list.
}

void renumber(Condition& condition, const SlotTable::Renumbering& r) {
  for (auto& node : condition.nodes) {
    renumber(node.lhs, r);
    renumber(node.rhs, r);
  }
  for (auto& a : condition.arithmetic) {
    renumber(a.lhs, r);
    renumber(a.rhs, r);
  }
  condition.collection = collection_of(r, condition.collection);
  for (int& slot : condition.slots) slot = slot_of(r, slot);
}

void renumber(Segment& segment, const SlotTable::Renumbering& r) {
  segment.collection = collection_of(r, segment.collection);
  for (auto& arg : segment.args) renumber(arg, r);
}

void renumber(Template& t, const SlotTable::Renumbering& r) {
  for (auto& segment : t.segments) renumber(segment, r);
  for (int& c : t.collections) c = collection_of(r, c);
}

} // namespace

void renumber(Rule& rule, const SlotTable::Renumbering& renumbering) {
  renumber(rule.when, renumbering);
  renumber(rule.message, renumbering);
  for (auto& fix : rule.fixes) renumber(fix.command, renumbering);
  for (auto& a : rule.applies_to) a.slot = slot_of(renumbering, a.slot);
}

} // namespace rules::detail
