// The condition language of `when:` (internal to src/rules): lexer, recursive-descent parser,
// type checker and evaluator. A condition compiles to a flat vector of typed nodes whose fact
// references are slot numbers into a SlotTable shared by the whole RuleSet, so evaluation reads
// facts through a per-evaluation cache instead of looking names up in a map each time.
#pragma once

#include "model/value.hpp"
#include "model/version.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rules::detail {

// An error inside an expression or template: offset and length into its text.
struct SourceError {
  std::size_t offset = 0;
  std::size_t length = 1;
  std::string message;
  std::string hint;
};

// ---- lexer (shared with the template parser) ----

enum class TokenKind { name, number, string, lparen, rparen, lbracket, rbracket, comma, op, arith, end, error };

struct Token {
  TokenKind kind = TokenKind::end;
  std::string text; // name / number text, string contents, operator; error message for error
  std::size_t offset = 0;
  std::size_t length = 0;
};

// Splits text into tokens ending with one end (or error) token. Never fails otherwise.
std::vector<Token> tokenize(std::string_view text);

// ---- fact references ----

// A name the rules read. Collection-relative names ("gpu.sm") are read per element.
struct SlotSpec {
  std::string name;       // "cudnn.version", "gpu[0].sm", or "gpu.sm" when collection >= 0
  int collection = -1;    // index into SlotTable::collections(), or -1
  std::string field;      // "sm" for collection-relative names
  model::ValueType type = model::ValueType::string;
};

class SlotTable {
public:
  int intern(const SlotSpec& spec);
  int intern_collection(std::string_view prefix);
  const std::vector<SlotSpec>& slots() const { return m_slots; }
  const std::vector<std::string>& collections() const { return m_collections; }
  // resolve_fact's memo: a name resolved before, or nullptr.
  const SlotSpec* resolved(std::string_view name) const;
  void remember(const SlotSpec& spec);
  // What another table's slot and collection numbers are in this one.
  struct Renumbering {
    std::vector<int> slots;
    std::vector<int> collections;
  };
  // Adds the slots and collections of a table that compiled one file on its own, in that table's
  // order, as if that file had been compiled into this table (renumber.cpp).
  Renumbering absorb(const SlotTable& part);
  // The table that holds these slots and collections in this order, as interning them gave (a
  // file's stored compiled form, compiled_form.hpp). resolve_fact's memo starts empty: it only
  // saves a later compile into the table the catalog look-up.
  static SlotTable of(std::vector<SlotSpec> slots, std::vector<std::string> collections);

private:
  std::vector<SlotSpec> m_slots;
  std::vector<std::string> m_collections;
  std::map<std::string, SlotSpec, std::less<>> m_resolved;
  std::map<std::pair<std::string, int>, int> m_index; // (name, collection) -> slot
};

// Resolves a fact name against the catalog (workload.* and explain.* included) into a slot spec;
// fails with a did-you-mean hint for an unknown name.
std::optional<SlotSpec> resolve_fact(std::string_view name, SlotTable& table, SourceError& error);
// "gpu" for a known collection prefix, else nullopt.
bool is_collection(std::string_view prefix);

// ---- compiled conditions ----

enum class NodeKind : std::uint8_t { constant, fact_true, has, env_is, compare, in_list, in_range, all, any, negate };
enum class CmpOp : std::uint8_t { eq, ne, lt, le, gt, ge };

struct Operand {
  enum class Kind : std::uint8_t { fact, count, literal, arithmetic } kind = Kind::literal;
  int index = -1; // slot (fact), collection (count) or Condition::arithmetic entry
  model::Value literal;
};

// Integer arithmetic over integer facts and literals: a + b, a * b, a % b, max(a, b), min(a, b).
// TE's selectors test divisibility (head_dim % 8, seqlen % 64) and maxima of head dims. An
// absent fact, or % by zero, makes the value absent (and the comparison false).
struct Arithmetic {
  enum class Op : std::uint8_t { add, multiply, modulo, max, min } op = Op::add;
  Operand lhs;
  Operand rhs;
};

struct Node {
  NodeKind kind = NodeKind::constant;
  CmpOp op = CmpOp::eq;
  bool flag = false; // constant's value; negated `not in`
  Operand lhs;
  Operand rhs;
  std::vector<model::Value> list;
  std::optional<model::VersionRange> range;
  std::vector<int> children;
};

struct Condition {
  std::vector<Node> nodes;
  std::vector<Arithmetic> arithmetic;
  int root = -1;
  int collection = -1;       // the collection it iterates, or -1
  std::vector<int> slots;    // every slot it reads, in source order
  bool reads_workload = false;
  bool reads_explain = false;
};

// Parses and type-checks a condition; every error found is appended (syntax stops at the first).
std::optional<Condition> compile_condition(std::string_view text, SlotTable& table, std::vector<SourceError>& errors);

// What evaluation reads through; implemented by the engine's per-evaluation frame.
class Reader {
public:
  virtual const model::Value* fact(int slot) = 0;
  virtual std::size_t count(int collection) = 0;

protected:
  ~Reader() = default;
};

bool evaluate(const Condition& condition, Reader& reader);
// Evaluates the subtree at `node` alone (one conjunct of the condition).
bool evaluate_node(const Condition& condition, int node, Reader& reader);

// Per node of the condition: whether its subtree reads only slots for which `fixed_slots` says
// true (counts of collections included: they are the node's).
std::vector<unsigned char> fixed_nodes(const Condition& condition, const std::vector<unsigned char>& fixed_slots);

// A condition folded: every subtree `fixed` (fixed_nodes) marks evaluated through a reader and
// folded into the nodes above it (an `and` drops its true children and is false with a false
// one, and so on). What is left reads the other slots only, and evaluates as the whole condition
// does while the fixed slots read the same; a condition that folds to a constant is one constant
// node. `origin` is, per node of `when`, the node of the condition it stands for (-1: none).
struct Folded {
  Condition when;
  std::vector<int> origin;
  int constant = -1; // 0 or 1 when it folded to a constant
};
// With `decisions`, the outcomes of the subtrees it evaluated are appended in order: two readers
// with the same outcomes get the same folded condition. fold_decisions() only walks the
// condition for those outcomes.
Folded fold(const Condition& condition, const std::vector<unsigned char>& fixed, Reader& reader,
            std::vector<unsigned char>* decisions = nullptr);
void fold_decisions(const Condition& condition, const std::vector<unsigned char>& fixed, Reader& reader,
                    std::vector<unsigned char>& decisions);

// The conjuncts of the condition: the children of a top-level `and`, else the root alone; empty
// for a condition that did not compile.
std::vector<int> conjuncts(const Condition& condition);
// Every fact slot the subtree at `node` reads, arithmetic included, appended to `slots`; whether
// it counts a collection is in the return value.
bool slots_read(const Condition& condition, int node, std::vector<int>& slots);

// Orders two values of comparable types (integers and numbers mix); nullopt otherwise.
std::optional<int> compare_values(const model::Value& a, const model::Value& b);

} // namespace rules::detail
