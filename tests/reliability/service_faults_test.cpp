// Service faults through the real binary. Corrupted state: a state.json, last report or
// Prometheus textfile that is torn or garbage is never trusted; the run warns on stderr, names
// the cause in its "full check:" reason, rewrites every output whole, and the run after it is the
// cheap unchanged one again. Two runs at once: the second waits (--wait) or exits 3 saying who
// holds the lock; outputs stay whole either way. SIGTERM at any moment of `daemon`: exit 0 (or,
// before the daemon has set up its signal handling, death by SIGTERM, which systemd counts as
// clean) and no partial file.
#include "doctor_runner.hpp"
#include "service/run.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <fcntl.h>
#include <functional>
#include <future>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <thread>

namespace fs = std::filesystem;
using reliability::run_doctor;
using reliability::TempDir;
using testing::HasSubstr;

namespace {

struct Corruption {
  const char* name;
  const char* file;       // under the test directory
  std::function<std::string(const std::string&)> damage; // old content -> new content
  const char* warning;    // on stderr
  const char* reason;     // in "full check: ..."
};

void PrintTo(const Corruption& c, std::ostream* os) { *os << c.name; } // NOLINT(readability-identifier-naming): gtest's name

std::string cut_half(const std::string& text) { return text.substr(0, text.size() / 2); }

// A service configuration in dir (state/, out/doctor.prom) and the arguments of `command` on it.
std::vector<std::string> service_args(const TempDir& dir, const std::string& command) {
  EXPECT_TRUE(util::write_file_atomic(dir / "config.yaml", "state_dir: " + (dir / "state").string() +
                                                               "\noutputs:\n  prometheus: " + (dir / "out/doctor.prom").string() + "\n"));
  return {command, "--config", (dir / "config.yaml").string(), "--facts",
          std::string(NVTE_TESTS_DIR) + "/fixtures/snapshots/h100-node.json", "--rules", std::string(NVTE_SOURCE_DIR) + "/rules"};
}

// Every output under dir is whole: no temporary left, every JSON parses, the textfile is intact.
void expect_outputs_whole(const TempDir& dir) {
  for (const auto& entry : fs::recursive_directory_iterator(dir.path())) {
    std::string name = entry.path().filename().string();
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << "temporary left: " << entry.path();
    if (!entry.is_regular_file()) continue;
    auto text = util::read_file(entry.path());
    ASSERT_TRUE(text.ok()) << entry.path();
    if (entry.path().extension() == ".json") {
      EXPECT_FALSE(nlohmann::json::parse(*text, nullptr, false).is_discarded()) << "torn: " << entry.path();
    }
    if (entry.path().extension() == ".prom") {
      EXPECT_TRUE(service::textfile_intact(*text)) << "torn: " << entry.path();
    }
  }
}

class CorruptedServiceFile : public testing::TestWithParam<Corruption> {};

TEST_P(CorruptedServiceFile, RecoveredWithAWarning) {
  const Corruption& c = GetParam();
  TempDir dir(std::string("state-") + c.name);
  auto args = service_args(dir, "run");
  auto first = run_doctor(args);
  ASSERT_LE(first.exit_code, 2) << reliability::context(first);
  auto settled = run_doctor(args);
  ASSERT_THAT(settled.out, HasSubstr("(unchanged: nothing changed")) << reliability::context(settled);

  fs::path damaged = dir / c.file;
  auto before = util::read_file(damaged);
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(util::write_file_atomic(damaged, c.damage(*before)));

  auto repaired = run_doctor(args);
  EXPECT_EQ(repaired.exit_code, settled.exit_code) << reliability::context(repaired);
  EXPECT_THAT(repaired.err, HasSubstr(c.warning)) << reliability::context(repaired);
  EXPECT_THAT(repaired.out, HasSubstr(std::string("full check: ") + c.reason)) << reliability::context(repaired);
  auto after = util::read_file(damaged);
  ASSERT_TRUE(after.ok());
  if (damaged.extension() == ".json") {
    EXPECT_FALSE(nlohmann::json::parse(*after, nullptr, false).is_discarded()) << "rewritten whole: " << *after;
  } else {
    EXPECT_THAT(*after, testing::EndsWith("\n"));
    EXPECT_THAT(*after, HasSubstr("\nnvte_doctor_last_run_timestamp_seconds "));
  }

  auto next = run_doctor(args);
  EXPECT_THAT(next.out, HasSubstr("(unchanged: nothing changed")) << reliability::context(next);
  EXPECT_EQ(next.err, "") << reliability::context(next);
  expect_outputs_whole(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Run, CorruptedServiceFile,
    testing::Values(
        Corruption{"state_garbage", "state/state.json", [](const std::string&) { return std::string("\x7f" "ELF\x02\x01 garbage"); },
                   "unreadable run state; running a full check", "no previous run state"},
        Corruption{"state_truncated", "state/state.json", cut_half, "unreadable run state; running a full check",
                   "no previous run state"},
        Corruption{"state_in_the_future", "state/state.json",
                   [](const std::string& text) {
                     auto at = text.find("\"last_full_run\": ");
                     auto end = text.find_first_of(",\n}", at + 17);
                     return text.substr(0, at) + "\"last_full_run\": 9999999999" + text.substr(end);
                   },
                   "the last full check is dated in the future", "the last full check is dated"},
        Corruption{"report_truncated", "state/report.json", cut_half, "the last report is not a readable report",
                   "the last report is unreadable"},
        Corruption{"report_empty", "state/report.json", [](const std::string&) { return std::string(); },
                   "the last report is not a readable report", "the last report is unreadable"},
        Corruption{"textfile_torn", "out/doctor.prom", [](const std::string& text) { return text.substr(0, text.size() - 7); },
                   "the Prometheus textfile is torn or corrupted", "the Prometheus textfile is unreadable"}),
    [](const testing::TestParamInfo<Corruption>& param) { return std::string(param.param.name); });

TEST(TwoRunsAtOnce, TheSecondSaysWhoHoldsTheLockAndTouchesNothing) {
  TempDir dir("lock-held");
  auto args = service_args(dir, "run");
  auto first = run_doctor(args);
  ASSERT_LE(first.exit_code, 2) << reliability::context(first);
  auto report_before = util::read_file(dir / "state/report.json");
  auto textfile_before = util::read_file(dir / "out/doctor.prom");
  ASSERT_TRUE(report_before.ok() && textfile_before.ok());

  // This test holds the lock as a run in progress would (flock, as RunLock takes it).
  util::Fd lock(::open((dir / "state/run.lock").c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(lock);
  ASSERT_EQ(::flock(lock.get(), LOCK_EX | LOCK_NB), 0);
  ASSERT_EQ(::ftruncate(lock.get(), 0), 0);
  ASSERT_EQ(::pwrite(lock.get(), "4242\n", 5, 0), 5);
  args.emplace_back("--force");
  auto second = run_doctor(args);
  EXPECT_EQ(second.exit_code, 3) << reliability::context(second);
  EXPECT_LT(second.seconds, 5.0);
  EXPECT_THAT(second.err, HasSubstr("another nvte-doctor run is in progress (pid 4242 holds")) << reliability::context(second);
  EXPECT_EQ(std::count(second.err.begin(), second.err.end(), '\n'), 1) << reliability::context(second);
  EXPECT_EQ(*util::read_file(dir / "state/report.json"), *report_before);
  EXPECT_EQ(*util::read_file(dir / "out/doctor.prom"), *textfile_before);

  // With --wait it runs as soon as the holder lets go.
  args.emplace_back("--wait");
  auto waiting = std::async(std::launch::async, [&] { return run_doctor(args); });
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout) << "--wait did not wait";
  ::flock(lock.get(), LOCK_UN);
  auto waited = waiting.get();
  EXPECT_EQ(waited.exit_code, first.exit_code) << reliability::context(waited);
  EXPECT_THAT(waited.out, HasSubstr("full check: forced")) << reliability::context(waited);
  expect_outputs_whole(dir);
}

TEST(TwoRunsAtOnce, ManyForcedRunsLeaveWholeOutputs) {
  TempDir dir("many-runs");
  auto args = service_args(dir, "run");
  args.emplace_back("--force");
  for (bool wait : {true, false}) {
    if (wait) args.emplace_back("--wait");
    else args.pop_back();
    std::vector<std::future<reliability::DoctorRun>> runs;
    runs.reserve(6);
    for (int i = 0; i < 6; ++i) runs.push_back(std::async(std::launch::async, [&args] { return run_doctor(args); }));
    int full = 0;
    for (auto& r : runs) {
      auto run = r.get();
      if (run.exit_code == 3) {
        EXPECT_FALSE(wait) << "--wait must not give up" << reliability::context(run);
        EXPECT_THAT(run.err, HasSubstr("another nvte-doctor run is in progress")) << reliability::context(run);
      } else {
        EXPECT_EQ(run.exit_code, 1) << reliability::context(run); // the h100 snapshot is WARNING
        EXPECT_THAT(run.out, HasSubstr("full check: forced")) << reliability::context(run);
        ++full;
      }
    }
    EXPECT_GE(full, 1);
    if (wait) {
      EXPECT_EQ(full, 6);
    }
    expect_outputs_whole(dir);
    EXPECT_TRUE(service::load_state(dir / "state/state.json"));
  }
}

// The doctor in the background, for a signal at a chosen moment; stderr goes to a file.
pid_t spawn_doctor_logged(const std::vector<std::string>& args, const fs::path& stderr_file) {
  std::vector<std::string> argv_strings = {NVTE_BINARY};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(argv_strings.size() + 1);
  for (auto& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (const auto& [name, value] : reliability::doctor_environment()) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

TEST(DaemonSigterm, CleanExitAndNoPartialFileAtAnyMoment) {
  // From before the daemon blocks its signals, through the first full check (writing the
  // report, textfile and state), to the idle loop.
  for (int delay_ms : {0, 2, 5, 10, 15, 20, 30, 45, 70, 100, 200, 400}) {
    TempDir dir("sigterm-" + std::to_string(delay_ms));
    auto args = service_args(dir, "daemon");
    pid_t pid = spawn_doctor_logged(args, dir / "stderr.txt");
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(pid, SIGTERM);
    int status = 0;
    pid_t done = 0;
    auto start = std::chrono::steady_clock::now();
    while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (done != pid) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      FAIL() << "daemon did not exit within 20 s of SIGTERM sent after " << delay_ms << " ms";
    }
    auto err = util::read_file(dir / "stderr.txt");
    std::printf("SIGTERM after %3d ms: %s, %s\n", delay_ms, WIFSIGNALED(status) ? "killed by it" : "exit",
                fs::exists(dir / "state/report.json") ? "report written" : "no report yet");
    if (WIFSIGNALED(status)) {
      EXPECT_EQ(WTERMSIG(status), SIGTERM) << delay_ms << " ms";
      EXPECT_FALSE(fs::exists(dir / "state/report.json")) << "killed by the signal after it had begun writing (" << delay_ms << " ms)";
    } else {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << "after " << delay_ms << " ms: status " << status << "\n" << (err ? *err : "");
    }
    fs::remove(dir / "stderr.txt");
    expect_outputs_whole(dir);
  }
}

} // namespace
