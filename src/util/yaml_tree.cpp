// libyaml events -> YamlData nodes: a stack of open collections; each finished node is appended
// to its parent (a sequence item, or alternately a key and a value of a mapping). Anchors map to
// the node built for them, so an alias is the same node. The limits are checked on the events,
// before libyaml's scanner slows down with depth (its simple-key stack is scanned per token) and
// before anyone walks the tree: the stack size is the depth, and each node's weight (the nodes
// it stands for with aliases expanded) is summed as it closes.
#include "util/yaml_tree.hpp"
#include "util/varint.hpp"

#include <map>
#include <unordered_map>
#include <yaml.h>

namespace util {

namespace {

const YamlData k_null_data{};
const std::string k_empty;

// Owns a yaml_parser_t / yaml_event_t.
struct Parser {
  yaml_parser_t parser;
  bool ok;
  Parser() : ok(yaml_parser_initialize(&parser) != 0) {}
  ~Parser() {
    if (ok) yaml_parser_delete(&parser);
  }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;
};
struct Event {
  yaml_event_t event;
  ~Event() { yaml_event_delete(&event); }
};

YamlMark mark_of(const yaml_mark_t& m) { return YamlMark{static_cast<int>(m.line), static_cast<int>(m.column)}; }

bool is_null_scalar(const yaml_event_t& e) {
  if (e.data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
  if (e.data.scalar.tag) return false;
  std::string_view v(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
  return v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL";
}

struct Open {
  YamlData* node;
  std::optional<YamlNode> pending_key; // mappings: the key waiting for its value
  std::size_t weight = 1;              // this node and everything in it so far, aliases expanded
  std::string anchor;                  // the anchor it defines, if any
};

struct Anchor {
  const YamlData* data = nullptr;
  std::size_t weight = 1;
  bool open = false; // its collection has not ended: an alias to it now would be a cycle
};

std::string anchor_name(const yaml_char_t* name) { return name ? reinterpret_cast<const char*>(name) : ""; }

} // namespace

YamlNode::YamlNode() : m_data(&k_null_data) {}
bool YamlNode::IsNull() const { return m_data->type == YamlType::null; }
bool YamlNode::IsScalar() const { return m_data->type == YamlType::scalar; }
bool YamlNode::IsSequence() const { return m_data->type == YamlType::sequence; }
bool YamlNode::IsMap() const { return m_data->type == YamlType::map; }
const std::string& YamlNode::Scalar() const { return m_data->type == YamlType::scalar ? m_data->scalar : k_empty; }
YamlMark YamlNode::Mark() const { return m_data->mark; }
const YamlEntry* YamlNode::begin() const { return m_data->children.data(); }
const YamlEntry* YamlNode::end() const { return m_data->children.data() + m_data->children.size(); }
std::size_t YamlNode::size() const { return m_data->children.size(); }

std::optional<YamlDocument> YamlDocument::parse(std::string_view text, YamlError& error, const InputLimits& limits) {
  YamlDocument doc;
  Parser p;
  if (!p.ok) {
    error = YamlError{"cannot initialise the YAML parser", {}};
    return std::nullopt;
  }
  yaml_parser_set_input_string(&p.parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  std::vector<Open> stack;
  std::map<std::string, Anchor> anchors;
  std::size_t nodes = 0;     // in the document, aliases expanded
  std::size_t documents = 0; // started so far
  bool done = false;
  auto refuse = [&](std::string what, const yaml_mark_t& at) {
    error = YamlError{std::move(what), mark_of(at), true};
    return std::nullopt;
  };
  // Counts a node of the given weight into the document and into the collection holding it.
  auto count = [&](std::size_t weight) {
    nodes += weight;
    if (!stack.empty()) stack.back().weight += weight;
    return nodes <= limits.max_nodes;
  };
  auto too_many = [&] {
    return "more than " + std::to_string(limits.max_nodes) + " nodes with aliases expanded (limit " + std::to_string(limits.max_nodes) +
           ")";
  };

  // A finished node goes into the open collection, or becomes the root.
  auto attach = [&](const YamlData* data) {
    YamlNode node(data);
    if (stack.empty()) {
      if (!doc.m_root) doc.m_root = data;
      return;
    }
    Open& top = stack.back();
    if (top.node->type == YamlType::sequence) {
      top.node->children.emplace_back(node, YamlNode(), YamlNode());
    } else if (!top.pending_key) {
      top.pending_key = node;
    } else {
      top.node->children.emplace_back(YamlNode(), *top.pending_key, node);
      top.pending_key.reset();
    }
  };

  while (!done) {
    Event ev;
    if (!yaml_parser_parse(&p.parser, &ev.event)) {
      std::string message = p.parser.problem ? p.parser.problem : "malformed YAML";
      if (p.parser.context) message += " (" + std::string(p.parser.context) + ")";
      error = YamlError{message, mark_of(p.parser.problem_mark)};
      return std::nullopt;
    }
    const yaml_event_t& e = ev.event;
    switch (e.type) {
    case YAML_SCALAR_EVENT: {
      YamlData& d = doc.m_nodes.emplace_back();
      d.mark = mark_of(e.start_mark);
      if (!is_null_scalar(e)) {
        d.type = YamlType::scalar;
        d.scalar.assign(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
      }
      if (e.data.scalar.anchor) anchors[anchor_name(e.data.scalar.anchor)] = Anchor{&d, 1, false};
      if (!count(1)) return refuse(too_many(), e.start_mark);
      attach(&d);
      break;
    }
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
      if (stack.size() >= limits.max_depth)
        return refuse("nested deeper than " + std::to_string(limits.max_depth) + " levels (limit " + std::to_string(limits.max_depth) + ")",
                      e.start_mark);
      if (nodes + 1 > limits.max_nodes) return refuse(too_many(), e.start_mark);
      ++nodes;
      YamlData& d = doc.m_nodes.emplace_back();
      d.type = e.type == YAML_SEQUENCE_START_EVENT ? YamlType::sequence : YamlType::map;
      d.mark = mark_of(e.start_mark);
      std::string name = anchor_name(e.type == YAML_SEQUENCE_START_EVENT ? e.data.sequence_start.anchor : e.data.mapping_start.anchor);
      if (!name.empty()) anchors[name] = Anchor{&d, 1, true};
      stack.push_back(Open{&d, std::nullopt, 1, std::move(name)});
      break;
    }
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: {
      Open closed = std::move(stack.back());
      stack.pop_back();
      if (!closed.anchor.empty()) {
        if (auto it = anchors.find(closed.anchor); it != anchors.end() && it->second.data == closed.node)
          it->second = Anchor{closed.node, closed.weight, false};
      }
      if (!stack.empty()) stack.back().weight += closed.weight; // counted in nodes already
      attach(closed.node);
      break;
    }
    case YAML_ALIAS_EVENT: {
      auto it = anchors.find(anchor_name(e.data.alias.anchor));
      if (it == anchors.end()) {
        error = YamlError{"unknown anchor '" + anchor_name(e.data.alias.anchor) + "'", mark_of(e.start_mark)};
        return std::nullopt;
      }
      if (it->second.open) return refuse("alias *" + it->first + " inside the node it names, a cycle (limit: none)", e.start_mark);
      if (!count(it->second.weight)) return refuse(too_many(), e.start_mark);
      attach(it->second.data);
      break;
    }
    case YAML_DOCUMENT_START_EVENT:
      if (++documents > 1) return refuse("a second YAML document, which would be ignored (limit 1)", e.start_mark);
      break;
    case YAML_STREAM_END_EVENT:
      done = true;
      break;
    default:
      break;
    }
  }
  if (!doc.m_root) doc.m_root = &k_null_data;
  return doc;
}

// The binary form: varints (7 bits a byte, low first). The node count, the root's index, then
// per node its type, mark line and column, scalar length and bytes, child count and per child the
// indices of its entry's self, key and value. Index 0 is the shared null node (YamlNode()), i + 1
// the document's node i.
namespace {

void put(std::string& out, std::size_t n) { append_varint(out, n); }

struct BinaryReader {
  std::string_view data;
  std::size_t at = 0;
  bool ok = true;

  std::size_t get() {
    if (auto n = read_varint(data, at)) return static_cast<std::size_t>(*n);
    ok = false;
    return 0;
  }
};

} // namespace

std::string YamlDocument::to_binary() const {
  std::unordered_map<const YamlData*, std::size_t> index{{&k_null_data, 0}};
  std::size_t next = 1;
  for (const auto& d : m_nodes) index.emplace(&d, next++);
  auto id = [&](const YamlNode& n) { return index.at(n.m_data); };
  std::string out;
  put(out, m_nodes.size());
  put(out, m_root ? index.at(m_root) : 0);
  for (const auto& d : m_nodes) {
    put(out, static_cast<std::size_t>(d.type));
    put(out, static_cast<std::size_t>(d.mark.line));
    put(out, static_cast<std::size_t>(d.mark.column));
    put(out, d.scalar.size());
    out += d.scalar;
    put(out, d.children.size());
    for (const auto& e : d.children) {
      put(out, id(e));
      put(out, id(e.first));
      put(out, id(e.second));
    }
  }
  return out;
}

std::optional<YamlDocument> YamlDocument::from_binary(std::string_view data) {
  BinaryReader in{data};
  const std::size_t count = in.get();
  if (!in.ok || count > data.size()) return std::nullopt; // each node takes at least a byte
  YamlDocument doc;
  doc.m_nodes.resize(count);
  auto node = [&](std::size_t i) -> const YamlData* {
    if (i > count) {
      in.ok = false;
      return &k_null_data;
    }
    return i == 0 ? &k_null_data : &doc.m_nodes[i - 1];
  };
  doc.m_root = node(in.get());
  for (auto& d : doc.m_nodes) {
    std::size_t type = in.get();
    if (type > static_cast<std::size_t>(YamlType::map)) return std::nullopt;
    d.type = static_cast<YamlType>(type);
    d.mark.line = static_cast<int>(in.get());
    d.mark.column = static_cast<int>(in.get());
    std::size_t length = in.get();
    if (!in.ok || length > data.size() - in.at) return std::nullopt;
    d.scalar.assign(data.substr(in.at, length));
    in.at += length;
    std::size_t children = in.get();
    if (!in.ok || children > data.size() - in.at) return std::nullopt;
    d.children.reserve(children);
    for (std::size_t c = 0; c < children; ++c) {
      const YamlData* self = node(in.get());
      const YamlData* key = node(in.get());
      const YamlData* value = node(in.get());
      d.children.emplace_back(YamlNode(self), YamlNode(key), YamlNode(value));
    }
    if (!in.ok) return std::nullopt;
  }
  if (!in.ok || in.at != data.size()) return std::nullopt;
  return doc;
}

} // namespace util
