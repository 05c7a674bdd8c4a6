// util::parallel_for and util::list_directory_entries: the pieces the
// probe's threads are made of.
#include "util/file.hpp"
#include "util/parallel.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

TEST(Parallel, ForCallsEveryIndexOnceWhateverTheThreads) {
  for (unsigned threads : {0u, 1u, 2u, 8u, 64u}) {
    std::vector<std::atomic<int>> calls(1000);
    util::parallel_for(calls.size(), threads, [&](std::size_t i) { ++calls[i]; });
    for (std::size_t i = 0; i < calls.size(); ++i) ASSERT_EQ(calls[i].load(), 1) << "index " << i << ", " << threads << " threads";
  }
  int none = 0;
  util::parallel_for(0, 8, [&](std::size_t) { ++none; });
  EXPECT_EQ(none, 0);
}

TEST(Parallel, ForUsesOtherThreadsWhenAsked) {
  std::mutex mutex;
  std::set<std::thread::id> seen;
  // Items that wait a little, so that one thread cannot take them all before the others start.
  util::parallel_for(64, 4, [&](std::size_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard lock(mutex);
    seen.insert(std::this_thread::get_id());
  });
  EXPECT_GT(seen.size(), 1u);
  seen.clear();
  util::parallel_for(64, 1, [&](std::size_t) { seen.insert(std::this_thread::get_id()); });
  EXPECT_EQ(seen, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(Parallel, AnExceptionIsRethrownOnTheCallersThreadNeverCrossesOne) {
  // Issue 37: check --te-log with one bad version among 8 configs died of SIGABRT in about 1 run
  // of 5: the throw in util::Fatal ran on a helper thread when the item landed there, and an
  // exception leaving a std::jthread's function is std::terminate. Without the capture this test
  // dies the same way within a few of its rounds.
  const auto caller = std::this_thread::get_id();
  int on_helpers = 0;
  for (int round = 0; round < 40; ++round) {
    std::atomic<bool> thrown_on_helper{false};
    try {
      util::parallel_for(16, 4, [&](std::size_t i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1)); // every thread gets items
        if (i == 5) {
          thrown_on_helper = std::this_thread::get_id() != caller;
          throw std::runtime_error("item 5");
        }
      });
      ADD_FAILURE() << "no exception in round " << round;
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "item 5");
    }
    on_helpers += thrown_on_helper;
  }
  EXPECT_GT(on_helpers, 0) << "item 5 never ran on a helper thread: the test proves nothing";
  // One thread: in order, on the caller's thread, as a plain loop.
  EXPECT_THROW(util::parallel_for(4, 1,
                                  [](std::size_t i) {
                                    if (i == 2) throw std::logic_error("one");
                                  }),
               std::logic_error);
}

TEST(Parallel, TheLowestIndexThatThrewWinsAndLaterItemsAreNotStarted) {
  // The error a user sees must not depend on the schedule: with items 3 and 9 failing, item 9
  // throws first in time (3 waits), yet 3's exception is the one returned, as a loop would.
  for (int round = 0; round < 10; ++round) {
    std::atomic<int> started{0};
    try {
      util::parallel_for(1000, 4, [&](std::size_t i) {
        ++started;
        if (i == 3) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          throw std::runtime_error("item 3");
        }
        if (i == 9) throw std::runtime_error("item 9");
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      });
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "item 3");
    }
    EXPECT_LT(started.load(), 100) << "items after a failure kept being started";
  }
}

TEST(Parallel, AvailableCpusIsAtLeastOneAndTheEnvironmentCapsIt) {
  EXPECT_GE(util::available_cpus(), 1u);
  EXPECT_EQ(util::capped_cpus(16, nullptr), 16u);
  EXPECT_EQ(util::capped_cpus(16, "1"), 1u);
  EXPECT_EQ(util::capped_cpus(16, "4"), 4u);
  EXPECT_EQ(util::capped_cpus(2, "64"), 2u); // a cap, never more than the affinity mask allows
  for (const char* ignored : {"", "0", "-3", "two", "4x"}) EXPECT_EQ(util::capped_cpus(16, ignored), 16u) << ignored;
}

TEST(Files, ListDirectoryEntriesSaysWhatEachEntryIs) {
  auto dir = std::filesystem::temp_directory_path() / ("nvte-entries-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "sub");
  std::ofstream(dir / "file") << "x";
  std::filesystem::create_symlink("file", dir / "link");
  auto entries = util::list_directory_entries(dir);
  ASSERT_TRUE(entries) << entries.error().message;
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].name, "file");
  EXPECT_EQ((*entries)[1].name, "link");
  EXPECT_EQ((*entries)[2].name, "sub");
  // A filesystem may leave d_type unknown (the caller then stats); when it says, it is right.
  for (const auto& [at, want] :
       {std::pair{0, util::EntryType::regular}, std::pair{1, util::EntryType::symlink}, std::pair{2, util::EntryType::directory}}) {
    auto got = (*entries)[static_cast<std::size_t>(at)].type;
    EXPECT_TRUE(got == want || got == util::EntryType::unknown) << (*entries)[static_cast<std::size_t>(at)].name;
  }
  EXPECT_EQ(util::list_directory(dir).value(), (std::vector<std::string>{"file", "link", "sub"}));
  EXPECT_FALSE(util::list_directory_entries(dir / "missing"));
  std::filesystem::remove_all(dir);
}

} // namespace
