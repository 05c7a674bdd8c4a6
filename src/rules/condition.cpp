// The condition language, in the style of mold's linker-script parser: a hand-written lexer, a
// recursive-descent parser into a small syntax tree (depth-bounded, so hostile input cannot blow
// the stack), then a checker that resolves every name against the fact catalog, gives each
// literal the type of the fact it is compared with (`cudnn.version < 9.3` is a version
// comparison, `gpu.sm >= 90` an integer one) and emits flat typed nodes. Every error carries an
// offset into the condition text so the loader can point at it inside the YAML file.
#include "rules/condition.hpp"

#include "model/fact_catalog.hpp"
#include "model/workload.hpp"
#include "util/edit_distance.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <compare>

namespace rules::detail {

namespace {

constexpr std::size_t k_max_depth = 48;
constexpr std::size_t k_max_length = 8192;

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

} // namespace

std::vector<Token> tokenize(std::string_view text) {
  std::vector<Token> tokens;
  auto error = [&](std::size_t at, std::size_t length, std::string message) {
    tokens.push_back({TokenKind::error, std::move(message), at, length});
    return tokens;
  };
  if (text.size() > k_max_length) return error(0, 1, "condition longer than 8192 characters");
  std::size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    std::size_t start = i;
    if (name_start(c)) {
      // Dotted names with indices and '-' inside segments: gpu[0].sm, package.flash-attn.version.
      while (i < text.size()) {
        if (name_char(text[i]) || ((text[i] == '.' || text[i] == '-') && i + 1 < text.size() && name_char(text[i + 1]))) {
          ++i;
        } else if (text[i] == '[') {
          std::size_t j = i + 1;
          while (j < text.size() && digit(text[j])) ++j;
          if (j == i + 1 || j >= text.size() || text[j] != ']') return error(i, 1, "expected an index like [0]");
          i = j + 1;
        } else {
          break;
        }
      }
      tokens.push_back({TokenKind::name, std::string(text.substr(start, i - start)), start, i - start});
      continue;
    }
    if (digit(c) || (c == '-' && i + 1 < text.size() && digit(text[i + 1]))) {
      ++i;
      while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '.' || text[i] == '+')) ++i;
      tokens.push_back({TokenKind::number, std::string(text.substr(start, i - start)), start, i - start});
      continue;
    }
    if (c == '"' || c == '\'') {
      std::string value;
      ++i;
      while (i < text.size() && text[i] != c) {
        if (text[i] == '\\' && i + 1 < text.size()) ++i;
        value += text[i++];
      }
      if (i >= text.size()) return error(start, i - start, "unterminated string");
      ++i;
      tokens.push_back({TokenKind::string, std::move(value), start, i - start});
      continue;
    }
    auto single = [&](TokenKind kind) {
      tokens.push_back({kind, std::string(1, c), start, 1});
      ++i;
    };
    switch (c) {
    case '(': single(TokenKind::lparen); continue;
    case ')': single(TokenKind::rparen); continue;
    case '[': single(TokenKind::lbracket); continue;
    case ']': single(TokenKind::rbracket); continue;
    case ',': single(TokenKind::comma); continue;
    default: break;
    }
    std::string_view two = text.substr(i, 2);
    if (two == "==" || two == "!=" || two == "<=" || two == ">=") {
      tokens.push_back({TokenKind::op, std::string(two), start, 2});
      i += 2;
      continue;
    }
    if (c == '<' || c == '>') {
      single(TokenKind::op);
      continue;
    }
    if (c == '+' || c == '*' || c == '%') {
      tokens.push_back({TokenKind::arith, std::string(1, c), start, 1});
      ++i;
      continue;
    }
    if (two == "&&") return error(start, 2, "unknown operator '&&' (write 'and')");
    if (two == "||") return error(start, 2, "unknown operator '||' (write 'or')");
    if (c == '!') return error(start, 1, "unknown operator '!' (write 'not')");
    if (c == '=') return error(start, 1, "unknown operator '=' (write '==')");
    return error(start, 1, std::string("unexpected character '") + c + "'");
  }
  tokens.push_back({TokenKind::end, "", text.size(), 0});
  return tokens;
}

// ---- slots ----

std::optional<SlotSpec> resolve_uncached(std::string_view name, SlotTable& table, SourceError& error);

int SlotTable::intern(const SlotSpec& spec) {
  auto key = std::make_pair(spec.name, spec.collection);
  if (auto it = m_index.find(key); it != m_index.end()) return it->second;
  m_slots.push_back(spec);
  int slot = static_cast<int>(m_slots.size() - 1);
  m_index.emplace(std::move(key), slot);
  return slot;
}

const SlotSpec* SlotTable::resolved(std::string_view name) const {
  auto it = m_resolved.find(name);
  return it == m_resolved.end() ? nullptr : &it->second;
}

void SlotTable::remember(const SlotSpec& spec) { m_resolved.emplace(spec.name, spec); }

int SlotTable::intern_collection(std::string_view prefix) {
  for (std::size_t i = 0; i < m_collections.size(); ++i) {
    if (m_collections[i] == prefix) return static_cast<int>(i);
  }
  m_collections.emplace_back(prefix);
  return static_cast<int>(m_collections.size() - 1);
}

bool is_collection(std::string_view prefix) {
  std::string wanted = std::string(prefix) + "[]";
  for (const auto& spec : model::fact_catalog()) {
    if (spec.pattern.starts_with(wanted)) return true;
  }
  return false;
}

std::optional<SlotSpec> resolve_fact(std::string_view name, SlotTable& table, SourceError& error) {
  // Rules name the same facts hundreds of times (workload.max_seqlen_q, cudnn.version): resolve
  // each name against the catalog once per table.
  if (const SlotSpec* known = table.resolved(name)) return *known;
  auto slot = resolve_uncached(name, table, error);
  if (slot) table.remember(*slot);
  return slot;
}

std::optional<SlotSpec> resolve_uncached(std::string_view name, SlotTable& table, SourceError& error) {
  const model::FactSpec* spec = model::find_fact_spec(name);
  if (!spec) {
    error.message = "unknown fact '" + std::string(name) + "'";
    std::vector<std::string> hints;
    if (name.starts_with("workload.")) {
      std::vector<std::pair<std::size_t, std::string>> scored;
      for (const auto& key : model::workload_keys())
        scored.emplace_back(util::edit_distance(name.substr(9), key.name, 4), "workload." + std::string(key.name));
      std::sort(scored.begin(), scored.end());
      for (std::size_t i = 0; i < scored.size() && i < 3 && scored[i].first <= 4; ++i) hints.push_back(scored[i].second);
    } else {
      hints = model::suggest_fact_names(name);
    }
    if (!hints.empty()) error.hint = "did you mean " + util::join(hints, ", ") + "?";
    return std::nullopt;
  }
  SlotSpec slot;
  slot.name = std::string(name);
  slot.type = spec->type;
  std::string normalized = model::normalize_fact_name(name);
  auto brackets = spec->pattern.find("[]");
  if (brackets != std::string_view::npos && normalized != spec->pattern) {
    std::string_view prefix = spec->pattern.substr(0, brackets);
    if (normalized.find('[') != std::string::npos) {
      error.message = "'" + std::string(name) + "' indexes only part of a collection";
      return std::nullopt;
    }
    slot.collection = table.intern_collection(prefix);
    slot.field = std::string(spec->pattern.substr(brackets + 3));
  }
  return slot;
}

namespace {

// ---- syntax tree ----

struct Syntax {
  enum class Kind { name, number, string, boolean, list, call, compare, in, not_in, all, any, negate, arithmetic } kind;
  std::string text; // name, literal text, operator, function name
  std::size_t offset = 0;
  std::size_t length = 0;
  std::vector<Syntax> kids;
};

class Parser {
public:
  Parser(std::vector<Token> tokens, std::vector<SourceError>& errors) : m_tokens(std::move(tokens)), m_errors(errors) {}

  std::optional<Syntax> parse() {
    auto expr = parse_or(0);
    if (!expr) return std::nullopt;
    if (peek().kind != TokenKind::end) return fail(peek(), "unexpected '" + peek().text + "' after the condition", "join conditions with 'and' / 'or'");
    return expr;
  }

private:
  const Token& peek() const { return m_tokens[std::min(m_pos, m_tokens.size() - 1)]; }
  const Token& next() { return m_tokens[std::min(m_pos++, m_tokens.size() - 1)]; }
  bool is_word(std::string_view word) const { return peek().kind == TokenKind::name && peek().text == word; }

  std::nullopt_t fail(const Token& at, std::string message, std::string hint = {}) {
    if (at.kind == TokenKind::error) {
      m_errors.push_back({at.offset, std::max<std::size_t>(at.length, 1), at.text, {}});
    } else {
      if (at.kind == TokenKind::end) message = "unexpected end of condition: " + message;
      m_errors.push_back({at.offset, std::max<std::size_t>(at.length, 1), std::move(message), std::move(hint)});
    }
    return std::nullopt;
  }

  std::optional<Syntax> too_deep() { return fail(peek(), "condition nested too deeply"); }

  static Syntax join(Syntax::Kind kind, Syntax left, Syntax right, std::string text) {
    Syntax node{kind, std::move(text), left.offset, right.offset + right.length - left.offset, {}};
    node.kids.push_back(std::move(left));
    node.kids.push_back(std::move(right));
    return node;
  }

  // `a or b or c` and `a and b and c` become one n-ary node each, so long chains stay shallow.
  // depth counts parentheses and `not`s, the only ways to nest.
  std::optional<Syntax> parse_chain(std::size_t depth, Syntax::Kind kind) {
    if (depth > k_max_depth) return too_deep();
    std::string_view word = kind == Syntax::Kind::any ? "or" : "and";
    auto first = kind == Syntax::Kind::any ? parse_chain(depth, Syntax::Kind::all) : parse_not(depth);
    if (!first || !is_word(word)) return first;
    Syntax chain{kind, std::string(word), first->offset, 0, {}};
    chain.kids.push_back(std::move(*first));
    while (is_word(word)) {
      next();
      auto operand = kind == Syntax::Kind::any ? parse_chain(depth, Syntax::Kind::all) : parse_not(depth);
      if (!operand) return std::nullopt;
      chain.kids.push_back(std::move(*operand));
    }
    chain.length = chain.kids.back().offset + chain.kids.back().length - chain.offset;
    return chain;
  }

  std::optional<Syntax> parse_or(std::size_t depth) { return parse_chain(depth, Syntax::Kind::any); }

  std::optional<Syntax> parse_not(std::size_t depth) {
    if (depth > k_max_depth) return too_deep();
    if (is_word("not")) {
      Token word = next();
      auto operand = parse_not(depth + 1);
      if (!operand) return std::nullopt;
      Syntax node{Syntax::Kind::negate, "not", word.offset, operand->offset + operand->length - word.offset, {}};
      node.kids.push_back(std::move(*operand));
      return node;
    }
    return parse_comparison(depth);
  }

  // a + b * c: '*' and '%' bind tighter than '+', all associate to the left.
  std::optional<Syntax> parse_sum(std::size_t depth) {
    auto left = parse_product(depth);
    while (left && peek().kind == TokenKind::arith && peek().text == "+") {
      std::string op = next().text;
      auto right = parse_product(depth);
      if (!right) return std::nullopt;
      left = join(Syntax::Kind::arithmetic, std::move(*left), std::move(*right), op);
    }
    return left;
  }

  std::optional<Syntax> parse_product(std::size_t depth) {
    auto left = parse_primary(depth);
    while (left && peek().kind == TokenKind::arith && peek().text != "+") {
      std::string op = next().text;
      auto right = parse_primary(depth);
      if (!right) return std::nullopt;
      left = join(Syntax::Kind::arithmetic, std::move(*left), std::move(*right), op);
    }
    return left;
  }

  std::optional<Syntax> parse_comparison(std::size_t depth) {
    auto left = parse_sum(depth);
    if (!left) return std::nullopt;
    if (peek().kind == TokenKind::op) {
      std::string op = next().text;
      auto right = parse_sum(depth);
      if (!right) return std::nullopt;
      return join(Syntax::Kind::compare, std::move(*left), std::move(*right), op);
    }
    bool negated = false;
    if (is_word("not") && m_pos + 1 < m_tokens.size() && m_tokens[m_pos + 1].kind == TokenKind::name &&
        m_tokens[m_pos + 1].text == "in") {
      next();
      negated = true;
    }
    if (is_word("in")) {
      next();
      auto right = parse_primary(depth);
      if (!right) return std::nullopt;
      return join(negated ? Syntax::Kind::not_in : Syntax::Kind::in, std::move(*left), std::move(*right), "in");
    }
    return left;
  }

  std::optional<Syntax> parse_primary(std::size_t depth) {
    const Token& token = peek();
    switch (token.kind) {
    case TokenKind::lparen: {
      next();
      auto inner = parse_or(depth + 1);
      if (!inner) return std::nullopt;
      if (peek().kind != TokenKind::rparen) return fail(peek(), "expected ')'");
      next();
      return inner;
    }
    case TokenKind::lbracket: {
      Token open = next();
      Syntax list{Syntax::Kind::list, "", open.offset, 0, {}};
      while (peek().kind != TokenKind::rbracket) {
        if (!list.kids.empty()) {
          if (peek().kind != TokenKind::comma) return fail(peek(), "expected ',' or ']' in the list");
          next();
        }
        const Token& item = peek();
        if (item.kind == TokenKind::number) list.kids.push_back({Syntax::Kind::number, item.text, item.offset, item.length, {}});
        else if (item.kind == TokenKind::string) list.kids.push_back({Syntax::Kind::string, item.text, item.offset, item.length, {}});
        else if (item.kind == TokenKind::name && (item.text == "true" || item.text == "false"))
          list.kids.push_back({Syntax::Kind::boolean, item.text, item.offset, item.length, {}});
        else return fail(item, "expected a literal in the list");
        next();
      }
      Token close = next();
      list.length = close.offset + 1 - open.offset;
      return list;
    }
    case TokenKind::number: next(); return Syntax{Syntax::Kind::number, token.text, token.offset, token.length, {}};
    case TokenKind::string: next(); return Syntax{Syntax::Kind::string, token.text, token.offset, token.length, {}};
    case TokenKind::name: {
      Token name = next();
      if (name.text == "true" || name.text == "false") return Syntax{Syntax::Kind::boolean, name.text, name.offset, name.length, {}};
      if (name.text == "and" || name.text == "or" || name.text == "not" || name.text == "in")
        return fail(name, "expected a fact, a literal or '(' but found '" + name.text + "'");
      if (peek().kind != TokenKind::lparen) return Syntax{Syntax::Kind::name, name.text, name.offset, name.length, {}};
      next();
      Syntax call{Syntax::Kind::call, name.text, name.offset, 0, {}};
      while (peek().kind != TokenKind::rparen) {
        if (!call.kids.empty()) {
          if (peek().kind != TokenKind::comma) return fail(peek(), "expected ',' or ')' in the call");
          next();
        }
        const Token& arg = peek();
        if (name.text == "max" || name.text == "min") {
          auto value = parse_sum(depth + 1);
          if (!value) return std::nullopt;
          call.kids.push_back(std::move(*value));
          continue;
        }
        if (arg.kind == TokenKind::name) call.kids.push_back({Syntax::Kind::name, arg.text, arg.offset, arg.length, {}});
        else if (arg.kind == TokenKind::string) call.kids.push_back({Syntax::Kind::string, arg.text, arg.offset, arg.length, {}});
        else return fail(arg, "expected a name or a string as argument of " + name.text + "()");
        next();
      }
      Token close = next();
      call.length = close.offset + 1 - name.offset;
      return call;
    }
    default: return fail(token, "expected a fact, a literal or '('");
    }
  }

  std::vector<Token> m_tokens;
  std::size_t m_pos = 0;
  std::vector<SourceError>& m_errors;
};

// ---- checker ----

class Checker {
public:
  Checker(SlotTable& table, std::vector<SourceError>& errors) : m_table(table), m_errors(errors) {}

  std::optional<Condition> run(const Syntax& root) {
    std::size_t before = m_errors.size();
    int index = check_bool(root);
    if (m_errors.size() != before || index < 0) return std::nullopt;
    m_condition.root = index;
    return std::move(m_condition);
  }

private:
  int error(const Syntax& at, std::string message, std::string hint = {}) {
    m_errors.push_back({at.offset, std::max<std::size_t>(at.length, 1), std::move(message), std::move(hint)});
    return -1;
  }

  int add(Node node) {
    m_condition.nodes.push_back(std::move(node));
    return static_cast<int>(m_condition.nodes.size() - 1);
  }

  // Resolves a fact name, records the collection it iterates (one per condition).
  std::optional<int> fact_slot(const Syntax& at, std::string_view name) {
    SourceError problem;
    auto spec = resolve_fact(name, m_table, problem);
    if (!spec) {
      error(at, problem.message, problem.hint);
      return std::nullopt;
    }
    if (spec->collection >= 0) {
      if (m_condition.collection >= 0 && m_condition.collection != spec->collection) {
        error(at, "a condition iterates one collection: it already reads " +
                      m_table.collections()[static_cast<std::size_t>(m_condition.collection)] + " per element",
              "index one of them (" + std::string(name.substr(0, name.find('.'))) + "[0]...)");
        return std::nullopt;
      }
      m_condition.collection = spec->collection;
    }
    if (name.starts_with("workload.")) m_condition.reads_workload = true;
    if (name.starts_with("explain.")) m_condition.reads_explain = true;
    int slot = m_table.intern(*spec);
    if (std::find(m_condition.slots.begin(), m_condition.slots.end(), slot) == m_condition.slots.end())
      m_condition.slots.push_back(slot);
    return slot;
  }

  static std::string env_name(const Syntax& arg) { return "env." + arg.text; }

  int check_bool(const Syntax& s) {
    switch (s.kind) {
    case Syntax::Kind::all:
    case Syntax::Kind::any: {
      Node node;
      node.kind = s.kind == Syntax::Kind::all ? NodeKind::all : NodeKind::any;
      bool ok = true;
      for (const auto& kid : s.kids) {
        int child = check_bool(kid); // every operand, so that every error is reported
        if (child < 0) {
          ok = false;
          continue;
        }
        // (a and b) and c: one node.
        const Node& c = m_condition.nodes[static_cast<std::size_t>(child)];
        if (c.kind == node.kind) node.children.insert(node.children.end(), c.children.begin(), c.children.end());
        else node.children.push_back(child);
      }
      if (!ok) return -1;
      return add(std::move(node));
    }
    case Syntax::Kind::negate: {
      int child = check_bool(s.kids[0]);
      if (child < 0) return -1;
      Node node;
      node.kind = NodeKind::negate;
      node.children.push_back(child);
      return add(std::move(node));
    }
    case Syntax::Kind::boolean: {
      Node node;
      node.kind = NodeKind::constant;
      node.flag = s.text == "true";
      return add(std::move(node));
    }
    case Syntax::Kind::name: {
      auto slot = fact_slot(s, s.text);
      if (!slot) return -1;
      auto type = m_table.slots()[static_cast<std::size_t>(*slot)].type;
      if (type != model::ValueType::boolean)
        return error(s, "'" + s.text + "' is " + article(type) + ", not a condition", "compare it, or test presence with has(" + s.text + ")");
      Node node;
      node.kind = NodeKind::fact_true;
      node.lhs = {Operand::Kind::fact, *slot, {}};
      return add(std::move(node));
    }
    case Syntax::Kind::call: return check_call(s);
    case Syntax::Kind::compare: return check_compare(s);
    case Syntax::Kind::in:
    case Syntax::Kind::not_in: return check_in(s);
    case Syntax::Kind::number:
    case Syntax::Kind::string:
    case Syntax::Kind::list: return error(s, "a literal is not a condition", "compare a fact with it");
    case Syntax::Kind::arithmetic: return error(s, "a number is not a condition", "compare it: " + s.kids[0].text + " % 8 == 0");
    }
    return -1;
  }

  static std::string article(model::ValueType type) {
    switch (type) {
    case model::ValueType::integer: return "an integer";
    case model::ValueType::version: return "a version";
    case model::ValueType::number: return "a number";
    case model::ValueType::string: return "a string";
    case model::ValueType::boolean: return "a boolean";
    }
    return "a value";
  }

  int check_call(const Syntax& s) {
    auto arity = [&](std::size_t n) {
      if (s.kids.size() == n) return true;
      error(s, s.text + "() takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s"));
      return false;
    };
    Node node;
    if (s.text == "has") {
      if (!arity(1)) return -1;
      if (s.kids[0].kind != Syntax::Kind::name) return error(s.kids[0], "has() takes a fact name");
      auto slot = fact_slot(s.kids[0], s.kids[0].text);
      if (!slot) return -1;
      node.kind = NodeKind::has;
      node.lhs = {Operand::Kind::fact, *slot, {}};
      return add(std::move(node));
    }
    if (s.text == "env_set" || s.text == "env_is") {
      if (!arity(s.text == "env_set" ? 1 : 2)) return -1;
      const Syntax& var = s.kids[0];
      if (var.text.empty() || var.text.find_first_of(".[]= ") != std::string::npos)
        return error(var, "'" + var.text + "' is not an environment variable name");
      auto slot = fact_slot(var, env_name(var));
      if (!slot) return -1;
      node.lhs = {Operand::Kind::fact, *slot, {}};
      if (s.text == "env_set") {
        node.kind = NodeKind::has;
        return add(std::move(node));
      }
      if (s.kids[1].kind != Syntax::Kind::string) return error(s.kids[1], "env_is() compares with a quoted string", "env_is(" + var.text + ", \"1\")");
      node.kind = NodeKind::env_is;
      node.rhs.literal = model::Value(s.kids[1].text);
      return add(std::move(node));
    }
    if (s.text == "max" || s.text == "min") return error(s, s.text + "() is a number, not a condition", "compare it: " + s.text + "(a, b) <= 256");
    if (s.text == "count") return error(s, "count() is a number, not a condition", "compare it: count(" + (s.kids.empty() ? std::string("gpu") : s.kids[0].text) + ") > 1");
    return error(s, "unknown function '" + s.text + "'", "functions: has, count, max, min, env_set, env_is");
  }

  // An operand with its type, or a literal still waiting for one.
  struct Typed {
    Operand operand;
    std::optional<model::ValueType> type; // nullopt: untyped literal
    const Syntax* syntax = nullptr;
  };

  std::optional<Typed> operand(const Syntax& s) {
    Typed t;
    t.syntax = &s;
    switch (s.kind) {
    case Syntax::Kind::name: {
      auto slot = fact_slot(s, s.text);
      if (!slot) return std::nullopt;
      t.operand = {Operand::Kind::fact, *slot, {}};
      t.type = m_table.slots()[static_cast<std::size_t>(*slot)].type;
      return t;
    }
    case Syntax::Kind::arithmetic: {
      static const std::pair<std::string_view, Arithmetic::Op> ops[] = {
          {"+", Arithmetic::Op::add}, {"*", Arithmetic::Op::multiply}, {"%", Arithmetic::Op::modulo}};
      Arithmetic::Op op = Arithmetic::Op::add;
      for (auto [text, o] : ops)
        if (s.text == text) op = o;
      return arithmetic(s, op, s.kids[0], s.kids[1]);
    }
    case Syntax::Kind::call: {
      if (s.text == "max" || s.text == "min") {
        if (s.kids.size() != 2) {
          error(s, s.text + "() takes two integers", s.text + "(workload.head_dim_qk, workload.head_dim_v)");
          return std::nullopt;
        }
        return arithmetic(s, s.text == "max" ? Arithmetic::Op::max : Arithmetic::Op::min, s.kids[0], s.kids[1]);
      }
      if (s.text != "count") {
        error(s, s.text == "has" || s.text.starts_with("env_") ? s.text + "() is a condition, not a value" : "unknown function '" + s.text + "'");
        return std::nullopt;
      }
      if (s.kids.size() != 1 || s.kids[0].kind != Syntax::Kind::name) {
        error(s, "count() takes one collection name", "count(gpu), count(cudnn.copies)");
        return std::nullopt;
      }
      if (!is_collection(s.kids[0].text)) {
        error(s.kids[0], "'" + s.kids[0].text + "' is not a collection",
              "collections: gpu, cudnn.copies, nccl.copies, nvrtc.copies, cudart.copies, cublas.copies, cublaslt.copies, libcuda.copies, "
              "python.interpreters");
        return std::nullopt;
      }
      t.operand = {Operand::Kind::count, m_table.intern_collection(s.kids[0].text), {}};
      t.type = model::ValueType::integer;
      return t;
    }
    case Syntax::Kind::number:
    case Syntax::Kind::string:
    case Syntax::Kind::boolean: return t;
    default: error(s, "expected a fact, count() or a literal here"); return std::nullopt;
    }
  }

  // An integer operand of arithmetic: an integer fact, count(), a nested expression or an
  // integer literal.
  std::optional<Operand> integer_operand(const Syntax& s) {
    if (s.kind == Syntax::Kind::number) {
      auto n = util::parse_int(s.text);
      if (!n) {
        error(s, "'" + s.text + "' is not an integer", "arithmetic is on integers (head dims, sequence lengths, SMs)");
        return std::nullopt;
      }
      return Operand{Operand::Kind::literal, -1, model::Value(*n)};
    }
    auto typed = operand(s);
    if (!typed) return std::nullopt;
    if (typed->type != model::ValueType::integer) {
      error(s, "arithmetic is on integers; " + s.text + " is " + (typed->type ? article(*typed->type) : std::string("a literal")));
      return std::nullopt;
    }
    return typed->operand;
  }

  std::optional<Typed> arithmetic(const Syntax& s, Arithmetic::Op op, const Syntax& a, const Syntax& b) {
    auto lhs = integer_operand(a);
    auto rhs = integer_operand(b);
    if (!lhs || !rhs) return std::nullopt;
    if (lhs->kind == Operand::Kind::literal && rhs->kind == Operand::Kind::literal) {
      error(s, "this computes with two literals", "one side must be a fact");
      return std::nullopt;
    }
    m_condition.arithmetic.push_back({op, std::move(*lhs), std::move(*rhs)});
    Typed t;
    t.syntax = &s;
    t.operand = {Operand::Kind::arithmetic, static_cast<int>(m_condition.arithmetic.size() - 1), {}};
    t.type = model::ValueType::integer;
    return t;
  }

  // Converts a literal to the type of the other side of a comparison.
  std::optional<model::Value> coerce(const Syntax& lit, model::ValueType type, std::string_view other) {
    using model::ValueType;
    std::string name(other);
    if (lit.kind == Syntax::Kind::boolean) {
      if (type == ValueType::boolean) return model::Value(lit.text == "true");
      error(lit, name + " is " + article(type) + "; " + lit.text + " is a boolean");
      return std::nullopt;
    }
    if (lit.kind == Syntax::Kind::string) {
      if (type == ValueType::string) return model::Value(lit.text);
      if (type == ValueType::version)
        error(lit, name + " is a version; \"" + lit.text + "\" is a string", "write versions unquoted: " + name + " < 9.3");
      else error(lit, name + " is " + article(type) + "; \"" + lit.text + "\" is a string", "write the value unquoted");
      return std::nullopt;
    }
    if (lit.kind != Syntax::Kind::number) {
      error(lit, "expected a literal");
      return std::nullopt;
    }
    switch (type) {
    case ValueType::version: {
      auto v = model::Version::parse(lit.text);
      if (v && lit.text[0] != '-') return model::Value(std::move(*v));
      error(lit, "'" + lit.text + "' is not a version");
      return std::nullopt;
    }
    case ValueType::integer: {
      if (auto n = util::parse_int(lit.text)) return model::Value(*n);
      error(lit, name + " is an integer; '" + lit.text + "' is not",
            name.ends_with(".sm") ? "compare compute_capability for dotted versions, or write the SM as 90" : "");
      return std::nullopt;
    }
    case ValueType::number: {
      if (auto d = util::parse_double(lit.text)) return model::Value(*d);
      error(lit, "'" + lit.text + "' is not a number");
      return std::nullopt;
    }
    case ValueType::string:
      error(lit, name + " is a string; " + lit.text + " is not", "quote it: \"" + lit.text + "\"");
      return std::nullopt;
    case ValueType::boolean:
      error(lit, name + " is a boolean; compare it with true or false");
      return std::nullopt;
    }
    return std::nullopt;
  }

  static bool numeric(model::ValueType t) { return t == model::ValueType::integer || t == model::ValueType::number; }

  int check_compare(const Syntax& s) {
    static const std::pair<std::string_view, CmpOp> ops[] = {{"==", CmpOp::eq}, {"!=", CmpOp::ne}, {"<", CmpOp::lt},
                                                             {"<=", CmpOp::le}, {">", CmpOp::gt}, {">=", CmpOp::ge}};
    CmpOp op = CmpOp::eq;
    for (auto [text, o] : ops)
      if (s.text == text) op = o;
    auto left = operand(s.kids[0]);
    auto right = operand(s.kids[1]);
    if (!left || !right) return -1;
    if (!left->type && !right->type) return error(s, "this compares two literals", "one side must be a fact or count()");
    // Keep the typed side on the left.
    if (!left->type) {
      std::swap(left, right);
      static const CmpOp flipped[] = {CmpOp::eq, CmpOp::ne, CmpOp::gt, CmpOp::ge, CmpOp::lt, CmpOp::le};
      op = flipped[static_cast<int>(op)];
    }
    model::ValueType type = *left->type;
    std::string name = left->syntax->kind == Syntax::Kind::call && left->syntax->text == "count"
                           ? "count(" + left->syntax->kids[0].text + ")"
                           : left->syntax->kind == Syntax::Kind::name ? left->syntax->text : "the expression";
    Node node;
    node.kind = NodeKind::compare;
    node.op = op;
    node.lhs = left->operand;
    if (!right->type) {
      auto value = coerce(*right->syntax, type, name);
      if (!value) return -1;
      node.rhs = {Operand::Kind::literal, -1, std::move(*value)};
    } else {
      if (*right->type != type && !(numeric(type) && numeric(*right->type)))
        return error(s, "cannot compare " + name + " (" + std::string(model::to_string(type)) + ") with " +
                            right->syntax->text + " (" + std::string(model::to_string(*right->type)) + ")");
      node.rhs = right->operand;
    }
    if ((type == model::ValueType::string || type == model::ValueType::boolean) && op != CmpOp::eq && op != CmpOp::ne)
      return error(s, std::string(model::to_string(type)) + "s compare with == and != only");
    return add(std::move(node));
  }

  int check_in(const Syntax& s) {
    auto left = operand(s.kids[0]);
    if (!left) return -1;
    if (!left->type) return error(s.kids[0], "the left side of 'in' must be a fact or count()");
    model::ValueType type = *left->type;
    const Syntax& right = s.kids[1];
    Node node;
    node.flag = s.kind == Syntax::Kind::not_in;
    node.lhs = left->operand;
    if (right.kind == Syntax::Kind::list) {
      node.kind = NodeKind::in_list;
      bool ok = true;
      for (const auto& item : right.kids) {
        auto value = coerce(item, type, s.kids[0].text);
        if (value) node.list.push_back(std::move(*value));
        else ok = false;
      }
      if (!ok) return -1;
      return add(std::move(node));
    }
    if (right.kind == Syntax::Kind::string) {
      if (type != model::ValueType::version)
        return error(right, "a string after 'in' is a version range, but " + s.kids[0].text + " is " + article(type),
                     "use a list: in [\"" + right.text + "\"]");
      auto range = model::VersionRange::parse(right.text);
      if (!range) return error(right, range.error().message);
      node.kind = NodeKind::in_range;
      node.range = std::move(*range);
      return add(std::move(node));
    }
    return error(right, "'in' takes a list [..] or a version range string \">=1.10,<2.1\"");
  }

  SlotTable& m_table;
  std::vector<SourceError>& m_errors;
  Condition m_condition;
};

} // namespace

std::optional<Condition> compile_condition(std::string_view text, SlotTable& table, std::vector<SourceError>& errors) {
  std::size_t before = errors.size();
  Parser parser(tokenize(text), errors);
  auto syntax = parser.parse();
  if (!syntax || errors.size() != before) return std::nullopt;
  return Checker(table, errors).run(*syntax);
}

std::vector<int> conjuncts(const Condition& condition) {
  if (condition.root < 0) return {};
  const Node& root = condition.nodes[static_cast<std::size_t>(condition.root)];
  if (root.kind == NodeKind::all) return root.children;
  return {condition.root};
}

namespace {

bool operand_slots(const Condition& condition, const Operand& o, std::vector<int>& slots) {
  switch (o.kind) {
  case Operand::Kind::fact: slots.push_back(o.index); return false;
  case Operand::Kind::count: return true;
  case Operand::Kind::literal: return false;
  case Operand::Kind::arithmetic: {
    const Arithmetic& a = condition.arithmetic[static_cast<std::size_t>(o.index)];
    return operand_slots(condition, a.lhs, slots) | operand_slots(condition, a.rhs, slots); // both sides, always
  }
  }
  return false;
}

} // namespace

bool slots_read(const Condition& condition, int node, std::vector<int>& slots) {
  const Node& n = condition.nodes[static_cast<std::size_t>(node)];
  bool counts = false;
  switch (n.kind) {
  case NodeKind::constant: break;
  case NodeKind::fact_true:
  case NodeKind::has:
  case NodeKind::env_is: slots.push_back(n.lhs.index); break;
  case NodeKind::compare: counts = operand_slots(condition, n.lhs, slots) | operand_slots(condition, n.rhs, slots); break;
  case NodeKind::in_list:
  case NodeKind::in_range: counts = operand_slots(condition, n.lhs, slots); break;
  case NodeKind::all:
  case NodeKind::any:
  case NodeKind::negate:
    for (int child : n.children) counts = slots_read(condition, child, slots) || counts;
    break;
  }
  return counts;
}

} // namespace rules::detail
