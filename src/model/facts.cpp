#include "model/facts.hpp"

#include "model/fact_catalog.hpp"
#include "util/input_guard.hpp"
#include "util/json_text.hpp"
#include "util/strings.hpp"

#include <nlohmann/json.hpp>

#include <unordered_map>
#include <unordered_set>

namespace model {

using json = nlohmann::ordered_json;
// What a facts file is read into: the facts are kept in a std::map, so the document's order is
// not needed, and ordered_json finds each member by a linear search (a snapshot whose "env" held
// 50,000 variables took 20 s to read; audit 2026-12-01 item 17).
using tree_json = nlohmann::json;

void Facts::erase(std::string_view name) {
  if (auto it = m_values.find(name); it != m_values.end()) {
    if (m_journal) m_journal->m_entries.emplace_back(it->first, std::move(it->second));
    m_values.erase(it);
    note_underived(name);
  }
  m_stamp = util::next_unique_id();
}

void Facts::erase_prefix(std::string_view prefix) {
  for (auto it = m_values.lower_bound(prefix); it != m_values.end() && it->first.starts_with(prefix);) {
    std::string_view rest = std::string_view(it->first).substr(prefix.size());
    if (rest.empty() || rest[0] == '.' || rest[0] == '[') {
      if (m_journal) m_journal->m_entries.emplace_back(it->first, std::move(it->second));
      note_underived(it->first);
      it = m_values.erase(it);
    } else {
      ++it;
    }
  }
  m_stamp = util::next_unique_id();
}

namespace {

// The libraries whose <lib>.major and <lib>.copies[i].major derive() fills; bit 1 + i of
// Facts::m_underived.
constexpr std::string_view k_derived_libraries[] = {"cudnn", "nccl", "nvrtc", "cudart", "cublas", "cublaslt", "libcuda"};

} // namespace

void Facts::note_underived(std::string_view name) {
  if (name.starts_with("gpu")) {
    m_underived |= 1;
    return;
  }
  for (std::size_t i = 0; i < std::size(k_derived_libraries); ++i) {
    std::string_view lib = k_derived_libraries[i];
    if (name.size() > lib.size() && name[lib.size()] == '.' && name.starts_with(lib)) m_underived |= static_cast<std::uint8_t>(2u << i);
  }
}

void Facts::record(std::string_view name) {
  auto it = m_values.find(name);
  m_journal->m_entries.emplace_back(std::string(name), it == m_values.end() ? std::nullopt : std::optional<Value>(it->second));
}

void Facts::record_all(const Facts& replacement) noexcept {
  if (!m_journal || &replacement == this) return;
  for (const auto& [name, value] : m_values) m_journal->m_entries.emplace_back(name, value);
  for (const auto& [name, value] : replacement.m_values)
    if (!m_values.count(name)) m_journal->m_entries.emplace_back(name, std::nullopt);
}

void Facts::undo(FactsJournal& journal) {
  m_journal = nullptr;
  for (auto it = journal.m_entries.rbegin(); it != journal.m_entries.rend(); ++it) {
    note_underived(it->first);
    if (it->second) m_values.insert_or_assign(std::move(it->first), std::move(*it->second));
    else if (auto at = m_values.find(it->first); at != m_values.end()) m_values.erase(at);
  }
  journal.m_entries.clear();
  m_stamp = util::next_unique_id();
}

namespace {

// The same type and value, and for a version the same text ("9.1" and "9.1.0" compare equal).
bool identical(const Value& a, const Value& b) {
  if (a.type() != b.type() || !(a == b)) return false;
  return !a.is(ValueType::version) || a.as_version().text() == b.as_version().text();
}

} // namespace

std::vector<std::string> FactsJournal::changed(const Facts& now) const {
  std::vector<std::string> out;
  std::unordered_set<std::string_view> seen;
  for (const auto& [name, before] : m_entries) {
    if (!seen.insert(name).second) continue; // the first entry holds the value before
    const Value* after = now.get(name);
    bool same = before ? after && identical(*before, *after) : !after;
    if (!same) out.push_back(name);
  }
  return out;
}

const Value* Facts::get(std::string_view name) const {
  auto it = m_values.find(name);
  return it == m_values.end() ? nullptr : &it->second;
}

std::optional<std::string> Facts::get_string(std::string_view name) const {
  const Value* v = get(name);
  if (!v) return std::nullopt;
  return v->is(ValueType::string) ? v->as_string() : v->to_string();
}

std::optional<std::int64_t> Facts::get_int(std::string_view name) const {
  const Value* v = get(name);
  if (!v || !v->is(ValueType::integer)) return std::nullopt;
  return v->as_int();
}

std::optional<Version> Facts::get_version(std::string_view name) const {
  const Value* v = get(name);
  if (!v || !v->is(ValueType::version)) return std::nullopt;
  return v->as_version();
}

std::optional<bool> Facts::get_bool(std::string_view name) const {
  const Value* v = get(name);
  if (!v || !v->is(ValueType::boolean)) return std::nullopt;
  return v->as_bool();
}

std::size_t Facts::count(std::string_view collection) const {
  std::size_t n = 0;
  std::string prefix = std::string(collection) + "[";
  std::string past;
  for (auto it = m_values.lower_bound(prefix); it != m_values.end() && it->first.starts_with(prefix);) {
    auto close = it->first.find(']', prefix.size());
    if (close == std::string::npos) {
      ++it;
      continue;
    }
    if (auto index = util::parse_int(std::string_view(it->first).substr(prefix.size(), close - prefix.size()))) {
      n = std::max(n, static_cast<std::size_t>(*index) + 1);
    }
    // The element's other facts share its name up to the ']' and sort before that name + 0xff.
    past.assign(it->first, 0, close + 1);
    past += '\xff';
    it = m_values.lower_bound(past);
  }
  return n;
}

void Facts::merge(const Facts& other) {
  for (const auto& [name, value] : other.m_values) {
    if (m_journal) record(name);
    note_underived(name);
    m_values.insert_or_assign(name, value);
  }
  m_stamp = util::next_unique_id();
}

namespace {

// "cudnn.copies[1].path" -> segments {"cudnn", "copies", 1, "path"}.
struct Segment {
  std::string key;
  long index = -1; // >= 0: an array index applied after key
};

std::vector<Segment> parse_name(std::string_view name) {
  std::vector<Segment> segments;
  for (auto part : util::split(name, '.')) {
    Segment s;
    auto bracket = part.find('[');
    if (bracket != std::string_view::npos && part.ends_with("]")) {
      s.key = std::string(part.substr(0, bracket));
      s.index = static_cast<long>(util::parse_int(part.substr(bracket + 1, part.size() - bracket - 2)).value_or(0));
    } else {
      s.key = std::string(part);
    }
    segments.push_back(std::move(s));
  }
  return segments;
}

json to_json_value(const Value& v) {
  switch (v.type()) {
  case ValueType::boolean: return v.as_bool();
  case ValueType::integer: return v.as_int();
  case ValueType::number: return v.as_double();
  case ValueType::string: return v.as_string();
  case ValueType::version: return v.as_version().to_string();
  }
  return nullptr;
}

struct Loader {
  std::string_view origin;
  Facts& facts;
  std::optional<util::Error> error;

  void fail(const std::string& name, const std::string& why) {
    if (!error) error = util::Error{util::ErrorKind::parse, std::string(origin) + ": fact '" + name + "': " + why};
  }

  // The kind of node the catalog expects at name, or "" when the node's kind is one it allows.
  static std::string misshapen(const FactShape& shape, bool object, bool array) {
    if (!shape.known()) return "";
    if (object && shape.object) return "";
    if (array && shape.collection) return "";
    if (!object && !array && shape.value) return "";
    return shape.collection ? "expected an array" : shape.object ? "expected an object" : "expected a single value";
  }

  void walk(const tree_json& node, const std::string& name) {
    if (error) return;
    // A tree of the wrong shape ("driver": [1, 2], "gpu": {"a": 1}) would load as facts no rule
    // reads, and the driver or the GPUs would silently vanish.
    if (!name.empty() && !node.is_null()) {
      FactShape shape = fact_shape(name);
      if (auto want = misshapen(shape, node.is_object(), node.is_array()); !want.empty())
        return fail(name, want + ", got " + (node.is_object() ? "an object" : node.is_array() ? "an array" : node.dump()));
      if (node.is_object() && shape.collection) {
        // "gpu" holds gpu.count besides gpu[]: an object there may hold the catalog's members only.
        for (auto it = node.begin(); it != node.end(); ++it)
          if (!fact_shape(name + "." + it.key()).known()) return fail(name, "expected an array, got an object");
      }
    }
    if (node.is_object()) {
      for (auto it = node.begin(); it != node.end(); ++it) {
        // Names come from nesting: a key with '.', '[' or ']' (or an array inside an array) would
        // be written back under other names, or collide with a collection such as gpu[] (found
        // by fuzz_facts_json's round-trip property). to_json never writes such keys.
        if (it.key().find_first_of(".[]") != std::string::npos) return fail(name + "." + it.key(), "'.', '[' or ']' in a key");
        walk(it.value(), name.empty() ? it.key() : name + "." + it.key());
      }
    } else if (node.is_array()) {
      for (std::size_t i = 0; i < node.size(); ++i) {
        if (node[i].is_array()) return fail(name, "an array inside an array");
        walk(node[i], name + "[" + std::to_string(i) + "]");
      }
    } else if (node.is_null()) {
      // absent
    } else {
      leaf(node, name);
    }
  }

  void leaf(const tree_json& node, const std::string& name) {
    const FactSpec* spec = find_fact_spec(name);
    // Names outside the catalog (a newer doctor's facts, selftest results) keep their JSON type.
    ValueType want = spec ? spec->type
                          : node.is_boolean()         ? ValueType::boolean
                            : node.is_number_integer() ? ValueType::integer
                            : node.is_number()         ? ValueType::number
                                                       : ValueType::string;
    switch (want) {
    case ValueType::boolean:
      if (!node.is_boolean()) return fail(name, "expected a boolean, got " + node.dump());
      facts.set(name, node.get<bool>());
      return;
    case ValueType::integer:
      if (!node.is_number_integer()) return fail(name, "expected an integer, got " + node.dump());
      facts.set(name, node.get<std::int64_t>());
      return;
    case ValueType::number:
      if (!node.is_number()) return fail(name, "expected a number, got " + node.dump());
      facts.set(name, node.get<double>());
      return;
    case ValueType::string:
      if (!node.is_string()) return fail(name, "expected a string, got " + node.dump());
      facts.set(name, node.get<std::string>());
      return;
    case ValueType::version: {
      std::string text = node.is_string() ? node.get<std::string>() : node.dump();
      auto version = Version::parse(text);
      if (!version) return fail(name, version.error().message);
      facts.set(name, std::move(*version));
      return;
    }
    }
  }
};

} // namespace

namespace {

// The member key of object, as object[key] would give it, without ordered_json's linear search of
// the members: a node with 50,000 NVTE_* variables made to_json quadratic (audit 2026-12-01 item
// 17). index remembers where each member of each object is, by the object's path; an entry that
// no longer matches (the object was replaced by an array or a value, then made again) is looked
// up the slow way.
json& member(json& object, const std::string& path, const std::string& key, std::unordered_map<std::string, std::size_t>& index) {
  // The members as the vector ordered_map is (its own operator[] takes keys, not places).
  auto& members = static_cast<json::object_t::Container&>(object.get_ref<json::object_t&>());
  auto [it, inserted] = index.try_emplace(path, members.size());
  if (!inserted && it->second < members.size() && members[it->second].first == key) return members[it->second].second;
  if (!inserted) {
    for (std::size_t i = 0; i < members.size(); ++i)
      if (members[i].first == key) return members[it->second = i].second;
    it->second = members.size();
  }
  // Known to be absent: appended without ordered_map's search for a duplicate.
  members.emplace_back(key, json());
  return members.back().second;
}

} // namespace

std::string Facts::exact_text(const std::function<bool(std::string_view)>& leave_out) const {
  std::string out;
  out.reserve(m_values.size() * 64);
  auto put = [&](std::string_view text) {
    out += std::to_string(text.size());
    out += ':';
    out += text;
  };
  for (const auto& [name, value] : m_values) {
    if (leave_out && leave_out(name)) continue;
    put(name);
    put(value.exact_text());
  }
  return out;
}

std::string Facts::to_json(int indent) const {
  json tree = json::object();
  std::unordered_map<std::string, std::size_t> index; // "gpu[0].sm"-like path of a member -> its place
  std::string path;
  for (const auto& [name, value] : m_values) {
    // "gpu.count" would turn the "gpu" array into an object; the loader derives it again.
    if (name.ends_with(".count") && count(std::string_view(name).substr(0, name.size() - 6)) > 0) continue;
    json* node = &tree;
    path.clear();
    auto segments = parse_name(name);
    for (std::size_t i = 0; i < segments.size(); ++i) {
      const auto& s = segments[i];
      bool last = i + 1 == segments.size();
      if (!node->is_object()) *node = json::object();
      path += '.';
      path += s.key;
      json* child = &member(*node, path, s.key, index);
      if (s.index >= 0) {
        if (!child->is_array()) *child = json::array();
        while (child->size() <= static_cast<std::size_t>(s.index)) child->push_back(json::object());
        child = &(*child)[static_cast<std::size_t>(s.index)];
        path += '[' + std::to_string(s.index) + ']';
      }
      if (last) *child = to_json_value(value);
      node = child;
    }
  }
  json doc = json::object();
  doc["schema_version"] = k_facts_schema_version;
  doc["facts"] = std::move(tree);
  return util::json_text(doc, indent);
}

util::Result<Facts> Facts::from_json(std::string_view text, std::string_view origin) {
  // The input layer bounds the depth (walk recurses per level) and the size of the tree.
  tree_json doc = NVTE_TRY(util::parse_json<tree_json>(text, origin));
  if (!doc.is_object()) return util::Error{util::ErrorKind::parse, std::string(origin) + ": expected a JSON object"};
  auto version = doc.find("schema_version");
  if (version == doc.end() || !version->is_number_integer())
    return util::Error{util::ErrorKind::parse, std::string(origin) + ": no integer 'schema_version'"};
  if (version->get<int>() > k_facts_schema_version)
    return util::Error{util::ErrorKind::unsupported,
                       std::string(origin) + ": schema_version " + std::to_string(version->get<int>()) +
                           " is newer than this nvte-doctor understands (" + std::to_string(k_facts_schema_version) + ")"};
  // A whole report (check --format json) carries its facts too: accept both.
  auto tree = doc.find("facts");
  if (tree == doc.end() || !tree->is_object())
    return util::Error{util::ErrorKind::parse, std::string(origin) + ": no 'facts' object"};
  Facts facts;
  Loader loader{origin, facts, std::nullopt};
  loader.walk(*tree, "");
  if (loader.error) return *loader.error;
  if (std::size_t gpus = facts.count("gpu"); gpus > 0) facts.set("gpu.count", static_cast<long>(gpus));
  return facts;
}

util::Result<void> Facts::apply_override(std::string_view assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0)
    return util::Error{util::ErrorKind::invalid, "--set '" + std::string(assignment) + "': expected KEY=VALUE"};
  std::string key(util::trim(assignment.substr(0, eq)));
  std::string_view text = assignment.substr(eq + 1);
  const FactSpec* spec = find_fact_spec(key);
  if (!spec) {
    std::string message = "--set: unknown fact '" + key + "'";
    auto hints = suggest_fact_names(key);
    if (!hints.empty()) message += " (did you mean " + util::join(hints, ", ") + "?)";
    return util::Error{util::ErrorKind::invalid, message};
  }
  // An index names an existing member of its collection, or the next one: "gpu[100000000]" would
  // otherwise make every loop over the GPUs run (and allocate) a hundred million times, and
  // "gpu[-1]" would be a fact no rule reads.
  for (std::size_t open = key.find('['); open != std::string::npos; open = key.find('[', open + 1)) {
    std::size_t close = key.find(']', open);
    std::string collection = key.substr(0, open);
    auto index = util::parse_int(std::string_view(key).substr(open + 1, close == std::string::npos ? 0 : close - open - 1));
    std::size_t size = count(collection);
    if (!index || *index < 0 || static_cast<std::size_t>(*index) > size)
      return util::Error{util::ErrorKind::invalid, "--set " + key + ": index out of range: " + collection + " has " + std::to_string(size) +
                                                       (size == 1 ? " member" : " members") + " (limit: an index from 0 to " +
                                                       std::to_string(size) + ")"};
  }
  auto value = Value::parse_as(spec->type, text);
  if (!value) return util::Error{util::ErrorKind::invalid, "--set " + key + ": " + value.error().message};

  // "gpu.X" without an index: every GPU, or a synthetic GPU 0 on a node without one.
  if (key.starts_with("gpu.") && key != "gpu.count" && spec->pattern.starts_with("gpu[]")) {
    std::size_t n = std::max<std::size_t>(count("gpu"), 1);
    std::string field = key.substr(4);
    for (std::size_t i = 0; i < n; ++i) {
      std::string base = "gpu[" + std::to_string(i) + "]";
      if (!has(base + ".index")) set(base + ".index", static_cast<long>(i));
      if (!has(base + ".source")) set(base + ".source", "override");
      // Derived partners are recomputed from the new value.
      if (field == "compute_capability") erase(base + ".sm");
      if (field == "sm") erase(base + ".compute_capability");
      set(base + "." + field, *value);
    }
    return {};
  }
  if (key.starts_with("gpu[")) {
    auto base = key.substr(0, key.find(']') + 1);
    if (key.ends_with(".compute_capability")) erase(base + ".sm");
    if (key.ends_with(".sm")) erase(base + ".compute_capability");
    if (!has(base + ".index")) set(base + ".index", util::parse_int(base.substr(4, base.size() - 5)).value_or(0));
  }
  set(key, std::move(*value));
  return {};
}

void Facts::derive() {
  // The fix search derives after every change it tries (apply_change, the relinking): only the
  // groups that changed are derived, and a fact that already holds its value is left alone.
  const std::uint8_t underived = m_underived;
  std::string name;
  auto put = [&](Value value) {
    if (auto it = m_values.find(name); it != m_values.end() && identical(it->second, value)) return;
    set(name, std::move(value));
  };
  if (underived & 1u) {
    std::size_t gpus = count("gpu");
    for (std::size_t i = 0; i < gpus; ++i) {
      const std::string base = "gpu[" + std::to_string(i) + "]";
      name.assign(base).append(".compute_capability");
      const Value* cc = get(name);
      if (cc && !cc->is(ValueType::version)) cc = nullptr;
      name.assign(base).append(".sm");
      const Value* sm = get(name);
      if (sm && !sm->is(ValueType::integer)) sm = nullptr;
      if (cc && !sm) set(name, cc->as_version().major() * 10 + cc->as_version().minor());
      if (sm && !cc) {
        std::int64_t value = sm->as_int();
        set(base + ".compute_capability", Version{static_cast<long>(value / 10), static_cast<long>(value % 10)});
      }
    }
    if (gpus > 0 || !has("gpu.count")) {
      name = "gpu.count";
      put(static_cast<long>(gpus));
    }
  }
  for (std::size_t l = 0; l < std::size(k_derived_libraries); ++l) {
    if (!(underived & (2u << l))) continue;
    std::string_view lib = k_derived_libraries[l];
    name.assign(lib).append(".version");
    if (const Value* v = get(name); v && v->is(ValueType::version)) {
      long major = v->as_version().major();
      name.assign(lib).append(".major");
      put(major);
    }
    name.assign(lib).append(".copies");
    for (std::size_t i = 0, n = count(name); i < n; ++i) {
      name.assign(lib).append(".copies[").append(std::to_string(i)).append("].version");
      const Value* v = get(name);
      if (!v || !v->is(ValueType::version)) continue;
      long major = v->as_version().major();
      name.resize(name.size() - 7); // "version"
      name.append("major");
      put(major);
    }
  }
  // What it set is derived: every group holds what derive() makes of it.
  m_underived = 0;
}

} // namespace model
