#include "probe/ld_cache.hpp"
#include "support/ld_cache_writer.hpp"

#include <array>
#include <cstdio>
#include <gtest/gtest.h>
#include <memory>

using namespace probe;

TEST(LdCache, ParsesWhatTheWriterWrites) {
  auto bytes = test_support::build_ld_cache({{"libcudnn.so.9", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9"},
                                             {"libcudnn.so.9", "/usr/lib/i386-linux-gnu/libcudnn.so.9", 0x0003},
                                             {"libnccl.so.2", "/opt/nccl/lib/libnccl.so.2"}});
  auto cache = parse_ld_cache(bytes, "test");
  ASSERT_TRUE(cache.ok()) << cache.error().message;
  ASSERT_EQ(cache->entries.size(), 3u);
  EXPECT_EQ(cache->entries[2].path, "/opt/nccl/lib/libnccl.so.2");
  ASSERT_NE(cache->find("libnccl.so.2"), nullptr);
  // The 32-bit entry is not for this loader.
  EXPECT_EQ(cache->find("libcudnn.so.9")->path, "/usr/lib/x86_64-linux-gnu/libcudnn.so.9");
  EXPECT_EQ(cache->find("libcudnn.so"), nullptr);
}

TEST(LdCache, RejectsDamagedFiles) {
  auto bytes = test_support::build_ld_cache({{"libnccl.so.2", "/opt/nccl/lib/libnccl.so.2"}});
  EXPECT_FALSE(parse_ld_cache(bytes.substr(0, 30), "t").ok());
  EXPECT_FALSE(parse_ld_cache(bytes.substr(0, 60), "t").ok()); // entry cut
  EXPECT_FALSE(parse_ld_cache(bytes.substr(0, bytes.size() - 5), "t").ok()); // string cut
  EXPECT_FALSE(parse_ld_cache("ld.so-1.7.0\0\0\0\0\0", "t").ok());
  auto bad = bytes;
  bad[0] = 'X';
  auto r = parse_ld_cache(bad, "/etc/ld.so.cache");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("/etc/ld.so.cache"), std::string::npos);
}

TEST(LdCache, OldFormatPrefixIsSkipped) {
  auto fresh = test_support::build_ld_cache({{"libz.so.1", "/lib/libz.so.1"}});
  std::string old("ld.so-1.7.0", 11);
  old += '\0';
  old += std::string("\x01\0\0\0", 4);     // nlibs = 1
  old += std::string(12, '\0');            // one old entry
  old += std::string(32 - old.size(), '\0'); // align to 8 (28 -> 32)
  auto cache = parse_ld_cache(old + fresh, "t");
  ASSERT_TRUE(cache.ok()) << cache.error().message;
  EXPECT_EQ(cache->entries.at(0).path, "/lib/libz.so.1");
}

// The real cache of this machine agrees with `ldconfig -p` (the test may shell out; the probe never does).
TEST(LdCache, RealCacheAgreesWithLdconfig) {
  auto cache = read_ld_cache("/");
  if (!cache.ok() && cache.error().kind == util::ErrorKind::not_found) GTEST_SKIP() << "no /etc/ld.so.cache";
  ASSERT_TRUE(cache.ok()) << cache.error().message;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen("ldconfig -p 2>/dev/null || /sbin/ldconfig -p", "r"), ::pclose);
  ASSERT_TRUE(pipe);
  std::string out;
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe.get())) out.append(buf.data(), n);
  if (out.empty()) GTEST_SKIP() << "no ldconfig";
  EXPECT_NE(out.find(std::to_string(cache->entries.size()) + " libs found"), std::string::npos) << out.substr(0, 200);
  const LdCacheEntry* libc = cache->find("libc.so.6");
  ASSERT_NE(libc, nullptr);
  EXPECT_NE(out.find("libc.so.6 (libc6,x86-64) => " + libc->path), std::string::npos);
}
