// Facts: the typed snapshot of a node, keyed by canonical names ("gpu[0].sm", "cudnn.version",
// "env.NVTE_FLASH_ATTN"). Probes write it, `--set` overrides it, rules read it, and it
// round-trips through JSON (`probe --format json` / `--facts FILE`) unchanged.
//
// JSON form: {"schema_version": 1, "facts": {nested objects and arrays}}; names with [i] become
// arrays, dots become objects. Leaves are JSON scalars; versions are strings typed back by the
// fact catalog on load. An absent fact is absent, never "0.0" or null.
#pragma once

#include "model/value.hpp"
#include "util/result.hpp"
#include "util/unique_id.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace model {

inline constexpr int k_facts_schema_version = 1;

class Facts;

// What changes to one Facts object did, so that they can be taken back (Facts::attach, undo):
// the fix search applies each candidate change to one working copy of the node's facts, asks the
// rules about the facts it moved and takes the change back, instead of copying every fact per
// candidate.
class FactsJournal {
public:
  // The facts changed since the journal was attached whose value now differs from the one they
  // had then (a fact set to an identical value, or changed and changed back, is not listed), in
  // the order of their first change. Identical: the same type and value, a version's text too.
  std::vector<std::string> changed(const Facts& now) const;
  bool empty() const { return m_entries.empty(); }

private:
  friend class Facts;
  std::vector<std::pair<std::string, std::optional<Value>>> m_entries; // each change: the name, the value before (nullopt: absent)
};

class Facts {
public:
  Facts() = default;
  Facts(const Facts& other) : m_values(other.m_values), m_underived(other.m_underived) {}
  Facts(Facts&& other) noexcept : m_values(std::move(other.m_values)), m_underived(other.m_underived) {
    other.m_stamp = util::next_unique_id();
  }
  Facts& operator=(const Facts& other) {
    if (&other == this) return *this;
    record_all(other);
    m_values = other.m_values;
    m_underived = other.m_underived;
    m_stamp = util::next_unique_id();
    return *this;
  }
  Facts& operator=(Facts&& other) noexcept {
    record_all(other);
    m_values = std::move(other.m_values);
    m_underived = other.m_underived;
    m_stamp = util::next_unique_id();
    other.m_stamp = util::next_unique_id();
    return *this;
  }

  void set(std::string name, Value value) {
    if (m_journal) [[unlikely]]
      record(name);
    if (m_underived != k_all_underived) note_underived(name);
    m_values.insert_or_assign(std::move(name), std::move(value));
    m_stamp = util::next_unique_id();
  }
  void erase(std::string_view name);
  // Removes every fact under a prefix ("gpu[1]" or "cudnn.copies").
  void erase_prefix(std::string_view prefix);

  const Value* get(std::string_view name) const;
  bool has(std::string_view name) const { return get(name) != nullptr; }
  std::optional<std::string> get_string(std::string_view name) const;
  std::optional<std::int64_t> get_int(std::string_view name) const;
  std::optional<Version> get_version(std::string_view name) const;
  std::optional<bool> get_bool(std::string_view name) const;

  // Number of elements of a collection ("gpu", "cudnn.copies"): one more than the highest index.
  std::size_t count(std::string_view collection) const;

  const std::map<std::string, Value, std::less<>>& entries() const { return m_values; }
  bool empty() const { return m_values.empty(); }

  // Copies every fact of other into this one, replacing same-named ones.
  void merge(const Facts& other);

  std::string to_json(int indent = 2) const;
  // Every fact's name and exact value (Value::exact_text), length-prefixed, in name order, those
  // leave_out names left out: equal texts are equal facts, for digests and fingerprints (no JSON
  // tree is built).
  std::string exact_text(const std::function<bool(std::string_view)>& leave_out = {}) const;
  // Fails with a one-line reason (file name included) on bad JSON, a newer schema, or a leaf
  // whose type does not fit the catalog.
  static util::Result<Facts> from_json(std::string_view text, std::string_view origin);

  // Applies "KEY=VALUE" (`--set`). The key must be a catalog name; its value is converted to the
  // catalog type. An unindexed GPU key ("gpu.compute_capability") applies to every GPU, and
  // creates a synthetic GPU 0 on a node without one. Fails naming the key, with hints.
  util::Result<void> apply_override(std::string_view assignment);

  // Identifies this object in its current state: unique among all Facts, and new after every
  // change. Caches of pointers into the facts (the rules engine's) key on it.
  std::uint64_t stamp() const { return m_stamp; }

  // Fills what follows from other facts: gpu[i].sm <-> compute_capability, gpu.count,
  // <lib>.major. Call after probing and after overrides. Only the groups of facts it reads (the
  // GPUs, each library's) that changed since it last ran are derived again: the rest still
  // holds what it derived (the fix search derives after every change it tries).
  void derive();

  // Records every later change (set, erase, erase_prefix, merge, an assignment, and so derive
  // and apply_override) in journal, until undo(). A copy of the facts carries no journal.
  void attach(FactsJournal& journal) { m_journal = &journal; }
  // Takes back every change the journal recorded, the newest first, and detaches and empties it.
  void undo(FactsJournal& journal);

private:
  void record(std::string_view name); // the value name has now, before a change
  void record_all(const Facts& replacement) noexcept;
  void note_underived(std::string_view name); // the group of derive() name is in changed

  static constexpr std::uint8_t k_all_underived = 0xff;
  std::map<std::string, Value, std::less<>> m_values;
  std::uint64_t m_stamp = util::next_unique_id();
  FactsJournal* m_journal = nullptr;
  // The groups of facts derive() reads that changed since it last ran: bit 0 the GPUs, bit 1 + i
  // the i-th library it derives (facts.cpp, k_derived_libraries). A new object: all of them.
  std::uint8_t m_underived = k_all_underived;
};

} // namespace model
