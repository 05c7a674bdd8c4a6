#include "model/version.hpp"

#include "util/strings.hpp"

#include <cctype>

namespace model {

Version::Version(std::initializer_list<long> components) : m_components(components) {
  for (std::size_t i = 0; i < m_components.size(); ++i) {
    if (i) m_text += '.';
    m_text += std::to_string(m_components[i]);
  }
}

Version Version::from_packed(long packed) {
  if (packed >= 10000) return Version{packed / 10000, (packed / 100) % 100, packed % 100};
  return Version{packed / 1000, (packed / 100) % 10, packed % 100};
}

util::Result<Version> Version::parse(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return util::Error{util::ErrorKind::parse, "invalid version '" + std::string(text) + "': " + std::string(why)};
  };
  std::string_view s = util::trim(text);
  if (s.empty()) return bad("empty");
  if (s.size() > 128) return bad("too long");
  if (s[0] == 'v' || s[0] == 'V') s.remove_prefix(1);

  Version v;
  if (auto plus = s.find('+'); plus != std::string_view::npos) {
    v.m_local = std::string(s.substr(plus + 1));
    if (v.m_local.empty()) return bad("empty local label after '+'");
    for (char c : v.m_local) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return bad("bad local label");
    }
    s = s.substr(0, plus);
  }

  std::size_t i = 0;
  while (i < s.size()) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) break;
    std::size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i - start > 12) return bad("component too large");
    v.m_components.push_back(*util::parse_int(s.substr(start, i - start)));
    if (i < s.size() && s[i] == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      ++i;
      continue;
    }
    break;
  }
  if (v.m_components.empty()) return bad("no leading number");

  // Pre/post-release suffix: [.|-|_](dev|a|alpha|b|beta|rc|c|post)N
  std::string_view rest = s.substr(i);
  if (!rest.empty() && (rest[0] == '.' || rest[0] == '-' || rest[0] == '_')) rest.remove_prefix(1);
  if (!rest.empty()) {
    std::size_t letters = 0;
    while (letters < rest.size() && std::isalpha(static_cast<unsigned char>(rest[letters]))) ++letters;
    std::string tag = util::to_lower(rest.substr(0, letters));
    std::string_view number = rest.substr(letters);
    if (tag == "dev") v.m_pre_rank = -4;
    else if (tag == "a" || tag == "alpha") v.m_pre_rank = -3;
    else if (tag == "b" || tag == "beta") v.m_pre_rank = -2;
    else if (tag == "rc" || tag == "c") v.m_pre_rank = -1;
    else if (tag == "post") v.m_pre_rank = 1;
    else return bad("unknown suffix '" + std::string(rest) + "'");
    if (!number.empty()) {
      auto n = util::parse_int(number);
      if (!n || *n < 0) return bad("bad number after '" + tag + "'");
      v.m_pre_number = static_cast<long>(*n);
    }
  }

  // A lone integer of four or more digits is a packed C-API version (cuDNN 90100, 8907).
  if (v.m_components.size() == 1 && i >= 4 && v.m_pre_rank == 0 && v.m_local.empty() && i == s.size()) {
    Version packed = from_packed(v.m_components[0]);
    return packed;
  }
  v.m_text = std::string(util::trim(text));
  if (v.m_text[0] == 'v' || v.m_text[0] == 'V') v.m_text.erase(0, 1);
  return v;
}

std::strong_ordering Version::operator<=>(const Version& other) const {
  std::size_t n = std::max(m_components.size(), other.m_components.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (auto c = component(i) <=> other.component(i); std::is_neq(c)) return c;
  }
  if (auto c = m_pre_rank <=> other.m_pre_rank; std::is_neq(c)) return c;
  if (auto c = m_pre_number <=> other.m_pre_number; std::is_neq(c)) return c;
  return m_local <=> other.m_local;
}

util::Result<VersionRange> VersionRange::parse(std::string_view text) {
  VersionRange range;
  range.m_text = std::string(util::trim(text));
  if (range.m_text.empty()) return util::Error{util::ErrorKind::parse, "empty version range"};
  for (auto part : util::split(range.m_text, ',')) {
    std::string_view clause = util::trim(part);
    Op op = Op::eq;
    auto take = [&](std::string_view prefix, Op o) {
      if (!clause.starts_with(prefix)) return false;
      op = o;
      clause.remove_prefix(prefix.size());
      return true;
    };
    take(">=", Op::ge) || take("<=", Op::le) || take("==", Op::eq) || take("!=", Op::ne) || take(">", Op::gt) ||
        take("<", Op::lt) || take("=", Op::eq);
    clause = util::trim(clause);
    if (clause.ends_with(".*")) {
      if (op != Op::eq && op != Op::ne)
        return util::Error{util::ErrorKind::parse, "version range '" + range.m_text + "': '.*' only with == or !="};
      op = op == Op::eq ? Op::eq_prefix : Op::ne_prefix;
      clause.remove_suffix(2);
    }
    auto version = Version::parse(clause);
    if (!version) return util::Error{util::ErrorKind::parse, "version range '" + range.m_text + "': " + version.error().message};
    range.m_clauses.push_back({op, std::move(*version)});
  }
  return range;
}

bool VersionRange::contains(const Version& v) const {
  for (const auto& clause : m_clauses) {
    bool holds = false;
    switch (clause.op) {
    case Op::lt: holds = v < clause.version; break;
    case Op::le: holds = v <= clause.version; break;
    case Op::gt: holds = v > clause.version; break;
    case Op::ge: holds = v >= clause.version; break;
    case Op::eq: holds = v == clause.version; break;
    case Op::ne: holds = v != clause.version; break;
    case Op::eq_prefix:
    case Op::ne_prefix: {
      bool prefix = true;
      for (std::size_t i = 0; i < clause.version.components().size(); ++i) {
        if (v.component(i) != clause.version.components()[i]) prefix = false;
      }
      holds = clause.op == Op::eq_prefix ? prefix : !prefix;
      break;
    }
    }
    if (!holds) return false;
  }
  return true;
}

} // namespace model
