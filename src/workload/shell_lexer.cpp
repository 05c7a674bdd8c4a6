// The lexer of the shell reader (shell_lexer.hpp).
#include "workload/shell_lexer.hpp"

#include <algorithm>
#include <cctype>

namespace workload::shell {

using util::Error;
using util::ErrorKind;
using util::Result;

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool valid_name(std::string_view s) {
  if (s.empty() || !is_name_start(s[0])) return false;
  return std::all_of(s.begin() + 1, s.end(), is_name_char);
}

Lexer::Lexer(std::string_view text, std::string_view source, int first_line) : m_text(text), m_source(source), m_line(first_line) {}

Result<Token> Lexer::next() {
  skip_blanks();
  Token t;
  t.line = m_line;
  if (m_pos >= m_text.size()) {
    if (!m_pending.empty()) NVTE_TRY_VOID(read_heredocs());
    t.type = Token::Type::end;
    return t;
  }
  char c = m_text[m_pos];
  if (c == '\n') {
    ++m_pos;
    ++m_line;
    NVTE_TRY_VOID(read_heredocs());
    t.type = Token::Type::newline;
    return t;
  }
  if (std::string_view(";&|()<>").find(c) != std::string_view::npos) {
    t.type = Token::Type::op;
    t.op = read_operator();
    if (t.op == "<<" || t.op == "<<-") {
      // The delimiter word follows; its body starts after the end of this line.
      skip_blanks();
      auto delimiter = NVTE_TRY(read_word());
      std::string name;
      for (const auto& s : delimiter.segments) name += s.text;
      m_pending.push_back({name, t.op == "<<-"});
    }
    return t;
  }
  t.type = Token::Type::word;
  t.word = NVTE_TRY(read_word());
  return t;
}

std::vector<Heredoc> Lexer::take_heredocs() { return std::exchange(m_ready, {}); }

int Lexer::line() const { return m_line; }

Error Lexer::error(const std::string& message) const {
  return Error{ErrorKind::parse, std::string(m_source) + ":" + std::to_string(m_line) + ": " + message};
}

void Lexer::skip_blanks() {
  for (;;) {
    if (m_pos + 1 < m_text.size() && m_text[m_pos] == '\\' && m_text[m_pos + 1] == '\n') {
      m_pos += 2;
      ++m_line;
      continue;
    }
    if (m_pos < m_text.size() && (m_text[m_pos] == ' ' || m_text[m_pos] == '\t' || m_text[m_pos] == '\r')) {
      ++m_pos;
      continue;
    }
    if (m_pos < m_text.size() && m_text[m_pos] == '#') {
      while (m_pos < m_text.size() && m_text[m_pos] != '\n') ++m_pos;
      continue;
    }
    return;
  }
}

std::string Lexer::read_operator() {
  static const char* const k_ops[] = {";;&", ";;", ";&", "&&", "&>>", "&>", "||", "|&", "<<<", "<<-", "<<", "<&",
                                      "<>",  ">>", ">&", ">|", ";",   "&",  "|",  "(",  ")",   "<",   ">"};
  for (const char* op : k_ops) {
    std::string_view o(op);
    if (m_text.substr(m_pos, o.size()) == o) {
      m_pos += o.size();
      return std::string(o);
    }
  }
  return std::string(1, m_text[m_pos++]);
}

// Text up to the closer that matches opener, honouring nesting and quotes; m_pos is just after
// the opener and ends just after the closer.
Result<std::string> Lexer::balanced(char opener, char closer) {
  int depth = 1;
  std::string out;
  while (m_pos < m_text.size()) {
    char c = m_text[m_pos];
    if (c == '\n') ++m_line;
    if (c == '\\' && m_pos + 1 < m_text.size()) {
      out += c;
      out += m_text[m_pos + 1];
      if (m_text[m_pos + 1] == '\n') ++m_line;
      m_pos += 2;
      continue;
    }
    if (c == '\'' && closer != '}') {
      auto end = m_text.find('\'', m_pos + 1);
      if (end == std::string_view::npos) return error("unterminated single quote");
      for (std::size_t i = m_pos; i <= end; ++i) m_line += m_text[i] == '\n';
      out += m_text.substr(m_pos, end - m_pos + 1);
      m_pos = end + 1;
      continue;
    }
    if (c == opener) ++depth;
    if (c == closer && --depth == 0) {
      ++m_pos;
      return out;
    }
    out += c;
    ++m_pos;
  }
  return error(std::string("unterminated ") + (opener == '{' ? "${" : "$(") + " (no matching '" + closer + "')");
}

// After '$' (m_pos at the character following it).
Result<void> Lexer::read_dollar(RawWord& word, std::string& literal, bool quoted) {
  auto flush = [&] {
    if (!literal.empty()) word.segments.push_back({Segment::Kind::text, std::exchange(literal, {}), quoted});
  };
  if (m_pos >= m_text.size()) {
    literal += '$';
    return {};
  }
  char c = m_text[m_pos];
  if (c == '{') {
    ++m_pos;
    flush();
    word.segments.push_back({Segment::Kind::param, NVTE_TRY(balanced('{', '}')), quoted});
    // A braced parameter keeps its braces so that expansion can tell ${10} from $1 0.
    word.segments.back().text = "{" + word.segments.back().text + "}";
    return {};
  }
  if (c == '(' && m_pos + 1 < m_text.size() && m_text[m_pos + 1] == '(') {
    m_pos += 2;
    flush();
    std::string inner = NVTE_TRY(balanced('(', ')'));
    if (m_pos < m_text.size() && m_text[m_pos] == ')') ++m_pos;
    else return error("unterminated $(( (no matching '))')");
    word.segments.push_back({Segment::Kind::arith, inner, quoted});
    return {};
  }
  if (c == '(') {
    ++m_pos;
    flush();
    word.segments.push_back({Segment::Kind::command, NVTE_TRY(balanced('(', ')')), quoted});
    return {};
  }
  if (is_name_start(c)) {
    std::size_t start = m_pos;
    while (m_pos < m_text.size() && is_name_char(m_text[m_pos])) ++m_pos;
    flush();
    word.segments.push_back({Segment::Kind::param, std::string(m_text.substr(start, m_pos - start)), quoted});
    return {};
  }
  if (std::isdigit(static_cast<unsigned char>(c)) || std::string_view("@*#?$!-").find(c) != std::string_view::npos) {
    ++m_pos;
    flush();
    word.segments.push_back({Segment::Kind::param, std::string(1, c), quoted});
    return {};
  }
  literal += '$';
  return {};
}

Result<RawWord> Lexer::read_word() {
  RawWord word;
  word.line = m_line;
  std::string literal;
  auto flush = [&](bool quoted) {
    if (!literal.empty()) word.segments.push_back({Segment::Kind::text, std::exchange(literal, {}), quoted});
  };
  while (m_pos < m_text.size()) {
    char c = m_text[m_pos];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') break;
    if (c == '(' && !literal.empty() && word.segments.empty() && (literal.back() == '=')) {
      // NAME=( ... ) or NAME+=( ... ): an array assignment.
      std::string head = literal.substr(0, literal.size() - 1);
      bool append = !head.empty() && head.back() == '+';
      if (append) head.pop_back();
      if (valid_name(head)) {
        ++m_pos;
        word.is_array = true;
        word.array_name = head;
        word.array_append = append;
        for (;;) {
          skip_blanks();
          while (m_pos < m_text.size() && m_text[m_pos] == '\n') {
            ++m_pos;
            ++m_line;
            skip_blanks();
          }
          if (m_pos >= m_text.size()) return error("unterminated array " + head + "=( (no matching ')')");
          if (m_text[m_pos] == ')') {
            ++m_pos;
            break;
          }
          if (std::string_view(";&|(<>").find(m_text[m_pos]) != std::string_view::npos)
            return error(std::string("unexpected '") + m_text[m_pos] + "' in the array " + head + "=(");
          word.elements.push_back(NVTE_TRY(read_word()));
        }
        return word;
      }
    }
    if (std::string_view(";&|()<>").find(c) != std::string_view::npos) break;
    if (c == '\\') {
      if (m_pos + 1 < m_text.size() && m_text[m_pos + 1] == '\n') {
        m_pos += 2;
        ++m_line;
        continue;
      }
      if (m_pos + 1 < m_text.size()) literal += m_text[m_pos + 1];
      m_pos += 2;
      continue;
    }
    if (c == '\'') {
      flush(false);
      auto end = m_text.find('\'', m_pos + 1);
      if (end == std::string_view::npos) return error("unterminated single quote");
      std::string inner(m_text.substr(m_pos + 1, end - m_pos - 1));
      m_line += static_cast<int>(std::count(inner.begin(), inner.end(), '\n'));
      word.segments.push_back({Segment::Kind::text, inner, true});
      m_pos = end + 1;
      continue;
    }
    if (c == '"') {
      flush(false);
      ++m_pos;
      // An empty "" is still a word.
      word.segments.push_back({Segment::Kind::text, "", true});
      bool closed = false;
      while (m_pos < m_text.size()) {
        char d = m_text[m_pos];
        if (d == '"') {
          ++m_pos;
          closed = true;
          break;
        }
        if (d == '\n') ++m_line;
        if (d == '\\' && m_pos + 1 < m_text.size()) {
          char e = m_text[m_pos + 1];
          if (e == '\n') {
            ++m_line;
            m_pos += 2;
            continue;
          }
          if (std::string_view("$`\"\\").find(e) != std::string_view::npos) {
            literal += e;
            m_pos += 2;
            continue;
          }
          literal += d;
          ++m_pos;
          continue;
        }
        if (d == '$') {
          ++m_pos;
          NVTE_TRY_VOID(read_dollar(word, literal, true));
          continue;
        }
        if (d == '`') {
          flush(true);
          auto end = m_text.find('`', m_pos + 1);
          if (end == std::string_view::npos) return error("unterminated backquote");
          word.segments.push_back({Segment::Kind::command, std::string(m_text.substr(m_pos + 1, end - m_pos - 1)), true});
          m_pos = end + 1;
          continue;
        }
        literal += d;
        ++m_pos;
      }
      if (!closed) return error("unterminated double quote");
      flush(true);
      continue;
    }
    if (c == '$') {
      ++m_pos;
      if (m_pos < m_text.size() && m_text[m_pos] == '\'') {
        // $'...': ANSI-C quoting, read as single quotes with \n and \t.
        flush(false);
        std::string inner;
        ++m_pos;
        while (m_pos < m_text.size() && m_text[m_pos] != '\'') {
          if (m_text[m_pos] == '\\' && m_pos + 1 < m_text.size()) {
            char e = m_text[m_pos + 1];
            inner += e == 'n' ? '\n' : e == 't' ? '\t' : e;
            m_pos += 2;
            continue;
          }
          inner += m_text[m_pos++];
        }
        if (m_pos >= m_text.size()) return error("unterminated $'");
        ++m_pos;
        word.segments.push_back({Segment::Kind::text, inner, true});
        continue;
      }
      NVTE_TRY_VOID(read_dollar(word, literal, false));
      continue;
    }
    if (c == '`') {
      flush(false);
      auto end = m_text.find('`', m_pos + 1);
      if (end == std::string_view::npos) return error("unterminated backquote");
      word.segments.push_back({Segment::Kind::command, std::string(m_text.substr(m_pos + 1, end - m_pos - 1)), false});
      m_pos = end + 1;
      continue;
    }
    literal += c;
    ++m_pos;
  }
  flush(false);
  return word;
}

Result<void> Lexer::read_heredocs() {
  for (const auto& [delimiter, strip_tabs] : m_pending) {
    Heredoc doc;
    doc.line = m_line;
    bool found = false;
    while (m_pos < m_text.size()) {
      auto end = m_text.find('\n', m_pos);
      std::string_view line = m_text.substr(m_pos, end == std::string_view::npos ? std::string_view::npos : end - m_pos);
      m_pos = end == std::string_view::npos ? m_text.size() : end + 1;
      ++m_line;
      std::string_view bare = line;
      if (strip_tabs)
        while (!bare.empty() && bare.front() == '\t') bare.remove_prefix(1);
      if (!bare.empty() && bare.back() == '\r') bare.remove_suffix(1);
      if (bare == delimiter) {
        found = true;
        break;
      }
      doc.body += std::string(bare) + "\n";
    }
    if (!found) return error("heredoc started at line " + std::to_string(doc.line - 1) + " has no closing " + delimiter);
    m_ready.push_back(std::move(doc));
  }
  m_pending.clear();
  return {};
}

} // namespace workload::shell
