// The file cache across runs (util/file_cache.hpp, issue 40): a value comes back only for the
// identity it was stored with; a cache file that is corrupt, foreign, oversized, a symlink or in
// a directory others may write is ignored (never an error), and nothing is saved there.
#include "util/file.hpp"
#include "util/file_cache.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

class FileCacheTest : public testing::Test {
protected:
  void SetUp() override {
    fs::remove_all(m_base);
    fs::create_directories(m_base);
    fs::permissions(m_base, fs::perms::owner_all);
  }
  void TearDown() override { fs::remove_all(m_base); }

  std::shared_ptr<util::FileCache> open(util::FileCache::Limits limits = {}) {
    limits.racy_seconds = 0;
    return util::FileCache::open(m_dir, "files.cache", "tag-1", limits);
  }
  // An identity of an old file (cacheable: not racily new).
  static util::FileIdentity old_id(std::uint64_t size = 10) { return {1, 2, size, 1'000'000'000'000'000'000, 1'000'000'000'000'000'000}; }
  void write(const std::string& text) { std::ofstream(m_dir / "files.cache", std::ios::binary) << text; }

  fs::path m_base = fs::temp_directory_path() / ("nvte-file-cache-" + std::to_string(::getpid()));
  fs::path m_dir = m_base / "cache" / "nvte-doctor";
};

TEST_F(FileCacheTest, AValueComesBackOnlyForItsIdentity) {
  {
    auto cache = open();
    ASSERT_TRUE(cache->enabled());
    cache->put("kind", "/lib/a.so", old_id(), "value\twith\ttabs\nand a newline \\ and a backslash");
    cache->save();
  }
  EXPECT_TRUE(fs::is_directory(m_dir)) << "the directory and its parent are made";
  EXPECT_EQ(fs::status(m_dir).permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(fs::status(m_dir / "files.cache").permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  auto cache = open();
  EXPECT_EQ(cache->find("kind", "/lib/a.so", old_id()).value_or("<miss>"), "value\twith\ttabs\nand a newline \\ and a backslash");
  EXPECT_FALSE(cache->find("other", "/lib/a.so", old_id())) << "another kind";
  EXPECT_FALSE(cache->find("kind", "/lib/b.so", old_id())) << "another file";
  util::FileIdentity changed = old_id();
  changed.size = 11;
  EXPECT_FALSE(cache->find("kind", "/lib/a.so", changed)) << "a size change";
  changed = old_id();
  changed.mtime_ns += 1;
  EXPECT_FALSE(cache->find("kind", "/lib/a.so", changed)) << "a touch";
  changed = old_id();
  changed.ctime_ns += 1;
  EXPECT_FALSE(cache->find("kind", "/lib/a.so", changed)) << "rewritten in place with its mtime put back";
  changed = old_id();
  changed.ino += 1;
  EXPECT_FALSE(cache->find("kind", "/lib/a.so", changed)) << "replaced by another file";
  EXPECT_EQ(cache->hits(), 1u);
}

TEST_F(FileCacheTest, ARacilyNewFileIsNotCached) {
  auto cache = util::FileCache::open(m_dir, "files.cache", "tag-1");
  util::FileIdentity fresh = old_id();
  fresh.mtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  cache->put("kind", "/lib/a.so", fresh, "v");
  EXPECT_FALSE(cache->find("kind", "/lib/a.so", fresh));
}

TEST_F(FileCacheTest, ABadCacheFileIsIgnoredAndReplaced) {
  {
    auto cache = open();
    cache->put("kind", "/lib/a.so", old_id(), "v");
    cache->save();
  }
  const std::string good = util::read_file(m_dir / "files.cache").value();
  for (const std::string& bad :
       std::vector<std::string>{"garbage", good.substr(0, good.size() - 3), "nvte-file-cache 1 tag-2\nend 0\n",
                                good.substr(0, good.find('\n') + 1) + "kind\t/lib/a.so\t1\tx\t10\t1\t1\tv\nend 1\n", good + "extra\n",
                                good.substr(0, good.rfind("end")) + "end 2\n"}) {
    write(bad);
    auto cache = open();
    EXPECT_TRUE(cache->enabled());
    EXPECT_FALSE(cache->find("kind", "/lib/a.so", old_id())) << bad;
    cache->put("kind", "/lib/c.so", old_id(), "w");
    cache->save();
    EXPECT_TRUE(open()->find("kind", "/lib/c.so", old_id())) << "rewritten whole after: " << bad;
  }
}

TEST_F(FileCacheTest, AnOversizedCacheFileIsIgnoredAndNoneIsWrittenOverTheLimit) {
  util::FileCache::Limits small;
  small.max_file_bytes = 200;
  {
    auto cache = open(small);
    for (int i = 0; i < 20; ++i) cache->put("kind", "/lib/" + std::to_string(i) + ".so", old_id(), std::string(40, 'x'));
    cache->save();
  }
  EXPECT_LE(fs::file_size(m_dir / "files.cache"), 200u) << "bounded on save";
  write("nvte-file-cache 1 tag-1\n" + std::string(300, 'x'));
  auto cache = open(small);
  EXPECT_TRUE(cache->enabled()); // ignored, not an error
  EXPECT_FALSE(cache->find("kind", "/lib/0.so", old_id()));
}

TEST_F(FileCacheTest, ASymlinkAsTheCacheFileIsNotFollowed) {
  {
    auto cache = open();
    cache->put("kind", "/lib/a.so", old_id(), "v");
    cache->save();
  }
  fs::rename(m_dir / "files.cache", m_base / "elsewhere");
  fs::create_symlink(m_base / "elsewhere", m_dir / "files.cache");
  EXPECT_FALSE(open()->find("kind", "/lib/a.so", old_id()));
}

TEST_F(FileCacheTest, ADirectoryOthersMayWriteIsNotUsed) {
  fs::create_directories(m_dir);
  fs::permissions(m_dir, fs::perms::owner_all | fs::perms::group_all | fs::perms::others_all);
  auto cache = open();
  EXPECT_FALSE(cache->enabled());
  cache->put("kind", "/lib/a.so", old_id(), "v");
  cache->save();
  EXPECT_FALSE(fs::exists(m_dir / "files.cache")) << "nothing written into a directory others may write";
}

TEST_F(FileCacheTest, EntriesAreBoundedUnusedOnesFirst) {
  util::FileCache::Limits few;
  few.max_entries = 3;
  {
    auto cache = open(few);
    for (int i = 0; i < 3; ++i) cache->put("kind", "/old/" + std::to_string(i), old_id(), "v");
    cache->save();
  }
  {
    auto cache = open(few);
    EXPECT_TRUE(cache->find("kind", "/old/1", old_id()));
    cache->put("kind", "/new/0", old_id(), "v");
    cache->put("kind", "/new/1", old_id(), "v");
    cache->save();
  }
  auto cache = open(few);
  EXPECT_TRUE(cache->find("kind", "/old/1", old_id())) << "used by the last run";
  EXPECT_TRUE(cache->find("kind", "/new/0", old_id()));
  EXPECT_TRUE(cache->find("kind", "/new/1", old_id()));
}

TEST(UserCacheDirectory, XdgFirstThenHomeButNeverTheRoot) {
  std::string xdg = std::getenv("XDG_CACHE_HOME") ? std::getenv("XDG_CACHE_HOME") : "";
  std::string home = std::getenv("HOME") ? std::getenv("HOME") : "";
  ::setenv("XDG_CACHE_HOME", "/x/cache", 1);
  EXPECT_EQ(util::user_cache_directory().value_or("none"), fs::path("/x/cache"));
  ::setenv("XDG_CACHE_HOME", "relative", 1);
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(util::user_cache_directory().value_or("none"), fs::path("/home/u/.cache"));
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/", 1);
  EXPECT_FALSE(util::user_cache_directory()) << "a service without a home gets no /.cache";
  ::unsetenv("HOME");
  EXPECT_FALSE(util::user_cache_directory());
  if (!xdg.empty()) ::setenv("XDG_CACHE_HOME", xdg.c_str(), 1);
  if (!home.empty()) ::setenv("HOME", home.c_str(), 1);
}

TEST(PackStrings, RoundTripsAndRefusesWhatItDidNotMake) {
  std::vector<std::string> parts{"", "a:b", std::string("nul\0in", 6), "12:"};
  auto back = util::unpack_strings(util::pack_strings(parts));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, parts);
  EXPECT_FALSE(util::unpack_strings("3:ab"));
  EXPECT_FALSE(util::unpack_strings("x:ab"));
  EXPECT_FALSE(util::unpack_strings("2"));
}

} // namespace
