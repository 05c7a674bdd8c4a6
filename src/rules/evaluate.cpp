// Evaluating a compiled condition (condition.hpp) against what a Reader gives: facts by slot and
// collection sizes. Split from condition.cpp (the language) to keep each file to one job.
#include "rules/condition.hpp"
#include "rules/evaluator.hpp"

#include <algorithm>
#include <compare>
#include <optional>

namespace rules::detail {

std::optional<int> compare_values(const model::Value& a, const model::Value& b) {
  using model::ValueType;
  auto sign = [](auto x, auto y) { return x < y ? -1 : (y < x ? 1 : 0); };
  if (a.type() != b.type()) {
    bool na = a.is(ValueType::integer) || a.is(ValueType::number);
    bool nb = b.is(ValueType::integer) || b.is(ValueType::number);
    if (na && nb) return sign(a.as_double(), b.as_double());
    return std::nullopt;
  }
  switch (a.type()) {
  case ValueType::boolean: return sign(a.as_bool(), b.as_bool());
  case ValueType::integer: return sign(a.as_int(), b.as_int());
  case ValueType::number: return sign(a.as_double(), b.as_double());
  case ValueType::string: {
    int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  case ValueType::version: {
    auto c = a.as_version() <=> b.as_version();
    return std::is_lt(c) ? -1 : (std::is_gt(c) ? 1 : 0);
  }
  }
  return std::nullopt;
}

namespace {

// Builds the folded form of a condition (fold() below) node by node; without `emit`, only walks
// it as building would, to learn the outcomes of the fixed subtrees.
class Folder {
public:
  Folder(const Condition& c, const std::vector<unsigned char>& fixed, Reader& reader, std::vector<unsigned char>* decisions, bool emit)
      : m_c(c), m_fixed(fixed), m_reader(reader), m_decisions(decisions), m_emit(emit) {}

  Folded run() {
    m_out.when.arithmetic = m_c.arithmetic;
    m_out.when.collection = m_c.collection;
    m_out.when.slots = m_c.slots;
    m_out.when.reads_workload = m_c.reads_workload;
    m_out.when.reads_explain = m_c.reads_explain;
    int root = m_c.root < 0 ? k_false : build(m_c.root);
    m_out.constant = root == k_true ? 1 : (root == k_false ? 0 : -1);
    if (root < 0) root = emit(constant(root == k_true), -1);
    m_out.when.root = root;
    return std::move(m_out);
  }

private:
  static constexpr int k_false = -2, k_true = -3;

  static Node constant(bool value) {
    Node n;
    n.kind = NodeKind::constant;
    n.flag = value;
    return n;
  }

  // Appends a node that stands for the condition's node `origin` (-1: none); its index.
  int emit(Node n, int origin) {
    if (!m_emit) return 0;
    m_out.when.nodes.push_back(std::move(n));
    m_out.origin.push_back(origin);
    return static_cast<int>(m_out.when.nodes.size() - 1);
  }

  // The subtree at `node` in the output: its index, or k_false / k_true when it folded to a constant.
  int build(int node) {
    const Node& n = m_c.nodes[static_cast<std::size_t>(node)];
    if (n.kind == NodeKind::constant) return n.flag ? k_true : k_false;
    if (m_fixed[static_cast<std::size_t>(node)]) {
      bool holds = evaluate_node(m_c, node, m_reader);
      if (m_decisions) m_decisions->push_back(holds ? 1 : 0);
      return holds ? k_true : k_false;
    }
    switch (n.kind) {
    case NodeKind::all:
    case NodeKind::any: {
      const bool all = n.kind == NodeKind::all;
      // An `and` is false with a false child and drops true ones; an `or` the other way round.
      const int decides = all ? k_false : k_true, neutral = all ? k_true : k_false;
      std::vector<int> kept;
      for (int child : n.children) {
        int built = build(child);
        if (built == decides) return decides;
        if (built != neutral) kept.push_back(built);
      }
      if (kept.empty()) return neutral;
      if (kept.size() == 1) return kept.front();
      Node out;
      out.kind = n.kind;
      out.children = std::move(kept);
      return emit(std::move(out), node);
    }
    case NodeKind::negate: {
      int built = build(n.children[0]);
      if (built == k_true) return k_false;
      if (built == k_false) return k_true;
      Node out;
      out.kind = NodeKind::negate;
      out.children = {built};
      return emit(std::move(out), node);
    }
    default: return m_emit ? emit(n, node) : 0;
    }
  }

  const Condition& m_c;
  const std::vector<unsigned char>& m_fixed;
  Reader& m_reader;
  std::vector<unsigned char>* m_decisions;
  bool m_emit;
  Folded m_out;
};

} // namespace

std::vector<unsigned char> fixed_nodes(const Condition& condition, const std::vector<unsigned char>& fixed_slots) {
  std::vector<unsigned char> out(condition.nodes.size(), 0);
  std::vector<int> read;
  for (std::size_t node = 0; node < condition.nodes.size(); ++node) {
    read.clear();
    slots_read(condition, static_cast<int>(node), read);
    out[node] = std::all_of(read.begin(), read.end(), [&](int slot) {
      return slot >= 0 && static_cast<std::size_t>(slot) < fixed_slots.size() && fixed_slots[static_cast<std::size_t>(slot)];
    });
  }
  return out;
}

Folded fold(const Condition& condition, const std::vector<unsigned char>& fixed, Reader& reader, std::vector<unsigned char>* decisions) {
  return Folder(condition, fixed, reader, decisions, true).run();
}

void fold_decisions(const Condition& condition, const std::vector<unsigned char>& fixed, Reader& reader,
                    std::vector<unsigned char>& decisions) {
  Folder(condition, fixed, reader, &decisions, false).run();
}

bool evaluate(const Condition& condition, Reader& reader) {
  if (condition.root < 0) return false;
  return evaluate_with(condition, reader);
}

bool evaluate_node(const Condition& condition, int node, Reader& reader) {
  if (node < 0 || static_cast<std::size_t>(node) >= condition.nodes.size()) return false;
  Evaluator<Reader> evaluator{condition, reader, {}};
  return evaluator.run(node);
}

} // namespace rules::detail
