// Reading a shell script's words without running it.
//
// Two layers, as a shell has them. The lexer (shell_lexer.hpp) turns text into tokens: words
// (kept as segments of literal text, ${parameter}, $((arithmetic)) and $(command), each marked
// quoted or not, so that expansion can split exactly where the shell would), operators, newlines.
// The interpreter, here, walks the grammar (lists,
// && / ||, pipelines, if, loops, case, functions, simple commands) with an `active` flag instead
// of running anything: assignments change its variables, test expressions are evaluated when
// their operands are known, and every word of an active command, array element and assigned
// value is handed out with the parts whose value is unknown marked. Code that may or may not run
// (a branch whose condition is unknown, a loop body) is read as active, with its words marked.
#include "workload/shell_words.hpp"

#include "workload/shell_expressions.hpp"
#include "workload/shell_lexer.hpp"

#include "util/input_guard.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <fnmatch.h>
#include <map>

namespace workload {

namespace {

using shell::Heredoc;
using shell::is_name_char;
using shell::Lexer;
using shell::RawWord;
using shell::Segment;
using shell::Token;
using shell::tri;
using shell::Tri;
using shell::valid_name;
using util::Error;
using util::ErrorKind;
using util::parse_int;
using util::Result;

// ---- values ----------------------------------------------------------------------------------

using Unknowns = std::vector<ScriptUnknown>;

// A reason quotes the script (a ${...} it cannot read, a name, its path); at most this much of it,
// so that a reason copied to every piece of a long value stays small whatever the script holds.
constexpr std::size_t k_max_reason = 200;

std::string bounded(std::string why) {
  if (why.size() <= k_max_reason) return why;
  std::size_t cut = k_max_reason;
  while (cut > 0 && (static_cast<unsigned char>(why[cut]) & 0xC0) == 0x80) --cut; // not inside a UTF-8 character
  why.resize(cut);
  return why + "…";
}

// The whole of a text unknown for one reason (an empty range where it expanded to nothing).
Unknowns whole(const std::string& text, const std::string& why) {
  if (why.empty()) return {};
  return {ScriptUnknown{0, text.size(), bounded(why)}};
}

std::string first_reason(const Unknowns& unknown) { return unknown.empty() ? std::string() : unknown.front().why; }

struct Var {
  std::vector<std::string> values; // one for a string, the elements for an array
  bool array = false;
  std::vector<Unknowns> unknowns;  // per value: the parts that cannot be known, and why

  static Var scalar(std::string text, const std::string& why) {
    Unknowns u = whole(text, why);
    return Var{{std::move(text)}, false, {std::move(u)}};
  }
  Unknowns ranges(std::size_t i) const { return i < unknowns.size() ? unknowns[i] : Unknowns{}; }
  std::string why(std::size_t i) const { return first_reason(ranges(i)); }
};

// A field being built by expansion: text and the unknown parts in it.
struct ExpandedField {
  std::string text;
  std::vector<ScriptUnknown> unknown;
  bool exists = false; // a quoted empty string is a field; an unquoted empty expansion is not
};

struct State {
  std::map<std::string, Var, std::less<>> vars;
  std::vector<ScriptWord> out;
};

class Interpreter {
public:
  Interpreter(Lexer& lexer, std::string_view source, const ScriptEnvironment& environment, State& state)
      : m_lex(lexer), m_source(source), m_env(environment), m_state(state) {}

  Result<void> run() {
    NVTE_TRY_VOID(advance());
    std::string stopped;
    NVTE_TRY_VOID(list({}, true, stopped));
    if (m_tok.type != Token::Type::end) return m_lex.error("unexpected '" + describe(m_tok) + "'");
    return {};
  }

private:
  // ---- grammar ----

  Result<void> advance() {
    m_tok = NVTE_TRY(m_lex.next());
    return {};
  }

  static std::string describe(const Token& t) {
    if (t.type == Token::Type::op) return t.op;
    if (t.type == Token::Type::newline) return "newline";
    if (t.type == Token::Type::end) return "end of file";
    auto plain = t.word.plain();
    return plain ? *plain : "word";
  }

  bool at_keyword(std::string_view keyword) const {
    if (m_tok.type != Token::Type::word) return false;
    auto plain = m_tok.word.plain();
    return plain && *plain == keyword;
  }

  bool at_any(const std::vector<std::string_view>& keywords) const {
    for (auto k : keywords)
      if (at_keyword(k)) return true;
    return false;
  }

  Result<void> skip_newlines() {
    while (m_tok.type == Token::Type::newline || (m_tok.type == Token::Type::op && m_tok.op == ";")) NVTE_TRY_VOID(advance());
    return {};
  }

  Result<void> expect_keyword(std::string_view keyword, std::string_view after) {
    NVTE_TRY_VOID(skip_newlines());
    if (!at_keyword(keyword))
      return m_lex.error("expected '" + std::string(keyword) + "' after " + std::string(after) + ", found '" + describe(m_tok) + "'");
    return advance();
  }

  // Commands until one of the terminator keywords (or ')' / ';;' / end); the status of the last.
  Result<Tri> list(const std::vector<std::string_view>& terminators, bool active, std::string& stopped) {
    Tri status = Tri::yes;
    for (;;) {
      NVTE_TRY_VOID(skip_newlines());
      if (m_tok.type == Token::Type::end) return status;
      if (m_tok.type == Token::Type::op && (m_tok.op == ")" || m_tok.op == ";;" || m_tok.op == ";&" || m_tok.op == ";;&")) return status;
      if (at_any(terminators)) {
        stopped = *m_tok.word.plain();
        return status;
      }
      if (at_keyword("}") && std::find(terminators.begin(), terminators.end(), "}") == terminators.end()) return status;
      status = NVTE_TRY(and_or(active));
      if (m_tok.type == Token::Type::op && (m_tok.op == ";" || m_tok.op == "&")) NVTE_TRY_VOID(advance());
    }
  }

  Result<Tri> and_or(bool active) {
    Tri status = NVTE_TRY(pipeline(active));
    while (m_tok.type == Token::Type::op && (m_tok.op == "&&" || m_tok.op == "||")) {
      bool and_then = m_tok.op == "&&";
      int line = m_tok.line;
      NVTE_TRY_VOID(advance());
      while (m_tok.type == Token::Type::newline) NVTE_TRY_VOID(advance());
      Tri runs = and_then ? status : status == Tri::unknown ? Tri::unknown : tri(status == Tri::no);
      if (runs == Tri::unknown) m_uncertain.push_back("after the " + std::string(and_then ? "&&" : "||") + " at line " +
                                                      std::to_string(line) + ", whose left side the doctor cannot evaluate");
      Tri next = NVTE_TRY(pipeline(active && runs != Tri::no));
      if (runs == Tri::unknown) m_uncertain.pop_back();
      status = runs == Tri::no ? status : runs == Tri::unknown ? Tri::unknown : next;
    }
    return status;
  }

  Result<Tri> pipeline(bool active) {
    bool negate = false;
    if (at_keyword("!")) {
      negate = true;
      NVTE_TRY_VOID(advance());
    }
    Tri status = NVTE_TRY(command(active));
    while (m_tok.type == Token::Type::op && (m_tok.op == "|" || m_tok.op == "|&")) {
      NVTE_TRY_VOID(advance());
      while (m_tok.type == Token::Type::newline) NVTE_TRY_VOID(advance());
      status = NVTE_TRY(command(active));
    }
    if (negate && status != Tri::unknown) status = tri(status == Tri::no);
    return status;
  }

  // Nesting (compound commands, ${...} inside ${...}, heredocs in heredocs) is bounded, so that
  // no script can exhaust the stack.
  static constexpr int k_max_depth = 40;
  using Nested = shell::Nested;

  Result<Tri> command(bool active) {
    Nested nested(m_depth);
    if (m_depth > k_max_depth) return m_lex.error("commands nested more than " + std::to_string(k_max_depth) + " deep");
    if (at_keyword("if")) return if_clause(active);
    if (at_keyword("for") || at_keyword("while") || at_keyword("until")) return loop(active);
    if (at_keyword("case")) return case_clause(active);
    if (at_keyword("function")) return function_definition(active);
    if (at_keyword("{")) {
      NVTE_TRY_VOID(advance());
      std::string stopped;
      Tri status = NVTE_TRY(list({"}"}, active, stopped));
      NVTE_TRY_VOID(expect_keyword("}", "a { group"));
      NVTE_TRY_VOID(redirections());
      return status;
    }
    if (m_tok.type == Token::Type::op && m_tok.op == "(") {
      NVTE_TRY_VOID(advance());
      std::string stopped;
      Tri status = NVTE_TRY(list({}, active, stopped));
      if (!(m_tok.type == Token::Type::op && m_tok.op == ")")) return m_lex.error("expected ')' to close a subshell");
      NVTE_TRY_VOID(advance());
      NVTE_TRY_VOID(redirections());
      return status;
    }
    return simple_command(active);
  }

  Result<void> redirections() {
    while (m_tok.type == Token::Type::op && is_redirection(m_tok.op)) {
      bool heredoc = m_tok.op == "<<" || m_tok.op == "<<-";
      NVTE_TRY_VOID(advance());
      if (!heredoc && m_tok.type == Token::Type::word) NVTE_TRY_VOID(advance());
    }
    return {};
  }

  static bool is_redirection(const std::string& op) {
    return op == "<" || op == ">" || op == ">>" || op == "<<" || op == "<<-" || op == "<<<" || op == "<&" || op == ">&" ||
           op == "&>" || op == "&>>" || op == ">|" || op == "<>";
  }

  Result<Tri> if_clause(bool active) {
    int line = m_tok.line;
    NVTE_TRY_VOID(advance());
    bool decided = false; // an earlier branch surely ran
    bool maybe = false;   // an earlier branch may have run
    for (;;) {
      std::string stopped;
      Tri cond = NVTE_TRY(list({"then"}, active && !decided, stopped));
      NVTE_TRY_VOID(expect_keyword("then", "the condition of the if at line " + std::to_string(line)));
      bool runs = active && !decided && cond != Tri::no;
      bool uncertain = runs && (cond == Tri::unknown || maybe);
      if (uncertain) m_uncertain.push_back("inside the if at line " + std::to_string(line) + ", whose condition the doctor cannot evaluate");
      NVTE_TRY_VOID(list({"elif", "else", "fi"}, runs, stopped));
      if (uncertain) m_uncertain.pop_back();
      if (runs && cond == Tri::yes && !maybe) decided = true;
      if (runs && cond == Tri::unknown) maybe = true;
      if (stopped == "elif") {
        NVTE_TRY_VOID(advance());
        continue;
      }
      if (stopped == "else") {
        NVTE_TRY_VOID(advance());
        bool else_runs = active && !decided;
        if (else_runs && maybe) m_uncertain.push_back("inside the else of the if at line " + std::to_string(line) +
                                                      ", whose condition the doctor cannot evaluate");
        NVTE_TRY_VOID(list({"fi"}, else_runs, stopped));
        if (else_runs && maybe) m_uncertain.pop_back();
      }
      if (stopped != "fi") return m_lex.error("the if at line " + std::to_string(line) + " has no fi");
      NVTE_TRY_VOID(advance());
      NVTE_TRY_VOID(redirections());
      return Tri::yes;
    }
  }

  Result<Tri> loop(bool active) {
    int line = m_tok.line;
    std::string kind = *m_tok.word.plain();
    NVTE_TRY_VOID(advance());
    std::string why = "inside the " + kind + " loop at line " + std::to_string(line) + ", which may run any number of times";
    m_uncertain.push_back(why);
    if (kind == "for") {
      if (m_tok.type == Token::Type::op && m_tok.op == "(") {
        // for (( ... )): an arithmetic loop header.
        while (!(m_tok.type == Token::Type::op && m_tok.op == ")") && m_tok.type != Token::Type::end) NVTE_TRY_VOID(advance());
        NVTE_TRY_VOID(advance());
        if (m_tok.type == Token::Type::op && m_tok.op == ")") NVTE_TRY_VOID(advance());
      } else {
        auto name = m_tok.type == Token::Type::word ? m_tok.word.plain() : std::nullopt;
        if (!name || !valid_name(*name)) return m_lex.error("expected a variable name after for");
        NVTE_TRY_VOID(advance());
        if (at_keyword("in")) {
          NVTE_TRY_VOID(advance());
          while (m_tok.type == Token::Type::word) {
            if (active) NVTE_TRY_VOID(emit_word(m_tok.word));
            NVTE_TRY_VOID(advance());
          }
        }
        if (active) m_state.vars[*name] = Var::scalar("", bounded("$" + *name) + " is a loop variable");
      }
    } else {
      std::string stopped;
      NVTE_TRY_VOID(list({"do"}, active, stopped));
    }
    NVTE_TRY_VOID(expect_keyword("do", "the " + kind + " at line " + std::to_string(line)));
    std::string stopped;
    NVTE_TRY_VOID(list({"done"}, active, stopped));
    NVTE_TRY_VOID(expect_keyword("done", "the body of the " + kind + " at line " + std::to_string(line)));
    m_uncertain.pop_back();
    NVTE_TRY_VOID(redirections());
    return Tri::unknown;
  }

  Result<Tri> case_clause(bool active) {
    int line = m_tok.line;
    NVTE_TRY_VOID(advance());
    if (m_tok.type != Token::Type::word) return m_lex.error("expected a word after case");
    RawWord subject = m_tok.word;
    NVTE_TRY_VOID(advance());
    while (m_tok.type == Token::Type::newline) NVTE_TRY_VOID(advance());
    if (!at_keyword("in")) return m_lex.error("expected 'in' in the case at line " + std::to_string(line));
    NVTE_TRY_VOID(advance());
    // The subject decides the branch when it and the patterns are known.
    std::optional<std::string> value;
    if (active) {
      auto fields = NVTE_TRY(expand(subject, false));
      if (!fields.empty() && fields[0].unknown.empty()) value = fields[0].text;
    }
    bool decided = false;
    std::string uncertain = "inside a branch of the case at line " + std::to_string(line) + ", whose word the doctor cannot know";
    for (;;) {
      NVTE_TRY_VOID(skip_newlines());
      if (at_keyword("esac")) break;
      if (m_tok.type == Token::Type::end) return m_lex.error("the case at line " + std::to_string(line) + " has no esac");
      if (m_tok.type == Token::Type::op && m_tok.op == "(") NVTE_TRY_VOID(advance());
      // Whether a pattern matched: 1 yes, 0 no, -1 unknown.
      int matches = 0;
      while (!(m_tok.type == Token::Type::op && m_tok.op == ")")) {
        if (m_tok.type == Token::Type::end || m_tok.type == Token::Type::newline)
          return m_lex.error("a pattern of the case at line " + std::to_string(line) + " has no ')'");
        if (m_tok.type == Token::Type::word && active && value && matches == 0) {
          bool quoted = std::any_of(m_tok.word.segments.begin(), m_tok.word.segments.end(), [](const Segment& g) { return g.quoted; });
          auto fields = NVTE_TRY(expand(m_tok.word, false));
          if (fields.empty() || !fields[0].unknown.empty()) matches = -1;
          else if (quoted) matches = fields[0].text == *value ? 1 : 0;
          else matches = ::fnmatch(fields[0].text.c_str(), value->c_str(), 0) == 0 ? 1 : 0;
        }
        NVTE_TRY_VOID(advance());
      }
      NVTE_TRY_VOID(advance());
      bool known = active && value && matches >= 0;
      bool runs = active && !decided && (!known || matches == 1);
      if (runs && !known) m_uncertain.push_back(uncertain);
      std::string stopped;
      NVTE_TRY_VOID(list({"esac"}, runs, stopped));
      if (runs && !known) m_uncertain.pop_back();
      if (runs && known) decided = true;
      if (m_tok.type == Token::Type::op && (m_tok.op == ";;" || m_tok.op == ";&" || m_tok.op == ";;&")) NVTE_TRY_VOID(advance());
    }
    NVTE_TRY_VOID(advance());
    NVTE_TRY_VOID(redirections());
    return Tri::yes;
  }

  Result<Tri> function_body(bool active, const std::string& name, int line) {
    m_uncertain.push_back(bounded("inside the function " + name) + " (line " + std::to_string(line) +
                          "), which runs only where it is called");
    while (m_tok.type == Token::Type::newline) NVTE_TRY_VOID(advance());
    Tri status = NVTE_TRY(command(active));
    m_uncertain.pop_back();
    return status == Tri::no ? Tri::no : Tri::yes;
  }

  Result<Tri> function_definition(bool active) {
    int line = m_tok.line;
    NVTE_TRY_VOID(advance());
    auto name = m_tok.type == Token::Type::word ? m_tok.word.plain() : std::nullopt;
    if (!name) return m_lex.error("expected a function name");
    NVTE_TRY_VOID(advance());
    if (m_tok.type == Token::Type::op && m_tok.op == "(") {
      NVTE_TRY_VOID(advance());
      if (!(m_tok.type == Token::Type::op && m_tok.op == ")")) return m_lex.error("expected ')' after " + *name + "(");
      NVTE_TRY_VOID(advance());
    }
    return function_body(active, *name, line);
  }

  Result<Tri> simple_command(bool active) {
    std::vector<RawWord> words;
    int line = m_tok.line;
    bool double_bracket = false;
    while (true) {
      if (m_tok.type == Token::Type::word) {
        if (words.empty() && m_tok.word.plain() == std::optional<std::string>("[[")) double_bracket = true;
        words.push_back(m_tok.word);
        NVTE_TRY_VOID(advance());
        // name ( ) { ... }: a function definition.
        if (words.size() == 1 && m_tok.type == Token::Type::op && m_tok.op == "(" && words[0].plain() && valid_name(*words[0].plain())) {
          NVTE_TRY_VOID(advance());
          if (m_tok.type == Token::Type::op && m_tok.op == ")") {
            NVTE_TRY_VOID(advance());
            return function_body(active, *words[0].plain(), line);
          }
          return m_lex.error("expected ')' after " + *words[0].plain() + "(");
        }
        if (double_bracket && words.back().plain() == std::optional<std::string>("]]")) double_bracket = false;
        continue;
      }
      if (m_tok.type == Token::Type::op && double_bracket) {
        // Inside [[ ]] the operators are the test's own.
        RawWord op;
        op.line = m_tok.line;
        op.segments.push_back({Segment::Kind::text, m_tok.op, false});
        words.push_back(op);
        NVTE_TRY_VOID(advance());
        continue;
      }
      if (m_tok.type == Token::Type::op && is_redirection(m_tok.op)) {
        bool heredoc = m_tok.op == "<<" || m_tok.op == "<<-";
        NVTE_TRY_VOID(advance());
        if (!heredoc) {
          if (m_tok.type != Token::Type::word) return m_lex.error("a redirection without a target");
          NVTE_TRY_VOID(advance());
        }
        continue;
      }
      break;
    }
    if (words.empty()) {
      if (m_tok.type == Token::Type::op && m_tok.op != ";" && m_tok.op != "&" && m_tok.op != ")" && m_tok.op != ";;")
        return m_lex.error("unexpected '" + m_tok.op + "'");
      return Tri::yes;
    }
    Tri status = active ? NVTE_TRY(execute(words)) : Tri::yes;
    // Heredoc bodies were read when the lexer passed the end of this line (the token after the
    // command): each is a script of its own (an sbatch or bash -s payload), read with the same
    // variables.
    for (auto& doc : m_lex.take_heredocs()) {
      if (!active) continue;
      Lexer inner(doc.body, m_source, doc.line);
      Interpreter nested(inner, m_source, m_env, m_state);
      nested.m_uncertain = m_uncertain;
      nested.m_depth = m_depth + 1;
      NVTE_TRY_VOID(nested.run());
    }
    return status;
  }

  // ---- executing a simple command ----

  Result<Tri> execute(std::vector<RawWord>& words) {
    std::size_t first = 0;
    // Leading assignments (NAME=value, NAME=(...)).
    while (first < words.size()) {
      if (words[first].is_array) {
        NVTE_TRY_VOID(assign_array(words[first]));
        ++first;
        continue;
      }
      auto split = assignment(words[first]);
      if (!split) break;
      NVTE_TRY_VOID(assign_scalar(words[first], split->first, split->second));
      ++first;
    }
    if (first == words.size()) return Tri::yes;
    std::vector<RawWord> rest(words.begin() + static_cast<std::ptrdiff_t>(first), words.end());
    auto name = rest[0].plain();
    if (name && (*name == "export" || *name == "declare" || *name == "typeset" || *name == "local" || *name == "readonly")) {
      for (std::size_t i = 1; i < rest.size(); ++i) {
        if (rest[i].is_array) {
          NVTE_TRY_VOID(assign_array(rest[i]));
        } else if (auto split = assignment(rest[i])) {
          NVTE_TRY_VOID(assign_scalar(rest[i], split->first, split->second));
        }
      }
      return Tri::yes;
    }
    if (name && *name == "unset") {
      for (std::size_t i = 1; i < rest.size(); ++i)
        if (auto n = rest[i].plain()) m_state.vars.erase(*n);
      return Tri::yes;
    }
    std::vector<ExpandedField> fields;
    for (auto& w : rest) {
      if (w.is_array) {
        NVTE_TRY_VOID(assign_array(w));
        continue;
      }
      auto expanded = NVTE_TRY(expand(w, true));
      emit(expanded, w.line);
      fields.insert(fields.end(), expanded.begin(), expanded.end());
    }
    if (!name) return Tri::yes;
    if (*name == "true" || *name == ":") return Tri::yes;
    if (*name == "false") return Tri::no;
    if (*name == "[" || *name == "test" || *name == "[[") {
      std::vector<ExpandedField> args(fields.begin() + 1, fields.end());
      if ((*name == "[" || *name == "[[") && (args.empty() || args.back().text != (*name == "[" ? "]" : "]]")))
        return m_lex.error("'" + *name + "' without its closing bracket");
      if (*name != "test") args.pop_back();
      return evaluate_test(args);
    }
    return Tri::yes; // a command the doctor does not run: assumed to succeed
  }

  // NAME=value or NAME+=value: the name, and whether it appends.
  static std::optional<std::pair<std::string, bool>> assignment(const RawWord& w) {
    if (w.segments.empty() || w.segments[0].kind != Segment::Kind::text || w.segments[0].quoted) return std::nullopt;
    const std::string& head = w.segments[0].text;
    auto eq = head.find('=');
    if (eq == std::string::npos) return std::nullopt;
    std::string name = head.substr(0, eq);
    bool append = !name.empty() && name.back() == '+';
    if (append) name.pop_back();
    if (!valid_name(name)) return std::nullopt;
    return std::make_pair(name, append);
  }

  Result<void> assign_scalar(const RawWord& w, const std::string& name, bool append) {
    RawWord value = w;
    auto eq = value.segments[0].text.find('=');
    value.segments[0].text.erase(0, eq + 1);
    auto fields = NVTE_TRY(expand(value, false));
    ExpandedField f = fields.empty() ? ExpandedField{} : fields[0];
    emit({f}, w.line, /*keep_empty=*/false);
    Var& var = m_state.vars[name];
    Unknowns unknown = stored_unknowns(f);
    if (append && !var.values.empty()) {
      std::size_t offset = var.values.back().size();
      var.values.back() += f.text;
      var.unknowns.resize(var.values.size());
      for (const auto& u : unknown) var.unknowns.back().push_back({u.begin + offset, u.end + offset, u.why});
    } else {
      var = Var{{f.text}, false, {unknown}};
    }
    return {};
  }

  Result<void> assign_array(const RawWord& w) {
    std::vector<std::string> elements;
    std::vector<Unknowns> unknowns;
    for (const auto& element : w.elements) {
      auto fields = NVTE_TRY(expand(element, true));
      emit(fields, element.line);
      for (const auto& f : fields) {
        elements.push_back(f.text);
        unknowns.push_back(stored_unknowns(f));
      }
    }
    Var& var = m_state.vars[w.array_name];
    if (w.array_append) {
      var.unknowns.resize(var.values.size());
      var.values.insert(var.values.end(), elements.begin(), elements.end());
      var.unknowns.insert(var.unknowns.end(), unknowns.begin(), unknowns.end());
    } else {
      var = Var{elements, true, unknowns};
    }
    var.array = true;
    return {};
  }

  // What of a value being stored cannot be known: its unknown parts, and all of it when it is set
  // in code that may not run.
  Unknowns stored_unknowns(const ExpandedField& f) const {
    Unknowns u = f.unknown;
    if (!m_uncertain.empty()) u.push_back({0, f.text.size(), "set " + m_uncertain.back()});
    return u;
  }

  void emit(const std::vector<ExpandedField>& fields, int line, bool keep_empty = true) {
    for (const auto& f : fields) {
      if (!f.exists && f.unknown.empty() && !keep_empty) continue;
      ScriptWord word{f.text, line, f.unknown};
      if (!m_uncertain.empty()) word.unknown.push_back({0, f.text.size(), m_uncertain.back()});
      m_state.out.push_back(std::move(word));
    }
  }

  Result<void> emit_word(const RawWord& w) {
    auto fields = NVTE_TRY(expand(w, true));
    emit(fields, w.line);
    return {};
  }

  // ---- expansion ----

  struct Value {
    std::vector<std::string> parts; // one for a scalar; the elements for ${A[@]} / $@
    bool each = false;              // the parts are separate words ("${A[@]}")
    std::vector<Unknowns> unknowns; // per part: what of it cannot be known

    Value() = default;
    Value(std::vector<std::string> p, bool e, const std::string& why) : parts(std::move(p)), each(e) {
      for (const auto& part : parts) unknowns.push_back(whole(part, why));
    }
    Value(std::vector<std::string> p, bool e, std::vector<Unknowns> u) : parts(std::move(p)), each(e), unknowns(std::move(u)) {
      unknowns.resize(parts.size());
    }
    Unknowns ranges(std::size_t i) const { return i < unknowns.size() ? unknowns[i] : Unknowns{}; }
  };

  std::optional<Var> lookup(std::string_view name) const {
    if (auto it = m_state.vars.find(name); it != m_state.vars.end()) return it->second;
    if (name.empty()) return std::nullopt;
    if (std::isdigit(static_cast<unsigned char>(name[0])) || name == "@" || name == "*" || name == "#" || name == "?" ||
        name == "$" || name == "!" || name == "-")
      return std::nullopt;
    if (m_env) {
      if (auto value = m_env(name)) return Var::scalar(*value, {});
    }
    return std::nullopt;
  }

  std::string unset_reason(std::string_view name) const {
    if (!name.empty() && std::isdigit(static_cast<unsigned char>(name[0])) && name != "0")
      return "$" + std::string(name) + " is an argument given to the script, which the doctor does not have";
    if (name == "@" || name == "*") return "$" + std::string(name) + " holds the arguments given to the script, which the doctor does not have";
    return "$" + std::string(name) + " is set neither in " + std::string(m_source) + " nor in the environment";
  }

  Result<Value> parameter(const std::string& spec) {
    Value v;
    std::string text = spec;
    bool braced = !text.empty() && text.front() == '{';
    if (braced) text = text.substr(1, text.size() - 2);
    if (!braced) {
      if (text == "#") return Value{{"0"}, false, std::string()};
      if (text == "0") return Value{{std::string(m_source)}, false, std::string()};
      if (text == "$" || text == "!" || text == "?" || text == "-")
        return Value{{""}, false, "$" + text + " exists only when the script runs"};
      auto var = lookup(text);
      if (!var) return Value{{""}, false, unset_reason(text)};
      return Value{{var->values.empty() ? std::string() : var->values.front()}, false, std::vector<Unknowns>{var->ranges(0)}};
    }
    // ${#NAME}, ${#ARR[@]}: lengths.
    if (text.size() > 1 && text[0] == '#') {
      std::string name = text.substr(1);
      bool count = false;
      if (auto b = name.find('['); b != std::string::npos) {
        count = name.substr(b) == "[@]" || name.substr(b) == "[*]";
        name = name.substr(0, b);
      }
      auto var = lookup(name);
      if (!var) return Value{{"0"}, false, unset_reason(name)};
      std::size_t n = count ? var->values.size() : (var->values.empty() ? 0 : var->values.front().size());
      std::string why;
      for (const auto& u : var->unknowns)
        if (why.empty()) why = first_reason(u);
      return Value{{std::to_string(n)}, false, why};
    }
    std::size_t i = 0;
    while (i < text.size() && (is_name_char(text[i]) || (i == 0 && std::string_view("@*").find(text[i]) != std::string_view::npos))) ++i;
    std::string name = text.substr(0, i);
    if (name.empty()) return Value{{""}, false, "the expansion ${" + text + "} is not one the doctor reads"};
    std::string subscript;
    if (i < text.size() && text[i] == '[') {
      auto close = text.find(']', i);
      if (close == std::string::npos) return m_lex.error("${" + text + "}: no ']'");
      subscript = text.substr(i + 1, close - i - 1);
      i = close + 1;
    }
    std::string op = text.substr(i);
    auto var = lookup(name);
    bool set = var.has_value();
    std::vector<std::string> parts;
    bool each = false;
    std::vector<Unknowns> unknown;
    if (var) {
      if (subscript == "@" || subscript == "*" || name == "@" || name == "*") {
        parts = var->values;
        unknown = var->unknowns;
        each = subscript == "@" || name == "@";
      } else if (!subscript.empty()) {
        auto index = parse_int(subscript);
        if (!index) {
          unknown = {whole("", "the index [" + subscript + "] of " + name + " is not a number")};
          parts = {""};
        } else if (*index >= 0 && static_cast<std::size_t>(*index) < var->values.size()) {
          parts = {var->values[static_cast<std::size_t>(*index)]};
          unknown = {var->ranges(static_cast<std::size_t>(*index))};
        } else {
          parts = {""};
          set = false;
        }
      } else {
        parts = {var->values.empty() ? std::string() : var->values.front()};
        unknown = {var->ranges(0)};
      }
    }
    // A value changed by an operator below is unknown as a whole where any of it was.
    auto collapsed = [&](const std::vector<std::string>& changed) {
      std::vector<Unknowns> out;
      for (std::size_t k = 0; k < changed.size(); ++k)
        out.push_back(whole(changed[k], k < unknown.size() ? first_reason(unknown[k]) : std::string()));
      return out;
    };
    bool empty = !set || (parts.size() == 1 && parts[0].empty()) || parts.empty();
    if (op.empty()) {
      if (!set) return Value{{""}, false, unset_reason(name)};
      return Value{parts, each, unknown};
    }
    auto take = [&](std::size_t n) { return op.substr(n); };
    if (op.rfind(":-", 0) == 0 || op.rfind('-', 0) == 0) {
      bool colon = op[0] == ':';
      if (colon ? empty : !set) {
        auto [text_value, why] = NVTE_TRY(word_value_with_unknown(take(colon ? 2 : 1)));
        return Value{{text_value}, false, why};
      }
      return Value{parts, each, unknown};
    }
    if (op.rfind(":=", 0) == 0 || op.rfind('=', 0) == 0) {
      bool colon = op[0] == ':';
      if (colon ? empty : !set) {
        auto [text_value, why] = NVTE_TRY(word_value_with_unknown(take(colon ? 2 : 1)));
        m_state.vars[name] = Var::scalar(text_value, why);
        return Value{{text_value}, false, why};
      }
      return Value{parts, each, unknown};
    }
    if (op.rfind(":+", 0) == 0 || op.rfind('+', 0) == 0) {
      bool colon = op[0] == ':';
      if (colon ? !empty : set) {
        auto [text_value, why] = NVTE_TRY(word_value_with_unknown(take(colon ? 2 : 1)));
        return Value{{text_value}, false, why};
      }
      return Value{{""}, false, std::string()};
    }
    if (op.rfind(":?", 0) == 0 || op.rfind('?', 0) == 0) {
      if (!set) return Value{{""}, false, unset_reason(name)};
      return Value{parts, each, unknown};
    }
    if (op == ",," || op == "^^") {
      if (!set) return Value{{""}, false, unset_reason(name)};
      for (auto& p : parts) {
        for (auto& c : p) c = static_cast<char>(op == ",," ? std::tolower(static_cast<unsigned char>(c)) : std::toupper(static_cast<unsigned char>(c)));
      }
      return Value{parts, each, collapsed(parts)};
    }
    if (!op.empty() && (op[0] == '#' || op[0] == '%')) {
      // ${X#prefix}, ${X%suffix} with a literal pattern; ## and %% the same for literals.
      bool prefix = op[0] == '#';
      std::string pattern = op.substr(op.size() > 1 && op[1] == op[0] ? 2 : 1);
      if (pattern.find_first_of("*?[") != std::string::npos)
        return Value{parts, each, "the pattern of ${" + text + "} is not one the doctor reads"};
      if (!set) return Value{{""}, false, unset_reason(name)};
      for (auto& p : parts) {
        if (prefix && p.rfind(pattern, 0) == 0) p.erase(0, pattern.size());
        if (!prefix && p.size() >= pattern.size() && p.compare(p.size() - pattern.size(), pattern.size(), pattern) == 0)
          p.erase(p.size() - pattern.size());
      }
      return Value{parts, each, collapsed(parts)};
    }
    return Value{{""}, false, "the expansion ${" + text + "} is not one the doctor reads"};
  }

  // Text expanded as inside double quotes: one string, and the first reason it is unknown.
  Result<std::pair<std::string, std::string>> word_value_with_unknown(std::string_view text) {
    Lexer inner(text, m_source, m_lex.line());
    auto token = NVTE_TRY(inner.next());
    std::string value, why;
    // The word may hold blanks (${X:-a b}); read every word of it and join them.
    bool first = true;
    while (token.type == Token::Type::word) {
      auto fields = NVTE_TRY(expand(token.word, false));
      for (const auto& f : fields) {
        if (!first) value += ' ';
        first = false;
        value += f.text;
        if (why.empty() && !f.unknown.empty()) why = f.unknown.front().why;
      }
      token = NVTE_TRY(inner.next());
    }
    return std::make_pair(value, why);
  }

  // $(( expression )): integers, + - * / % ** and parentheses; names are variables.
  Result<Value> arithmetic(const std::string& expression) {
    // Expand $NAME and ${...} first, as the shell does.
    std::string text;
    std::string why;
    {
      auto [value, reason] = NVTE_TRY(word_value_with_unknown("\"" + expression + "\""));
      text = value;
      why = reason;
    }
    auto result = shell::arithmetic_value(
        text,
        [&](const std::string& name) {
          auto var = lookup(name);
          if (!var) return shell::ArithmeticVariable{std::nullopt, unset_reason(name)};
          return shell::ArithmeticVariable{var->values.empty() ? "" : var->values.front(), var->why(0)};
        },
        why);
    if (!result) return Value{{""}, false, "the arithmetic $((" + expression + ")) is not one the doctor reads"};
    return Value{{std::to_string(*result)}, false, why};
  }

  // Appends part[begin, end) to the field with the unknown ranges that touch it.
  static void append(ExpandedField& f, const std::string& part, std::size_t begin, std::size_t end, const Unknowns& ranges) {
    std::size_t offset = f.text.size();
    f.text.append(part, begin, end - begin);
    for (const auto& u : ranges) {
      bool touches = u.begin == u.end ? (begin <= u.begin && u.begin <= end) : (u.begin < end && u.end > begin);
      if (!touches) continue;
      std::size_t b = std::max(u.begin, begin), e = std::min(u.end, end);
      if (u.begin == u.end) b = e = u.begin;
      f.unknown.push_back({offset + b - begin, offset + e - begin, u.why});
    }
  }

  // A word's fields: split on blanks where the shell splits (unquoted expansions) when split is
  // true, one field otherwise (assignment values).
  Result<std::vector<ExpandedField>> expand(const RawWord& w, bool split) {
    Nested nested(m_depth);
    if (m_depth > k_max_depth) return m_lex.error("expansions nested more than " + std::to_string(k_max_depth) + " deep");
    std::vector<ExpandedField> fields;
    ExpandedField current;
    for (const auto& seg : w.segments) {
      if (seg.kind == Segment::Kind::text) {
        current.text += seg.text;
        current.exists = current.exists || seg.quoted || !seg.text.empty();
        continue;
      }
      Value value;
      if (seg.kind == Segment::Kind::param) value = NVTE_TRY(parameter(seg.text));
      else if (seg.kind == Segment::Kind::arith) value = NVTE_TRY(arithmetic(seg.text));
      else value = Value{{""}, false, "$(" + std::string(util::trim(seg.text)) + ") runs a command, which the doctor does not do"};
      NVTE_TRY_VOID(charge(value));
      if (seg.quoted || !split) {
        for (std::size_t k = 0; k < value.parts.size(); ++k) {
          if (k > 0) {
            if (value.each && split) {
              fields.push_back(std::move(current));
              current = ExpandedField{};
            } else {
              current.text += ' ';
            }
          }
          append(current, value.parts[k], 0, value.parts[k].size(), value.ranges(k));
          current.exists = true;
        }
        if (value.parts.empty() && seg.quoted && !value.each) current.exists = true;
        continue;
      }
      // Unquoted: every part is split on blanks; its unknown ranges go with the pieces they cover,
      // and an unknown between pieces (a value that expanded to nothing) stays where it was.
      for (std::size_t k = 0; k < value.parts.size(); ++k) {
        const std::string& part = value.parts[k];
        Unknowns ranges = value.ranges(k);
        bool leading_blank = !part.empty() && std::isspace(static_cast<unsigned char>(part.front()));
        if ((k > 0 || leading_blank) && current.exists) {
          fields.push_back(std::move(current));
          current = ExpandedField{};
        }
        TextPieces pieces = pieces_between(part, " \t\n");
        if (pieces.empty()) {
          for (const auto& u : ranges) current.unknown.push_back({current.text.size(), current.text.size(), u.why});
        }
        // The ranges each piece touches, in the ranges' order.
        std::vector<std::vector<std::size_t>> touching(pieces.size());
        for (std::size_t r = 0; r < ranges.size(); ++r) {
          auto [first, last] = pieces_touched(pieces, ranges[r].begin, ranges[r].end);
          for (std::size_t p = first; p < last; ++p) touching[p].push_back(r);
        }
        for (std::size_t p = 0; p < pieces.size(); ++p) {
          if (p > 0) {
            fields.push_back(std::move(current));
            current = ExpandedField{};
          }
          Unknowns touched;
          touched.reserve(touching[p].size());
          for (std::size_t r : touching[p]) touched.push_back(ranges[r]);
          append(current, part, pieces[p].first, pieces[p].second, touched);
          current.exists = true;
        }
        bool trailing_blank = !part.empty() && std::isspace(static_cast<unsigned char>(part.back()));
        if (trailing_blank && current.exists) {
          fields.push_back(std::move(current));
          current = ExpandedField{};
        }
      }
    }
    // An unknown that expanded to nothing still marks where the value was missing.
    if (current.exists || !current.unknown.empty() || !split) fields.push_back(std::move(current));
    m_expanded_items += fields.size();
    for (const auto& f : fields) m_expanded_items += f.unknown.size();
    NVTE_TRY_VOID(within_budget());
    return fields;
  }

  // Variables expand into variables: A="$A$A" forty times is 2^40 bytes from one line, the
  // billion laughs of shell scripts. Every value an expansion hands out counts against one budget
  // per script, the input layer's: its text no more bytes than a file may hold, its words and
  // unknown parts (each with a reason of at most k_max_reason bytes) no more than a document may
  // hold values.
  Result<void> charge(const Value& value) {
    for (const auto& part : value.parts) m_expanded_bytes += part.size();
    for (const auto& ranges : value.unknowns) m_expanded_items += ranges.size();
    return within_budget();
  }

  Result<void> within_budget() const {
    if (m_expanded_bytes > m_limits.max_bytes)
      return m_lex.error("variables expand to more than " + std::to_string(m_limits.max_bytes) + " bytes (limit " +
                         std::to_string(m_limits.max_bytes) + ")");
    if (m_expanded_items > m_limits.max_nodes)
      return m_lex.error("variables expand to more than " + std::to_string(m_limits.max_nodes) + " words and unknown parts (limit " +
                         std::to_string(m_limits.max_nodes) + ")");
    return {};
  }

  // ---- test expressions ----

  Result<Tri> evaluate_test(const std::vector<ExpandedField>& args) {
    std::vector<std::string> texts;
    bool unknown = false;
    for (const auto& a : args) {
      texts.push_back(a.text);
      if (!a.unknown.empty()) unknown = true;
    }
    return shell::test_expression(texts, unknown, [&](const std::string& name) { return lookup(name).has_value(); });
  }

  Lexer& m_lex;
  std::string_view m_source;
  const ScriptEnvironment& m_env;
  State& m_state;
  Token m_tok;
  std::vector<std::string> m_uncertain; // why the code being read may or may not run
  int m_depth = 0;                      // nesting of commands, expansions and heredocs
  const util::InputLimits m_limits{};   // what the script's expansions may produce, all together
  std::size_t m_expanded_bytes = 0;     // text the expansions handed out so far
  std::size_t m_expanded_items = 0;     // words and unknown parts they made so far
};

} // namespace

TextPieces pieces_between(std::string_view text, std::string_view blanks) {
  TextPieces pieces;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t start = text.find_first_not_of(blanks, pos);
    if (start == std::string_view::npos) break;
    std::size_t end = std::min(text.find_first_of(blanks, start), text.size());
    pieces.emplace_back(start, end);
    pos = end;
  }
  return pieces;
}

std::pair<std::size_t, std::size_t> pieces_touched(const TextPieces& pieces, std::size_t begin, std::size_t end) {
  const bool empty = begin == end;
  auto first = std::partition_point(pieces.begin(), pieces.end(),
                                    [&](const auto& piece) { return empty ? piece.second < begin : piece.second <= begin; });
  auto last =
      std::partition_point(first, pieces.end(), [&](const auto& piece) { return empty ? piece.first <= begin : piece.first < end; });
  return {static_cast<std::size_t>(first - pieces.begin()), static_cast<std::size_t>(last - pieces.begin())};
}

util::Result<std::vector<ScriptWord>> script_words(std::string_view text, std::string_view source, const ScriptEnvironment& environment) {
  State state;
  Lexer lexer(text, source, 1);
  Interpreter interpreter(lexer, source, environment, state);
  NVTE_TRY_VOID(interpreter.run());
  return std::move(state.out);
}

} // namespace workload
