// Version: the version numbers of the NVIDIA stack and of Python packages, totally ordered.
//
// Parses dotted forms ("9.3.0.75", "580.159.04", "12.4"), PEP 440 suffixes ("2.3.0+cu124",
// "2.1.0.dev0+abc", "1.13.0rc1", "2.5.0.post1") and the packed integers that C APIs return
// (cuDNN 9 / NCCL: 90100 = 9.1.0, 22809 = 2.28.9; cuDNN 8: 8907 = 8.9.7). Comparison pads with
// zeros (9.3 == 9.3.0), orders pre-releases (dev < a < b < rc) before the release and post
// releases after it; the local label (+cu124) only breaks ties.
#pragma once

#include "util/result.hpp"

#include <compare>
#include <string>
#include <string_view>
#include <vector>

namespace model {

class Version {
public:
  Version() = default;
  Version(std::initializer_list<long> components);

  // Fails (parse) on empty or non-version text, naming it.
  static util::Result<Version> parse(std::string_view text);
  // cuDNN / NCCL packed integers: >= 10000 is major*10000+minor*100+patch, else
  // major*1000+minor*100+patch (cuDNN 8).
  static Version from_packed(long packed);

  const std::vector<long>& components() const { return m_components; }
  long major() const { return component(0); }
  long minor() const { return component(1); }
  long patch() const { return component(2); }
  long component(std::size_t i) const { return i < m_components.size() ? m_components[i] : 0; }
  const std::string& local() const { return m_local; }
  bool is_prerelease() const { return m_pre_rank < 0; }

  // As parsed ("580.159.04" keeps its leading zero); canonical for constructed versions.
  const std::string& text() const { return m_text; }
  std::string to_string() const { return m_text; }

  std::strong_ordering operator<=>(const Version& other) const;
  bool operator==(const Version& other) const { return std::is_eq(*this <=> other); }

private:
  std::vector<long> m_components;
  int m_pre_rank = 0;      // -4 dev, -3 a, -2 b, -1 rc, 0 release, 1 post
  long m_pre_number = 0;   // the N of devN / rcN / postN
  std::string m_local;     // after '+'
  std::string m_text;
};

// A set of versions: comma-separated clauses that must all hold, each an operator and a
// version (">=1.10,<2.1", "==9.10.*", "!=9.10.0"). A bare version means ==.
class VersionRange {
public:
  static util::Result<VersionRange> parse(std::string_view text);
  bool contains(const Version& version) const;
  const std::string& text() const { return m_text; }

private:
  enum class Op { lt, le, gt, ge, eq, ne, eq_prefix, ne_prefix };
  struct Clause {
    Op op;
    Version version;
  };
  std::vector<Clause> m_clauses;
  std::string m_text;
};

} // namespace model
