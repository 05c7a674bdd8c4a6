// PEP 440 versions and specifiers, PEP 508 markers: table tests with the edge cases pip's own
// `packaging` library decides (the expected answers are what packaging 24 returns for
// `Version(v) in SpecifierSet(s, prereleases=True)` and `Marker(m).evaluate(env)`).
#include "probe/pep440.hpp"
#include "probe/pep508_markers.hpp"

#include <gtest/gtest.h>

using namespace probe;

namespace {

int cmp(std::string_view a, std::string_view b) {
  auto x = pep440::parse(a);
  auto y = pep440::parse(b);
  EXPECT_TRUE(x && y) << a << " / " << b;
  if (!x || !y) return 99;
  int c = pep440::compare(*x, *y);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

} // namespace

TEST(Pep440, ParsesEveryNormalisedSpelling) {
  struct Case {
    const char* text;
    bool valid;
  } cases[] = {
      {"1.0", true},
      {"v1.0", true},
      {"1!2.0", true},
      {"2.3.0+cu121", true},
      {"1.0-RC.1", true},
      {"1.0alpha2", true},
      {"1.0.preview3", true},
      {"1.0-1", true},
      {"1.0.rev2", true},
      {"1.0_post_3", true},
      {"1.0.dev", true},
      {"1.0a1.post2.dev3", true},
      {"2.11.0.dev0+abc", true},
      {" 3.0 ", true},
      {"", false},
      {"latest", false},
      {"1.0+", false},
      {"1.0+a..b", false},
      {"2.1.0-custom build", false},
      {"1..0", false},
      {"1.0$", false},
  };
  for (const auto& c : cases) EXPECT_EQ(pep440::parse(c.text).has_value(), c.valid) << c.text;
  auto v = pep440::parse("1!2.0-RC.1.post_2.dev3+Ubuntu.1");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->epoch, 1);
  EXPECT_EQ(v->release, (std::vector<long>{2, 0}));
  EXPECT_EQ(v->pre_kind, 2);
  EXPECT_EQ(v->pre_number, 1);
  EXPECT_EQ(v->post, 2);
  EXPECT_EQ(v->dev, 3);
  EXPECT_EQ(v->local, (std::vector<std::string>{"ubuntu", "1"}));
}

TEST(Pep440, OrdersAsPackagingDoes) {
  // Ascending: dev before pre before release before post; epochs above all.
  const char* ascending[] = {"1.0.dev0",  "1.0a1.dev1", "1.0a1",          "1.0a2",     "1.0b1",    "1.0rc1", "1.0", "1.0+abc",
                             "1.0+abc.5", "1.0+5",      "1.0.post1.dev0", "1.0.post1", "1.1.dev1", "1.1",    "2.0", "1!0.1"};
  for (std::size_t i = 0; i + 1 < std::size(ascending); ++i) {
    EXPECT_EQ(cmp(ascending[i], ascending[i + 1]), -1) << ascending[i] << " < " << ascending[i + 1];
    EXPECT_EQ(cmp(ascending[i + 1], ascending[i]), 1) << ascending[i + 1] << " > " << ascending[i];
  }
  EXPECT_EQ(cmp("1.0", "1.0.0"), 0);
  EXPECT_EQ(cmp("1.0-RC1", "1.0rc1"), 0);
  EXPECT_EQ(cmp("1.0-1", "1.0.post1"), 0);
  EXPECT_EQ(cmp("v2.3", "2.3"), 0);
}

TEST(Pep440, SpecifiersWithEveryOperator) {
  struct Case {
    const char* version;
    const char* spec;
    std::optional<bool> holds;
  } cases[] = {
      {"2.1.0", ">=2.1", true},
      {"2.0.9", ">=2.1", false},
      {"2.1.0+cu121", ">=2.1", true},
      {"2.1.0", ">=2.1,<3", true},
      {"3.0", ">=2.1,<3", false},
      {"3.0.0rc1", "<3.0", false}, // < leaves out pre-releases of the version named
      {"3.0.0rc1", "<3.0rc2", true},
      {"2.9.0rc1", "<3.0", true},
      {"1.0.post1", ">1.0", false}, // > leaves out post-releases of the version named
      {"1.0.post2", ">1.0.post1", true},
      {"1.1", ">1.0", true},
      {"1.0+local", ">1.0", false},
      {"1.0", "<=1.0", true},
      {"1.0+local", "<=1.0", true},
      {"2.15.0", "==2.15", true},
      {"2.15.0+cu130", "==2.15.0", true}, // a specifier without local ignores the candidate's
      {"2.15.0+cu130", "==2.15.0+cu121", false},
      {"2.15.0+cu130", "==2.15.0+cu130", true},
      {"2.15.3", "==2.15.*", true},
      {"2.16.0", "==2.15.*", false},
      {"2.15", "==2.15.0.*", true},
      {"2.15.3", "!=2.15.*", false},
      {"2.15.3", "!=2.15.2", true},
      {"2.2.5", "~=2.2", true},
      {"3.0", "~=2.2", false},
      {"2.2.5", "~=2.2.3", true},
      {"2.3.0", "~=2.2.3", false},
      {"2.1", "~=2.2", false},
      {"2.2.0rc1", "~=2.2", false},
      {"2.2", "~=2", std::nullopt}, // ~= needs two release components
      {"1.0", "===1.0", true},
      {"1.0.0", "===1.0", false}, // arbitrary equality compares text
      {"2.1-custom build", "===2.1-custom build", true},
      {"2.1-custom build", ">=2.0", std::nullopt},
      {"2.0rc1", ">=2.0rc1", true},     // pip check counts installed pre-releases
      {"1.0", ">=1.0.*", std::nullopt}, // a wildcard only with == and !=
      {"1.0", "=>1.0", std::nullopt},
      {"1.0", "", true},
      {"1.0", ">= 1.0 , < 2", true},
  };
  for (const auto& c : cases) EXPECT_EQ(pep440::satisfies(c.version, c.spec), c.holds) << c.version << " in '" << c.spec << "'";
}

TEST(Pep508, MarkersAgainstTheInterpreter) {
  auto env = pep508::linux_cpython_environment("3.12.3", "x86_64", "6.8.0-1024-aws");
  EXPECT_EQ(env.at("python_version"), "3.12");
  struct Case {
    const char* marker;
    const char* extra;
    std::optional<bool> value;
  } cases[] = {
      {"python_version < \"3.7\"", "", false},
      {"python_version >= '3.9'", "", true},
      {"python_version > \"3.12\"", "", false},
      {"python_full_version >= \"3.12.1\"", "", true},
      {"python_version ~= \"3.10\"", "", true},
      {"'3.13' > python_version", "", true}, // variable on the right
      {"sys_platform == \"linux\" and platform_machine == \"x86_64\"", "", true},
      {"platform_system == 'Linux' and platform_machine == 'aarch64'", "", false},
      {"platform_machine in 'x86_64 AMD64'", "", true},
      {"platform_machine not in \"aarch64 arm64\"", "", true},
      {"sys_platform == 'win32' or python_version >= '3.8'", "", true},
      {"(sys_platform == 'win32' or sys_platform == 'darwin') and python_version >= '3.8'", "", false},
      {"extra == \"test\"", "", false},
      {"extra == \"test\"", "test", true},
      {"extra == 'Core_CU12'", "core-cu12", true}, // PEP 685 names
      {"extra == 'pytorch' and python_version >= '3.9'", "pytorch", true},
      {"implementation_name == 'cpython'", "", true},
      {"platform_release >= '6'", "", true},
      {"platform_version == 'x'", "", std::nullopt},                   // the doctor does not know it
      {"platform_version == 'x' and python_version < '3'", "", false}, // false and unknown
      {"platform_version == 'x' or python_version > '3'", "", true},   // true or unknown
      {"os_name < 'posiy'", "", true},                                 // Python's order of strings
      {"os_name ~= 'posix'", "", std::nullopt},                        // ~= between words
      {"platform_release == '6.8.0-1024-aws'", "", true},
  };
  for (const auto& c : cases) {
    auto v = pep508::evaluate(c.marker, env, c.extra);
    ASSERT_TRUE(v.ok()) << c.marker << ": " << v.error().message;
    EXPECT_EQ(*v, c.value) << c.marker << " [extra " << c.extra << "]";
  }
  for (const char* bad : {"python_version", "python_version >>> '3'", "(python_version > '3'", "python_version > '3",
                          "python_version not '3'", "python_version > '3' xor 1"}) {
    auto v = pep508::evaluate(bad, env, "");
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_NE(v.error().message.find(bad), std::string::npos) << v.error().message;
  }
  // Without an interpreter version, markers on it are unknown, not false.
  auto bare = pep508::linux_cpython_environment("", "", "");
  EXPECT_EQ(*pep508::evaluate("python_version >= '3.8'", bare, ""), std::nullopt);
}
