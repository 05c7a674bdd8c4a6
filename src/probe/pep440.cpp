// PEP 440 by hand: a scanner over the lower-cased text in the order the canonical form writes
// its parts ([N!]N(.N)*[{a|b|rc}N][.postN][.devN][+local]), accepting the spellings PEP 440
// lists as equivalent; then packaging's comparison key (a dev release sorts before its
// pre-releases, a release without pre-release after them, post before dev absent, local last)
// and the specifier operators with their special cases (the exclusive `<` and `>` leave out
// pre-/post-releases of the version named; `==` ignores the candidate's local label unless the
// specifier has one; `~=` is `>= V` and `== V-minus-last.*`).
#include "probe/pep440.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

namespace probe::pep440 {

namespace {

class Scanner {
public:
  explicit Scanner(std::string_view text) : m_text(text) {}
  bool done() const { return m_at >= m_text.size(); }
  char peek(std::size_t ahead = 0) const { return m_at + ahead < m_text.size() ? m_text[m_at + ahead] : '\0'; }
  bool digit(std::size_t ahead = 0) const { return std::isdigit(static_cast<unsigned char>(peek(ahead))) != 0; }
  std::size_t mark() const { return m_at; }
  void reset(std::size_t at) { m_at = at; }
  bool take(char c) {
    if (peek() != c) return false;
    ++m_at;
    return true;
  }
  bool take_word(std::string_view word) {
    if (m_text.substr(m_at, word.size()) != word) return false;
    m_at += word.size();
    return true;
  }
  bool take_separator() { return take('.') || take('-') || take('_'); }
  std::optional<long> number() {
    if (!digit()) return std::nullopt;
    long n = 0;
    while (digit()) {
      if (n > 100000000000L) return std::nullopt; // no real version has a component this large
      n = n * 10 + (m_text[m_at++] - '0');
    }
    return n;
  }

private:
  std::string_view m_text;
  std::size_t m_at = 0;
};

// "alpha" / "a", "beta" / "b", "c" / "rc" / "pre" / "preview": longest spelling first.
int take_pre_kind(Scanner& s) {
  for (auto [word, kind] : {std::pair{"alpha", 0}, std::pair{"beta", 1}, std::pair{"preview", 2}, std::pair{"pre", 2}, std::pair{"rc", 2},
                            std::pair{"a", 0}, std::pair{"b", 1}, std::pair{"c", 2}}) {
    if (s.take_word(word)) return kind;
  }
  return -1;
}

// An optional separator, the number (0 when absent).
long optional_number(Scanner& s) {
  std::size_t at = s.mark();
  s.take_separator();
  if (auto n = s.number()) return *n;
  s.reset(at);
  return 0;
}

int compare_release(const std::vector<long>& a, const std::vector<long>& b) {
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    long x = i < a.size() ? a[i] : 0;
    long y = i < b.size() ? b[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

int compare_local(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    bool an = all_digits(a[i]), bn = all_digits(b[i]);
    if (an && bn) {
      long x = std::stol(a[i].substr(0, 15)), y = std::stol(b[i].substr(0, 15));
      if (x != y) return x < y ? -1 : 1;
    } else if (an != bn) {
      return an ? 1 : -1; // a number sorts after letters
    } else if (a[i] != b[i]) {
      return a[i] < b[i] ? -1 : 1;
    }
  }
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return 0;
}

template <class T>
int three_way(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

Version without_local(Version v) {
  v.local.clear();
  return v;
}

bool same_release(const Version& a, const Version& b) { return a.epoch == b.epoch && compare_release(a.release, b.release) == 0; }

// The release prefix of a wildcard or compatible-release clause matches.
bool prefix_matches(const Version& candidate, const Version& prefix) {
  if (candidate.epoch != prefix.epoch) return false;
  for (std::size_t i = 0; i < prefix.release.size(); ++i) {
    long c = i < candidate.release.size() ? candidate.release[i] : 0;
    if (c != prefix.release[i]) return false;
  }
  return true;
}

} // namespace

std::optional<Version> parse(std::string_view raw) {
  Version v;
  v.text = std::string(util::trim(raw));
  std::string lower = util::to_lower(v.text);
  Scanner s(lower);
  s.take('v');
  // Epoch: digits followed by '!'.
  std::size_t start = s.mark();
  if (auto n = s.number(); n && s.take('!')) v.epoch = *n;
  else s.reset(start);
  // Release.
  auto first = s.number();
  if (!first) return std::nullopt;
  v.release.push_back(*first);
  while (s.peek() == '.' && s.digit(1)) {
    s.take('.');
    v.release.push_back(*s.number());
  }
  // Pre-release.
  std::size_t at = s.mark();
  s.take_separator();
  if (int kind = take_pre_kind(s); kind >= 0) {
    v.pre_kind = kind;
    v.pre_number = optional_number(s);
  } else {
    s.reset(at);
  }
  // Post-release: "-1" (implicit) or [sep](post|rev|r)[sep][N].
  at = s.mark();
  if (s.take('-') && s.digit()) {
    v.post = s.number();
  } else {
    s.reset(at);
    s.take_separator();
    if (s.take_word("post") || s.take_word("rev") || s.take_word("r")) v.post = optional_number(s);
    else s.reset(at);
  }
  // Development release.
  at = s.mark();
  s.take_separator();
  if (s.take_word("dev")) v.dev = optional_number(s);
  else s.reset(at);
  // Local label.
  if (s.take('+')) {
    std::string segment;
    while (!s.done()) {
      char c = s.peek();
      if (c == '.' || c == '-' || c == '_') {
        if (segment.empty()) return std::nullopt;
        v.local.push_back(segment);
        segment.clear();
      } else if (std::isalnum(static_cast<unsigned char>(c))) {
        segment += c;
      } else {
        return std::nullopt;
      }
      s.take(c);
    }
    if (segment.empty()) return std::nullopt;
    v.local.push_back(segment);
  }
  if (!s.done()) return std::nullopt;
  return v;
}

int compare(const Version& a, const Version& b) {
  if (int c = three_way(a.epoch, b.epoch)) return c;
  if (int c = compare_release(a.release, b.release)) return c;
  // Pre-release key: a bare dev release (1.0.dev1) sorts before 1.0a1; no pre-release after all.
  auto pre_key = [](const Version& v) -> std::pair<int, long> {
    if (v.pre_kind >= 0) return {v.pre_kind, v.pre_number};
    if (!v.post && v.dev) return {-1, 0};
    return {3, 0};
  };
  if (int c = three_way(pre_key(a), pre_key(b))) return c;
  auto post_key = [](const Version& v) { return v.post ? *v.post : -1L; };
  if (int c = three_way(post_key(a), post_key(b))) return c;
  auto dev_key = [](const Version& v) { return v.dev ? *v.dev : std::numeric_limits<long>::max(); };
  if (int c = three_way(dev_key(a), dev_key(b))) return c;
  if (a.local.empty() != b.local.empty()) return a.local.empty() ? -1 : 1;
  return compare_local(a.local, b.local);
}

std::optional<bool> satisfies_clause(std::string_view version, std::string_view clause) {
  clause = util::trim(clause);
  std::string_view op;
  for (std::string_view candidate : {"===", "~=", "==", "!=", "<=", ">=", "<", ">"}) {
    if (util::starts_with(clause, candidate)) {
      op = candidate;
      break;
    }
  }
  if (op.empty()) return std::nullopt;
  std::string_view operand = util::trim(clause.substr(op.size()));
  if (operand.empty()) return std::nullopt;
  if (op == "===") return util::to_lower(util::trim(version)) == util::to_lower(operand);

  auto candidate = parse(version);
  if (!candidate) return std::nullopt;
  bool wildcard = util::ends_with(operand, ".*");
  if (wildcard && op != "==" && op != "!=") return std::nullopt;
  auto spec = parse(wildcard ? operand.substr(0, operand.size() - 2) : operand);
  if (!spec) return std::nullopt;
  const Version public_candidate = without_local(*candidate);

  if (op == "==" || op == "!=") {
    bool equal = false;
    if (wildcard) equal = prefix_matches(public_candidate, *spec);
    else equal = compare(spec->local.empty() ? public_candidate : *candidate, *spec) == 0;
    return op == "==" ? equal : !equal;
  }
  if (!spec->local.empty()) return std::nullopt; // ordered comparisons take no local label
  if (op == "~=") {
    if (spec->release.size() < 2) return std::nullopt;
    Version prefix = *spec;
    prefix.release.pop_back();
    return compare(public_candidate, *spec) >= 0 && prefix_matches(public_candidate, prefix);
  }
  int c = compare(public_candidate, *spec);
  if (op == "<=") return c <= 0;
  if (op == ">=") return c >= 0;
  if (op == "<") {
    // <3.0 leaves out 3.0rc1 unless the specifier itself names a pre-release.
    if (c >= 0) return false;
    return spec->is_prerelease() || !candidate->is_prerelease() || !same_release(*candidate, *spec);
  }
  // ">": >1.0 leaves out 1.0.post1 unless the specifier names a post-release.
  if (c <= 0) return false;
  return spec->is_postrelease() || !candidate->is_postrelease() || !same_release(*candidate, *spec);
}

std::optional<bool> satisfies(std::string_view version, std::string_view specifiers) {
  bool all = true;
  for (auto clause : util::split(specifiers, ',')) {
    if (util::trim(clause).empty()) continue;
    auto ok = satisfies_clause(version, clause);
    if (!ok) return std::nullopt;
    all = all && *ok;
  }
  return all;
}

} // namespace probe::pep440
