// `check --te-log` with one bad version among 8 configs (issue 37), against the built binary: it
// died of SIGABRT in about one run of five, because the error was thrown on a helper thread of
// util::parallel_for.
#include "doctor_runner.hpp"
#include "util/file.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>

namespace fs = std::filesystem;

namespace {

const std::string k_snapshot = std::string(NVTE_TESTS_DIR) + "/fixtures/snapshots/h100-node.json";
const std::string k_rules = std::string(NVTE_SOURCE_DIR) + "/rules";
const std::string k_log = std::string(NVTE_TESTS_DIR) + "/fixtures/te-logs/v2.8-ampere-hd256-torchrun.log";

// The first line of the fixture log (TE 2.8's config line), with its batch size replaced.
std::string config_line(int batch_size) {
  auto text = util::read_file(k_log);
  EXPECT_TRUE(text.ok());
  std::string line = text->substr(0, text->find('\n'));
  return std::regex_replace(line, std::regex("'batch_size': \\d+"), "'batch_size': " + std::to_string(batch_size));
}

} // namespace

TEST(TeLogInput, CheckWithOneBadVersionAmongEightConfigsIsExit3EveryRun) {
  // Issue 37: the bad version's util::Fatal was thrown inside util::parallel_for; when a helper
  // thread took that config, the exception left its thread: std::terminate, SIGABRT (about 1 run
  // in 5 with 8 configs; 1 in 10 on this 2-core machine). Without the fix 30 runs of the first
  // log abort at least once with a probability above 95%, and the second log (every config but
  // the first bad: a helper thread all but surely takes one) aborts nearly every run.
  reliability::TempDir dir("te-log-bad-version");
  std::string one_bad, seven_bad;
  for (int i = 0; i < 8; ++i) {
    std::string good = config_line(i + 1);
    std::string bad = std::regex_replace(good, std::regex("'cudnn_version': '[^']*'"), "'cudnn_version': 'nine." + std::to_string(i) + "'");
    one_bad += (i == 5 ? bad : good) + "\n";
    seven_bad += (i == 0 ? good : bad) + "\n";
  }
  ASSERT_TRUE(util::write_file_atomic(dir / "one.log", one_bad).ok());
  ASSERT_TRUE(util::write_file_atomic(dir / "seven.log", seven_bad).ok());
  for (int round = 0; round < 30; ++round) {
    auto run = reliability::run_doctor({"check", "--facts", k_snapshot, "--rules", k_rules, "--te-log", (dir / "one.log").string()});
    ASSERT_EQ(run.exit_code, 3) << "round " << round << reliability::context(run);
    ASSERT_NE(run.err.find("one.log:6: "), std::string::npos) << run.err;
    ASSERT_NE(run.err.find("'nine.5'"), std::string::npos) << run.err;
  }
  // With several bad configs the error is the first one's, whatever the threads did: the
  // lowest index that threw, as a loop in order would stop there.
  for (int round = 0; round < 10; ++round) {
    auto run = reliability::run_doctor({"check", "--facts", k_snapshot, "--rules", k_rules, "--te-log", (dir / "seven.log").string()});
    ASSERT_EQ(run.exit_code, 3) << "round " << round << reliability::context(run);
    ASSERT_NE(run.err.find("seven.log:2: "), std::string::npos) << run.err;
    ASSERT_NE(run.err.find("'nine.1'"), std::string::npos) << run.err;
  }
}
