// Workload: one attention workload in TE's AttentionParams vocabulary (ARCHITECTURE.md "Workload
// keys"). Values are typed by the key table below; rules see them as facts "workload.<key>".
#pragma once

#include "model/facts.hpp"
#include "model/value.hpp"

#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace model {

struct WorkloadKeySpec {
  std::string_view name;
  ValueType type;
  std::string_view default_text;                // TE's AttentionParams default ("" = derived/none)
  std::vector<std::string_view> allowed_values; // for enumerations; empty = any
  std::string_view description;
};

std::span<const WorkloadKeySpec> workload_keys();
const WorkloadKeySpec* find_workload_key(std::string_view name);

// The values of a workload, by key: a map that copies in constant time and clones itself on the
// first change of a shared copy. explain() keeps a copy of its workload in every explanation,
// and copying ~40 map nodes (and freeing them with the explanation) was a sixth of an explain.
class WorkloadValues {
public:
  using Map = std::map<std::string, Value, std::less<>>;
  using const_iterator = Map::const_iterator;

  const_iterator begin() const { return map().begin(); }
  const_iterator end() const { return map().end(); }
  const_iterator find(std::string_view key) const { return map().find(key); }
  std::size_t count(std::string_view key) const { return map().count(key); }
  std::size_t size() const { return map().size(); }
  bool empty() const { return map().empty(); }

  void insert_or_assign(std::string key, Value value) { write().insert_or_assign(std::move(key), std::move(value)); }
  Value& operator[](const std::string& key) { return write()[key]; }

private:
  const Map& map() const {
    static const Map none;
    return m_map ? *m_map : none;
  }
  // Only this object refers to the map after write(): a copy that shares it keeps the old one.
  Map& write() {
    if (!m_map) m_map = std::make_shared<Map>();
    else if (m_map.use_count() > 1) m_map = std::make_shared<Map>(*m_map);
    return *m_map;
  }

  std::shared_ptr<Map> m_map;
};

struct Workload {
  std::string name;                          // file stem, HF model name or "command line"
  WorkloadValues values;                     // every key, defaults filled by complete()
  std::vector<std::string> assumed;          // keys the input did not say, filled with a default
  std::vector<std::string> notes;            // how an importer derived values (capped seqlen, MLA dims)

  const Value* get(std::string_view key) const;
  // Sets key from text, typed and checked against the key table; the error names key and value.
  util::Result<void> set_text(std::string_view key, std::string_view text);

  // Fills defaults and derived keys (qkv_format from qkv_layout, window_size from the mask,
  // context_parallel from cp_size, num_gqa_groups from num_heads, ...) and checks consistency
  // (head dims > 0, num_heads divisible by num_gqa_groups, known enumerations).
  util::Result<void> complete();

  // Copies the values into facts as "workload.<key>".
  void to_facts(Facts& facts) const;
};

} // namespace model
