#include "model/version.hpp"

#include <gtest/gtest.h>

using model::Version;
using model::VersionRange;

static Version v(const char* text) {
  auto r = Version::parse(text);
  EXPECT_TRUE(r.ok()) << text;
  return r.ok() ? *r : Version{};
}

TEST(Version, ParsesTheStacksForms) {
  EXPECT_EQ(v("9.3.0.75").components(), (std::vector<long>{9, 3, 0, 75}));
  EXPECT_EQ(v("2.3.0+cu124").local(), "cu124");
  EXPECT_EQ(v("2.3.0+cu124"), v("2.3.0+cu124"));
  EXPECT_EQ(v("580.159.04").text(), "580.159.04");
  EXPECT_EQ(v("580.159.04").minor(), 159);
  EXPECT_EQ(v("12.4").minor(), 4);
  EXPECT_EQ(v("90100"), (Version{9, 1, 0}));
  EXPECT_EQ(v("91900").to_string(), "9.19.0");
  EXPECT_EQ(v("8907"), (Version{8, 9, 7}));
  EXPECT_EQ(Version::from_packed(22809), (Version{2, 28, 9}));
  EXPECT_TRUE(v("2.1.0.dev0+abc").is_prerelease());
}

TEST(Version, TotalOrder) {
  EXPECT_LT(v("9.1.0"), v("9.3"));
  EXPECT_EQ(v("9.3"), v("9.3.0"));
  EXPECT_LT(v("9.3.0"), v("9.3.0.75"));
  EXPECT_LT(v("9.9.0"), v("9.10.0"));
  EXPECT_LT(v("2.1.0.dev0+abc"), v("2.1.0"));
  EXPECT_LT(v("1.13.0rc1"), v("1.13.0"));
  EXPECT_LT(v("2.5.0"), v("2.5.0.post1"));
  EXPECT_LT(v("2.0.0.dev0"), v("2.0.0a1"));
  EXPECT_LT(v("2.3.0"), v("2.3.0+cu124"));
  EXPECT_LT(v("12.4"), v("13.0"));
}

TEST(Version, RejectsGarbage) {
  for (const char* bad : {"", "abc", "9.x", "1.2.3+", "1.2.3foo", "+cu124", "v", "1.2.3+cu 124"}) {
    auto r = Version::parse(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.error().kind, util::ErrorKind::parse);
    }
  }
}

TEST(VersionRange, Clauses) {
  auto range = *VersionRange::parse(">=1.10,<2.1");
  EXPECT_TRUE(range.contains(v("1.10")));
  EXPECT_TRUE(range.contains(v("2.0.1")));
  EXPECT_FALSE(range.contains(v("2.1")));
  EXPECT_FALSE(range.contains(v("1.9")));
  auto prefix = *VersionRange::parse("==9.10.*");
  EXPECT_TRUE(prefix.contains(v("9.10.1.4")));
  EXPECT_FALSE(prefix.contains(v("9.1.0")));
  EXPECT_TRUE(VersionRange::parse("9.14.0")->contains(v("9.14")));
  EXPECT_FALSE(VersionRange::parse(">=").ok());
  EXPECT_FALSE(VersionRange::parse(">1.2.*").ok());
}
