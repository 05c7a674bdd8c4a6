// The evaluator of compiled conditions (condition.hpp), over any reader with fact(slot) and
// count(collection): evaluate() reads through the virtual Reader; the engine instantiates it
// with its final Frame, whose fact reads then inline (an explain evaluates ~100 conditions).
// Internal to src/rules.
#pragma once

#include "rules/condition.hpp"

#include <algorithm>
#include <optional>

namespace rules::detail {

// `a op b` for a comparison node whose operands read a and b (both present).
inline bool compare_holds(const model::Value& a, const model::Value& b, CmpOp op) {
  // Most comparisons are string equalities (layouts, masks, dtypes): lengths settle most.
  if ((op == CmpOp::eq || op == CmpOp::ne) && a.is(model::ValueType::string) && b.is(model::ValueType::string))
    return (a.as_string() == b.as_string()) == (op == CmpOp::eq);
  std::optional<int> order;
  if (a.is(model::ValueType::integer) && b.is(model::ValueType::integer)) {
    const auto x = a.as_int(), y = b.as_int();
    order = x < y ? -1 : (y < x ? 1 : 0);
  } else {
    order = compare_values(a, b);
  }
  if (!order) return false;
  switch (op) {
  case CmpOp::eq: return *order == 0;
  case CmpOp::ne: return *order != 0;
  case CmpOp::lt: return *order < 0;
  case CmpOp::le: return *order <= 0;
  case CmpOp::gt: return *order > 0;
  case CmpOp::ge: return *order >= 0;
  }
  return false;
}

// Whether `a` is in the list of an in_list node (or not, for `not in`).
inline bool in_list_holds(const model::Value& a, const Node& n) {
  bool found = false;
  bool text = a.is(model::ValueType::string);
  for (const auto& item : n.list) {
    if (text && item.is(model::ValueType::string)) {
      if (a.as_string() == item.as_string()) {
        found = true;
        break;
      }
      continue;
    }
    auto order = compare_values(a, item);
    if (order && *order == 0) {
      found = true;
      break;
    }
  }
  return found != n.flag;
}

template <typename R>
struct Evaluator {
  const Condition& c;
  R& reader;
  std::optional<model::Value> scratch[2]; // built only for a count or arithmetic operand

  const model::Value* value(const Operand& o, int side = 0) {
    switch (o.kind) {
    case Operand::Kind::fact: return reader.fact(o.index);
    case Operand::Kind::count: scratch[side] = model::Value(static_cast<long>(reader.count(o.index))); return &*scratch[side];
    case Operand::Kind::literal: return &o.literal;
    case Operand::Kind::arithmetic: {
      auto n = integer(o);
      if (!n) return nullptr;
      scratch[side] = model::Value(*n);
      return &*scratch[side];
    }
    }
    return nullptr;
  }

  std::optional<long> integer(const Operand& o) {
    switch (o.kind) {
    case Operand::Kind::fact: {
      const model::Value* v = reader.fact(o.index);
      if (!v || !v->is(model::ValueType::integer)) return std::nullopt;
      return v->as_int();
    }
    case Operand::Kind::count: return static_cast<long>(reader.count(o.index));
    case Operand::Kind::literal: return o.literal.as_int();
    case Operand::Kind::arithmetic: {
      const Arithmetic& a = c.arithmetic[static_cast<std::size_t>(o.index)];
      auto x = integer(a.lhs);
      auto y = integer(a.rhs);
      if (!x || !y) return std::nullopt;
      switch (a.op) {
      case Arithmetic::Op::add: return *x + *y;
      case Arithmetic::Op::multiply: return *x * *y;
      case Arithmetic::Op::modulo:
        if (*y == 0) return std::nullopt;
        return *x % *y;
      case Arithmetic::Op::max: return std::max(*x, *y);
      case Arithmetic::Op::min: return std::min(*x, *y);
      }
    }
    }
    return std::nullopt;
  }

  bool run(int index) {
    const Node& n = c.nodes[static_cast<std::size_t>(index)];
    switch (n.kind) {
    case NodeKind::constant: return n.flag;
    case NodeKind::fact_true: {
      const model::Value* v = reader.fact(n.lhs.index);
      return v && v->is(model::ValueType::boolean) && v->as_bool();
    }
    case NodeKind::has: return reader.fact(n.lhs.index) != nullptr;
    case NodeKind::env_is: {
      const model::Value* v = reader.fact(n.lhs.index);
      if (!v) return false;
      if (v->is(model::ValueType::string)) return v->as_string() == n.rhs.literal.as_string();
      return v->to_string() == n.rhs.literal.as_string();
    }
    case NodeKind::compare: {
      const model::Value* a = value(n.lhs);
      if (!a) return false;
      const model::Value* b = value(n.rhs, 1);
      if (!b) return false;
      return compare_holds(*a, *b, n.op);
    }
    case NodeKind::in_list: {
      const model::Value* a = value(n.lhs);
      if (!a) return false;
      return in_list_holds(*a, n);
    }
    case NodeKind::in_range: {
      const model::Value* a = value(n.lhs);
      if (!a || !a->is(model::ValueType::version)) return false;
      return n.range->contains(a->as_version()) != n.flag;
    }
    case NodeKind::all:
      for (int child : n.children)
        if (!run(child)) return false;
      return true;
    case NodeKind::any:
      for (int child : n.children)
        if (run(child)) return true;
      return false;
    case NodeKind::negate: return !run(n.children[0]);
    }
    return false;
  }
};

template <typename R>
bool evaluate_with(const Condition& condition, R& reader) {
  if (condition.root < 0) return false;
  Evaluator<R> evaluator{condition, reader, {}};
  return evaluator.run(condition.root);
}

// The subtree at `node` alone.
template <typename R>
bool evaluate_node_with(const Condition& condition, int node, R& reader) {
  Evaluator<R> evaluator{condition, reader, {}};
  return evaluator.run(node);
}

} // namespace rules::detail
