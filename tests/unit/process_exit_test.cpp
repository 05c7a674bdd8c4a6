// keep_until_exit holds an object to the end of a one-shot command; a long-lived process (the
// daemon) keeps nothing, or each of its runs would add the probe's mapped files and the report.
#include "util/process_exit.hpp"

#include <gtest/gtest.h>

#include <memory>

TEST(ProcessExit, KeepsUntilExitUnlessTheProcessIsLongLived) {
  auto kept = std::make_shared<int>(1);
  std::weak_ptr<int> watch_kept = kept;
  util::keep_until_exit(std::move(kept));
  EXPECT_FALSE(watch_kept.expired()); // held past the caller's last reference

  util::set_long_lived();
  EXPECT_TRUE(watch_kept.expired()); // what was kept before goes too

  auto later = std::make_shared<int>(2);
  std::weak_ptr<int> watch_later = later;
  util::keep_until_exit(std::move(later));
  EXPECT_TRUE(watch_later.expired());
}
