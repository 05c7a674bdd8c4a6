// Arithmetic and test expressions of the shell reader (shell_expressions.hpp), each a small
// recursive-descent parser over text the interpreter has already expanded.
#include "workload/shell_expressions.hpp"

#include "workload/shell_lexer.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <string_view>

namespace workload::shell {

std::optional<long long> arithmetic_value(const std::string& text,
                                          const std::function<ArithmeticVariable(const std::string& name)>& variable, std::string& why) {
  std::size_t pos = 0;
  bool failed = false;
  std::function<long long()> sum, product, power, unary;
  auto skip = [&] {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  };
  int depth = 0;
  unary = [&]() -> long long {
    if (depth > 64) {
      failed = true;
      return 0;
    }
    Nested level(depth);
    skip();
    if (pos < text.size() && (text[pos] == '-' || text[pos] == '+')) {
      char sign = text[pos++];
      long long v = unary();
      if (sign == '-' && v == std::numeric_limits<long long>::min()) failed = true;
      return sign == '-' && !failed ? -v : v;
    }
    if (pos < text.size() && text[pos] == '(') {
      ++pos;
      long long v = sum();
      skip();
      if (pos < text.size() && text[pos] == ')') ++pos;
      else failed = true;
      return v;
    }
    if (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      std::size_t start = pos;
      while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
      auto v = util::parse_int(text.substr(start, pos - start));
      if (!v) failed = true;
      return v.value_or(0);
    }
    if (pos < text.size() && is_name_start(text[pos])) {
      std::size_t start = pos;
      while (pos < text.size() && is_name_char(text[pos])) ++pos;
      auto var = variable(text.substr(start, pos - start));
      if (why.empty()) why = var.why;
      if (!var.text) return 0;
      auto v = util::parse_int(util::trim(*var.text));
      if (!v) failed = true;
      return v.value_or(0);
    }
    failed = true;
    return 0;
  };
  power = [&]() -> long long {
    long long base = unary();
    skip();
    if (text.compare(pos, 2, "**") == 0) {
      pos += 2;
      long long exponent = power();
      long long result = 1;
      for (long long k = 0; k < exponent && k < 64 && !failed; ++k) failed = __builtin_mul_overflow(result, base, &result);
      return result;
    }
    return base;
  };
  product = [&]() -> long long {
    long long v = power();
    for (;;) {
      skip();
      if (pos >= text.size() || std::string_view("*/%").find(text[pos]) == std::string_view::npos || text.compare(pos, 2, "**") == 0)
        return v;
      char op = text[pos++];
      long long rhs = power();
      if ((op == '/' || op == '%') && (rhs == 0 || (rhs == -1 && v == std::numeric_limits<long long>::min()))) {
        failed = true;
        return 0;
      }
      if (op == '*') failed = failed || __builtin_mul_overflow(v, rhs, &v);
      else v = op == '/' ? v / rhs : v % rhs;
    }
  };
  sum = [&]() -> long long {
    long long v = product();
    for (;;) {
      skip();
      if (pos >= text.size() || (text[pos] != '+' && text[pos] != '-')) return v;
      char op = text[pos++];
      long long rhs = product();
      failed = failed || (op == '+' ? __builtin_add_overflow(v, rhs, &v) : __builtin_sub_overflow(v, rhs, &v));
    }
  };
  long long result = sum();
  skip();
  if (failed || pos != text.size()) return std::nullopt;
  return result;
}

Tri test_expression(const std::vector<std::string>& args, bool unknown, const std::function<bool(const std::string& name)>& is_set) {
  std::size_t pos = 0;
  std::function<std::optional<bool>()> expr_or, expr_and, expr_not, primary;
  auto at = [&](std::string_view s) { return pos < args.size() && args[pos] == s; };
  primary = [&]() -> std::optional<bool> {
    if (at("(")) {
      ++pos;
      auto v = expr_or();
      if (at(")")) ++pos;
      return v;
    }
    // Binary operators.
    if (pos + 2 < args.size()) {
      const std::string& op = args[pos + 1];
      static const std::vector<std::string> k_binary = {"=",   "==",  "!=",  "<",  ">",   "-eq", "-ne", "-lt",
                                                        "-le", "-gt", "-ge", "=~", "-nt", "-ot", "-ef"};
      if (std::find(k_binary.begin(), k_binary.end(), op) != k_binary.end()) {
        const std::string& a = args[pos];
        const std::string& b = args[pos + 2];
        pos += 3;
        if (op == "=" || op == "==") return a == b;
        if (op == "!=") return a != b;
        if (op == "<") return a < b;
        if (op == ">") return a > b;
        if (op == "=~" || op == "-nt" || op == "-ot" || op == "-ef") return std::nullopt;
        auto x = util::parse_int(a), y = util::parse_int(b);
        if (!x || !y) return std::nullopt;
        if (op == "-eq") return *x == *y;
        if (op == "-ne") return *x != *y;
        if (op == "-lt") return *x < *y;
        if (op == "-le") return *x <= *y;
        if (op == "-gt") return *x > *y;
        return *x >= *y;
      }
    }
    if (pos + 1 < args.size() && args[pos].size() == 2 && args[pos][0] == '-') {
      std::string op = args[pos];
      const std::string& a = args[pos + 1];
      pos += 2;
      if (op == "-n") return !a.empty();
      if (op == "-z") return a.empty();
      if (op == "-v") return is_set(a);
      return std::nullopt; // -f, -d, -e, ...: the job's file system
    }
    if (pos < args.size()) return !args[pos++].empty();
    return false;
  };
  expr_not = [&]() -> std::optional<bool> {
    if (at("!")) {
      ++pos;
      auto v = expr_not();
      if (!v) return std::nullopt;
      return !*v;
    }
    return primary();
  };
  expr_and = [&]() -> std::optional<bool> {
    auto v = expr_not();
    while (at("-a") || at("&&")) {
      ++pos;
      auto w = expr_not();
      if (v == std::optional<bool>(false) || w == std::optional<bool>(false)) v = false;
      else if (!v || !w) v = std::nullopt;
      else v = true;
    }
    return v;
  };
  expr_or = [&]() -> std::optional<bool> {
    auto v = expr_and();
    while (at("-o") || at("||")) {
      ++pos;
      auto w = expr_and();
      if (v == std::optional<bool>(true) || w == std::optional<bool>(true)) v = true;
      else if (!v || !w) v = std::nullopt;
      else v = false;
    }
    return v;
  };
  auto result = expr_or();
  if (unknown || !result || pos != args.size()) return Tri::unknown;
  return tri(*result);
}

} // namespace workload::shell
