// Host lists in Slurm's syntax: compression as a table of cases (Slurm's documented examples
// among them), expansion, errors, and the round trip over generated fleets.
#include "util/hostlist.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>

namespace {

std::vector<std::string> expand(std::string_view list) {
  auto hosts = util::expand_hostlist(list);
  EXPECT_TRUE(hosts.ok()) << list << ": " << (hosts.ok() ? "" : hosts.error().message);
  return hosts.ok() ? *hosts : std::vector<std::string>{};
}

struct Case {
  const char* hosts; // comma-separated names
  const char* list;  // their compressed list
};

// Each row: the names, comma-separated, and the list that must come out. The first rows are the
// examples of Slurm's documentation (scontrol(1) "show hostlist", Slurm::Hostlist(3pm)).
const Case k_cases[] = {
    {"tux1,tux2,tux3", "tux[1-3]"},
    {"node1,node2,node3,node4,node5,node12", "node[1-5,12]"},
    {"tux0,tux1,tux2,tux3,tux4,tux5,tux12,tux20,tux21,tux22,tux23,tux24,tux25", "tux[0-5,12,20-25]"},
    {"lx15,lx18,lx32,lx33", "lx[15,18,32-33]"},
    {"alpha,beta,gamma", "alpha,beta,gamma"},
    // The issue's own: zero padding kept.
    {"gpu0001,gpu0002,gpu0003,gpu0004,gpu0007", "gpu[0001-0004,0007]"},
    // Several prefixes, sorted; one host alone needs no bracket.
    {"login2,gpu02,login1,gpu01,dgx7", "dgx7,gpu[01-02],login[1-2]"},
    // Padding: the width continues across a power of ten; unpadded numbers grow freely.
    {"gpu098,gpu099,gpu100,gpu101", "gpu[098-101]"},
    {"gpu9,gpu10,gpu11", "gpu[9-11]"},
    // n01 and n2 are not a range (n[01-2] would read back as n01,n02: the pdsh bug).
    {"n01,n2", "n[01,2]"},
    {"gpu1,gpu01,gpu2,gpu02", "gpu[1-2,01-02]"},
    // Suffixes: the last run of digits is the number.
    {"gpu01-ib,gpu02-ib,gpu03-ib,gpu01-eth", "gpu01-eth,gpu[01-03]-ib"},
    {"rack1-node05,rack1-node06,rack2-node05", "rack1-node[05-06],rack2-node05"},
    {"gpu0", "gpu0"},
    {"a0,a00,a000", "a[0,00,000]"},
    {"gpu3,gpu3,gpu1", "gpu[1,3]"},
    {"10.0.0.1,10.0.0.2", "10.0.0.[1-2]"},
    {"", ""},
};

std::vector<std::string> split_names(const char* text) {
  std::vector<std::string> out;
  std::string s(text), item;
  for (std::size_t start = 0; start < s.size();) {
    std::size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

TEST(Hostlist, CompressesAsSlurmDoes) {
  for (const auto& c : k_cases) {
    auto names = split_names(c.hosts);
    EXPECT_EQ(util::compress_hostlist(names), c.list) << c.hosts;
    // And the list reads back as the same set of names.
    auto back = expand(c.list);
    std::sort(back.begin(), back.end());
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    EXPECT_EQ(back, names) << c.list;
  }
}

TEST(Hostlist, Expands) {
  EXPECT_EQ(expand("tux[1-3]"), (std::vector<std::string>{"tux1", "tux2", "tux3"}));
  EXPECT_EQ(expand("node1,node[2-5,12]"), (std::vector<std::string>{"node1", "node2", "node3", "node4", "node5", "node12"}));
  EXPECT_EQ(expand("gpu[098-100]-ib"), (std::vector<std::string>{"gpu098-ib", "gpu099-ib", "gpu100-ib"}));
  EXPECT_EQ(expand("rack[1-2]-node[01-02]"), (std::vector<std::string>{"rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"}));
  EXPECT_EQ(expand("a,,b"), (std::vector<std::string>{"a", "b"}));
}

TEST(Hostlist, RefusesMalformedLists) {
  for (const char* bad :
       {"gpu[1-3", "gpu1-3]", "gpu[]", "gpu[3-1]", "gpu[a-b]", "gpu[1-2[3]]", "gpu[1--2]", "gpu[1-99999999999999999999]"}) {
    auto hosts = util::expand_hostlist(bad);
    ASSERT_FALSE(hosts.ok()) << bad;
    EXPECT_NE(hosts.error().message.find("host list '"), std::string::npos) << hosts.error().message;
  }
  auto big = util::expand_hostlist("gpu[1-2000]", 1000);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("more than 1000 hosts"), std::string::npos);
  EXPECT_FALSE(util::expand_hostlist("a[1-40]b[1-40]", 1000).ok()); // 1,600 names through two brackets
}

// Random fleets with gaps, several prefixes, paddings and suffixes: compress, expand, compare.
TEST(Hostlist, RoundTripsRandomFleets) {
  std::mt19937 rng(24);
  const char* prefixes[] = {"gpu", "dgx-a100-", "node", "h100n"};
  const char* suffixes[] = {"", "-ib", ".cluster"};
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> names;
    int count = 1 + static_cast<int>(rng() % 300);
    for (int i = 0; i < count; ++i) {
      char name[64];
      int width = static_cast<int>(rng() % 5);
      std::snprintf(name, sizeof name, "%s%0*u%s", prefixes[rng() % 4], width, static_cast<unsigned>(rng() % 2000), suffixes[rng() % 3]);
      names.emplace_back(name);
    }
    std::string list = util::compress_hostlist(names);
    auto back = expand(list);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    auto sorted = back;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted, names) << list;
    ASSERT_EQ(back.size(), names.size()) << "a name listed twice in " << list;
  }
  // A contiguous fleet of 20,000 is one range.
  std::vector<std::string> fleet;
  for (int i = 1; i <= 20000; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "gpu%05d", i);
    fleet.emplace_back(name);
  }
  EXPECT_EQ(util::compress_hostlist(fleet), "gpu[00001-20000]");
}

} // namespace
