// Python package versions and version specifiers as pip reads them (PEP 440), for checking an
// installed distribution against a Requires-Dist without starting Python. The doctor's own
// model::Version orders NVIDIA's dotted numbers; PEP 440 adds what Python packages write:
// epochs (1!2.0), pre-releases (2.0rc1, 2.0b2, 2.0.dev3), post-releases (1.0.post1, 1.0-1),
// local labels (2.3.0+cu121) and the alternative spellings pip normalises (2.0-RC.1 = 2.0rc1).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace probe::pep440 {

struct Version {
  long epoch = 0;
  std::vector<long> release; // 2, 3, 0
  int pre_kind = -1;         // -1 none, 0 a, 1 b, 2 rc
  long pre_number = 0;
  std::optional<long> post;
  std::optional<long> dev;
  std::vector<std::string> local; // "cu121" / "ubuntu", "1": segments after '+', lower case
  std::string text;               // as written, trimmed

  bool is_prerelease() const { return pre_kind >= 0 || dev.has_value(); }
  bool is_postrelease() const { return post.has_value(); }
};

// Parses a version in any spelling PEP 440 accepts ("v1.0", "1.0-RC1", "2.3.0+cu121"); nullopt
// when the text is not a PEP 440 version ("2.1.0-custom build", "latest").
std::optional<Version> parse(std::string_view text);

// Total order of PEP 440: <0 when a < b, 0 when equal (1.0 == 1.0.0), >0 when a > b.
int compare(const Version& a, const Version& b);

// Whether an installed version meets one specifier clause (">=1.0", "~=2.2", "==2.*", "!=1.5",
// "===2.0-custom", "<3"). Pre-releases count like any version, as in `pip check`. nullopt when
// the clause is not a valid specifier or the version not a valid one (except for ===, which
// compares text).
std::optional<bool> satisfies_clause(std::string_view version, std::string_view clause);

// The same for a comma-separated specifier set (every clause must hold); "" holds for any.
std::optional<bool> satisfies(std::string_view version, std::string_view specifiers);

} // namespace probe::pep440
