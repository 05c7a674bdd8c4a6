// PEP 508 markers: a tokenizer (names, quoted strings, operators, parentheses, and / or / in /
// not in) and a recursive descent over `or` of `and` of comparisons, with three-valued logic
// (false and unknown = false, true or unknown = true). A comparison whose two sides read as
// PEP 440 versions under a version operator is a version comparison (pep440.hpp); otherwise the
// operators compare the strings as Python does, `in` / `not in` test substrings, and `~=` is
// unknown.
#include "probe/pep508_markers.hpp"

#include "probe/dist_info.hpp"
#include "probe/pep440.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace probe::pep508 {

namespace {

enum class Tok { name, string, op, open, close, and_, or_, end };

struct Token {
  Tok kind;
  std::string text;
  std::size_t at;
};

util::Error parse_error(std::string_view marker, std::size_t at, std::string_view what) {
  return util::Error{util::ErrorKind::parse,
                     "marker '" + std::string(marker) + "' at " + std::to_string(at + 1) + ": " + std::string(what)};
}

util::Result<std::vector<Token>> tokenize(std::string_view s) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '(' || c == ')') {
      out.push_back({c == '(' ? Tok::open : Tok::close, std::string(1, c), i});
      ++i;
    } else if (c == '"' || c == '\'') {
      auto close = s.find(c, i + 1);
      if (close == std::string_view::npos) return parse_error(s, i, "unterminated string");
      out.push_back({Tok::string, std::string(s.substr(i + 1, close - i - 1)), i});
      i = close + 1;
    } else if (c == '<' || c == '>' || c == '=' || c == '!' || c == '~') {
      std::size_t start = i;
      while (i < s.size() && (s[i] == '<' || s[i] == '>' || s[i] == '=' || s[i] == '!' || s[i] == '~')) ++i;
      std::string op(s.substr(start, i - start));
      if (op != "<" && op != "<=" && op != ">" && op != ">=" && op != "==" && op != "!=" && op != "~=" && op != "===")
        return parse_error(s, start, "unknown operator '" + op + "'");
      out.push_back({Tok::op, op, start});
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t start = i;
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_' || s[i] == '.')) ++i;
      std::string word(s.substr(start, i - start));
      if (word == "and") out.push_back({Tok::and_, word, start});
      else if (word == "or") out.push_back({Tok::or_, word, start});
      else if (word == "in") out.push_back({Tok::op, "in", start});
      else if (word == "not") {
        std::size_t j = i;
        while (j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
        if (s.substr(j, 2) != "in" || (j + 2 < s.size() && std::isalnum(static_cast<unsigned char>(s[j + 2]))))
          return parse_error(s, start, "'not' must be followed by 'in'");
        out.push_back({Tok::op, "not in", start});
        i = j + 2;
      } else {
        out.push_back({Tok::name, word, start});
      }
    } else {
      return parse_error(s, i, std::string("unexpected '") + c + "'");
    }
  }
  out.push_back({Tok::end, "", s.size()});
  return out;
}

// PEP 685: extras compare lower-cased with runs of -_. as one '-': PEP 503's rule for names
// (normalize_distribution_name, which joins with '_'), with '-' as the separator.
std::string normalize_extra(std::string_view name) {
  std::string out = normalize_distribution_name(name);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

bool is_version_op(std::string_view op) { return op != "in" && op != "not in"; }

std::optional<bool> compare_values(std::string lhs, const std::string& op, std::string rhs, bool extra) {
  if (extra) {
    lhs = normalize_extra(lhs);
    rhs = normalize_extra(rhs);
  }
  if (op == "in") return rhs.find(lhs) != std::string::npos;
  if (op == "not in") return rhs.find(lhs) == std::string::npos;
  if (!extra && is_version_op(op) && pep440::parse(lhs)) {
    if (auto ok = pep440::satisfies_clause(lhs, op + rhs)) return ok;
  }
  // PEP 508: without a version on both sides, Python's own operator on the strings.
  if (op == "==" || op == "===") return lhs == rhs;
  if (op == "!=") return lhs != rhs;
  if (op == "<") return lhs < rhs;
  if (op == "<=") return lhs <= rhs;
  if (op == ">") return lhs > rhs;
  if (op == ">=") return lhs >= rhs;
  return std::nullopt; // ~= between strings that are not versions: undefined
}

class Evaluator {
public:
  Evaluator(std::string_view marker, std::vector<Token> tokens, const MarkerEnvironment& env, std::string_view extra)
      : m_marker(marker), m_tokens(std::move(tokens)), m_env(env), m_extra(extra) {}

  util::Result<std::optional<bool>> run() {
    Tri value = NVTE_TRY(or_expr());
    if (peek().kind != Tok::end) return parse_error(m_marker, peek().at, "unexpected '" + peek().text + "'");
    if (value == Tri::unknown) return std::optional<bool>{};
    return std::optional<bool>{value == Tri::yes};
  }

private:
  // Three-valued logic as plain values (GCC 12 misreads optional<bool> in these loops).
  enum class Tri { no, yes, unknown };

  const Token& peek() const { return m_tokens[m_at]; }
  const Token& next() { return m_tokens[m_at < m_tokens.size() - 1 ? m_at++ : m_at]; }

  util::Result<Tri> or_expr() {
    Tri left = NVTE_TRY(and_expr());
    while (peek().kind == Tok::or_) {
      next();
      Tri right = NVTE_TRY(and_expr());
      if (left == Tri::yes || right == Tri::yes) left = Tri::yes;
      else if (left == Tri::unknown || right == Tri::unknown) left = Tri::unknown;
      else left = Tri::no;
    }
    return left;
  }

  util::Result<Tri> and_expr() {
    Tri left = NVTE_TRY(atom());
    while (peek().kind == Tok::and_) {
      next();
      Tri right = NVTE_TRY(atom());
      if (left == Tri::no || right == Tri::no) left = Tri::no;
      else if (left == Tri::unknown || right == Tri::unknown) left = Tri::unknown;
      else left = Tri::yes;
    }
    return left;
  }

  util::Result<Tri> atom() {
    if (peek().kind == Tok::open) {
      next();
      Tri inner = NVTE_TRY(or_expr());
      if (peek().kind != Tok::close) return parse_error(m_marker, peek().at, "expected ')'");
      next();
      return inner;
    }
    Token lhs = next();
    if (lhs.kind != Tok::name && lhs.kind != Tok::string) return parse_error(m_marker, lhs.at, "expected a variable or a string");
    Token op = next();
    if (op.kind != Tok::op) return parse_error(m_marker, op.at, "expected a comparison operator");
    Token rhs = next();
    if (rhs.kind != Tok::name && rhs.kind != Tok::string) return parse_error(m_marker, rhs.at, "expected a variable or a string");
    bool extra = (lhs.kind == Tok::name && lhs.text == "extra") || (rhs.kind == Tok::name && rhs.text == "extra");
    auto left = value(lhs);
    auto right = value(rhs);
    if (!left || !right) return Tri::unknown;
    auto result = compare_values(*left, op.text, *right, extra);
    if (!result.has_value()) return Tri::unknown;
    return *result ? Tri::yes : Tri::no;
  }

  std::optional<std::string> value(const Token& t) const {
    if (t.kind == Tok::string) return t.text;
    if (t.text == "extra") return std::string(m_extra);
    auto it = m_env.find(t.text);
    if (it == m_env.end()) return std::nullopt;
    return it->second;
  }

  std::string_view m_marker;
  std::vector<Token> m_tokens;
  std::size_t m_at = 0;
  const MarkerEnvironment& m_env;
  std::string_view m_extra;
};

} // namespace

MarkerEnvironment linux_cpython_environment(std::string_view python_full_version, std::string_view machine,
                                            std::string_view kernel_release) {
  MarkerEnvironment env{{"os_name", "posix"},
                        {"sys_platform", "linux"},
                        {"platform_system", "Linux"},
                        {"platform_python_implementation", "CPython"},
                        {"implementation_name", "cpython"}};
  if (!python_full_version.empty()) {
    env["python_full_version"] = std::string(python_full_version);
    env["implementation_version"] = std::string(python_full_version);
    auto parts = util::split(python_full_version, '.');
    env["python_version"] = parts.size() >= 2 ? std::string(parts[0]) + "." + std::string(parts[1]) : std::string(python_full_version);
  }
  if (!machine.empty()) env["platform_machine"] = std::string(machine);
  if (!kernel_release.empty()) env["platform_release"] = std::string(kernel_release);
  return env;
}

util::Result<std::optional<bool>> evaluate(std::string_view marker, const MarkerEnvironment& env, std::string_view extra) {
  auto tokens = NVTE_TRY(tokenize(marker));
  return Evaluator(marker, std::move(tokens), env, extra).run();
}

} // namespace probe::pep508
