// The shell reader's small expression languages: $((arithmetic)) and test expressions
// ([ ], [[ ]], test). Both are evaluated only as far as their operands are known; the
// interpreter (shell_words.cpp) expands the words and looks the variables up.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace workload::shell {

enum class Tri { no, yes, unknown };

// Counts nesting (of commands, expansions, parentheses) for as long as it lives, so that the
// reader can refuse input nested deeper than it will follow.
struct Nested {
  int& depth;
  explicit Nested(int& d) : depth(++d) {}
  ~Nested() { --depth; }
  Nested(const Nested&) = delete;
  Nested& operator=(const Nested&) = delete;
};
inline Tri tri(bool b) { return b ? Tri::yes : Tri::no; }

// A variable that $((...)) reads: its text (nullopt when unset) and why its value is not known
// (empty when it is).
struct ArithmeticVariable {
  std::optional<std::string> text;
  std::string why;
};

// The value of an already expanded arithmetic expression (+ - * / % **, unary signs,
// parentheses, variable names), or nullopt when it is not one the reader knows or it overflows.
// why keeps its value when not empty, else becomes the first reason a variable read is unknown.
std::optional<long long> arithmetic_value(const std::string& text,
                                          const std::function<ArithmeticVariable(const std::string& name)>& variable, std::string& why);

// A test expression's value from its expanded arguments: Tri::unknown when any argument holds an
// unknown part, an operator needs the file system, or the expression is not one the reader knows.
// is_set answers -v NAME.
Tri test_expression(const std::vector<std::string>& args, bool unknown, const std::function<bool(const std::string& name)>& is_set);

} // namespace workload::shell
