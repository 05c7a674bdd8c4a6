#include "util/file.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

#if defined(__SANITIZE_ADDRESS__)
#define NVTE_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NVTE_TEST_ASAN 1
#endif
#endif
#ifndef NVTE_TEST_ASAN
#define NVTE_TEST_ASAN 0
#endif

namespace {

fs::path temp_dir() {
  auto dir = fs::temp_directory_path() / ("nvte-util-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

} // namespace

TEST(Strings, ShellQuoteLeavesPlainWordsAndQuotesTheRest) {
  EXPECT_EQ(util::shell_quote("/opt/venv/bin/python3"), "/opt/venv/bin/python3");
  EXPECT_EQ(util::shell_quote("/opt/my venv/bin/python3"), "'/opt/my venv/bin/python3'");
  EXPECT_EQ(util::shell_quote("$(rm -rf /)"), "'$(rm -rf /)'");
  EXPECT_EQ(util::shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(util::shell_quote(""), "''");
}

TEST(Strings, ValidUtf8KeepsWellFormedTextAndReplacesEachIllFormedPart) {
  const std::string replacement = "\xEF\xBF\xBD";
  EXPECT_EQ(util::valid_utf8("/opt/venv/bin/python3"), "/opt/venv/bin/python3");
  EXPECT_EQ(util::valid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(util::valid_utf8("/opt/v\xFF" "env"), "/opt/v" + replacement + "env");            // Latin-1 byte
  EXPECT_EQ(util::valid_utf8("a\xC3"), "a" + replacement);                                  // truncated at the end
  EXPECT_EQ(util::valid_utf8("\xE2\x82" "x"), replacement + "x");                             // one maximal subpart
  EXPECT_EQ(util::valid_utf8("\xC0\xAF"), replacement + replacement);                        // overlong '/'
  EXPECT_EQ(util::valid_utf8("\xED\xA0\x80"), replacement + replacement + replacement);      // a surrogate
  EXPECT_EQ(util::valid_utf8("\xF4\x90\x80\x80"), replacement + replacement + replacement + replacement); // above U+10FFFF
  EXPECT_EQ(util::valid_utf8(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(Strings, ParseIntIsStrict) {
  EXPECT_EQ(util::parse_int("42"), 42);
  EXPECT_EQ(util::parse_int("-1"), -1);
  EXPECT_FALSE(util::parse_int("42x"));
  EXPECT_FALSE(util::parse_int(""));
  EXPECT_FALSE(util::parse_int("99999999999999999999999"));
}

TEST(Strings, EditDistance) {
  EXPECT_EQ(util::edit_distance("cudnn.version", "cudnn.verison"), 2u);
  EXPECT_EQ(util::edit_distance("", "abc"), 3u);
}

TEST(File, AtomicWriteReplacesAndLeavesNoTemporaries) {
  auto dir = temp_dir();
  auto path = dir / "report.json";
  ASSERT_TRUE(util::write_file_atomic(path, "old").ok());
  ASSERT_TRUE(util::write_file_atomic(path, "new").ok());
  EXPECT_EQ(*util::read_file(path), "new");
  EXPECT_EQ(util::list_directory(dir)->size(), 1u);
  fs::remove_all(dir);
}

TEST(File, AtomicWriteFailureKeepsTheOldFile) {
  auto dir = temp_dir();
  auto path = dir / "report.json";
  ASSERT_TRUE(util::write_file_atomic(path, "previous report").ok());
  // A file size limit makes the write fail half-way, as a full disk would.
  rlimit old{};
  ::getrlimit(RLIMIT_FSIZE, &old);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small{4, old.rlim_max};
  ::setrlimit(RLIMIT_FSIZE, &small);
  auto result = util::write_file_atomic(path, std::string(4096, 'x'));
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(*util::read_file(path), "previous report");
  EXPECT_EQ(util::list_directory(dir)->size(), 1u);
  fs::remove_all(dir);
}

TEST(File, ReadErrorsNameThePathAndKind) {
  auto missing = util::read_file("/nonexistent/nvte/file");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, util::ErrorKind::not_found);
  EXPECT_NE(missing.error().message.find("/nonexistent/nvte/file"), std::string::npos);
}

TEST(File, ReadRefusesFifosAndDirectoriesWithoutBlocking) {
  auto dir = temp_dir();
  auto fifo = dir / "version";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  // Without O_NONBLOCK the open() waits for a writer forever; the child's timeout catches that.
  auto outcome = util::run_function([&](int) { return util::read_file(fifo).ok() ? 1 : 0; }, std::chrono::seconds(5));
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  EXPECT_FALSE(outcome->timed_out);
  EXPECT_EQ(outcome->exit_code.value_or(-1), 0);
  auto as_dir = util::read_file(dir);
  ASSERT_FALSE(as_dir.ok());
  EXPECT_NE(as_dir.error().message.find("a directory"), std::string::npos);
  fs::remove_all(dir);
}

TEST(File, UnderRoot) {
  EXPECT_EQ(util::under_root("/", "/usr/lib"), fs::path("/usr/lib"));
  EXPECT_EQ(util::under_root("/tmp/fake", "/usr/lib"), fs::path("/tmp/fake/usr/lib"));
}

TEST(Subprocess, CommandOutputAndExitCode) {
  auto r = util::run_command({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->timed_out);
}

TEST(Subprocess, TimeoutKillsTheWholeProcessGroup) {
  auto start = std::chrono::steady_clock::now();
  auto r = util::run_command({"sh", "-c", "sleep 30 & sleep 30"}, util::CommandOptions{std::chrono::milliseconds(300), std::nullopt, 1 << 20});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(r->describe().find("timed out"), std::string::npos);
}

TEST(Subprocess, FunctionCrashIsData) {
  auto r = util::run_function([](int) { std::raise(SIGSEGV); return 0; }, std::chrono::seconds(5));
  ASSERT_TRUE(r.ok());
#if NVTE_TEST_ASAN
  // Under scripts/sanitize.sh, ASan catches the SIGSEGV, reports it and aborts (abort_on_error=1).
  ASSERT_TRUE(r->signal == SIGSEGV || r->signal == SIGABRT) << r->describe();
#else
  EXPECT_EQ(r->signal, SIGSEGV);
  EXPECT_NE(r->describe().find("signal 11"), std::string::npos);
#endif
}

TEST(Subprocess, FunctionResultPipe) {
  auto r = util::run_function([](int fd) { util::write_all(fd, "{\"ok\":true}"); return 0; }, std::chrono::seconds(5));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->succeeded());
  EXPECT_EQ(r->out, "{\"ok\":true}");
}

TEST(Subprocess, FunctionHangIsBounded) {
  auto r = util::run_function([](int) { ::pause(); return 0; }, std::chrono::milliseconds(200));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
}

TEST(Subprocess, AStartedFunctionRunsWhileTheCallerWorks) {
  // The child waits for a byte the caller sends only after start_function returned: a
  // start_function that waited for its child would time out here.
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  auto child = util::start_function(
      [&](int fd) {
        char c = 0;
        if (::read(go[0], &c, 1) != 1) return 1;
        util::write_all(fd, std::string("got ") + c);
        return 0;
      },
      std::chrono::seconds(5));
  ASSERT_TRUE(child.ok());
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  auto outcome = child->wait();
  ::close(go[0]);
  ::close(go[1]);
  EXPECT_TRUE(outcome.succeeded()) << outcome.describe();
  EXPECT_EQ(outcome.out, "got x");
}

TEST(Subprocess, AStartedFunctionNeverWaitedForIsKilled) {
  int alive[2];
  ASSERT_EQ(::pipe(alive), 0);
  {
    auto child = util::start_function([](int) { ::pause(); return 0; }, std::chrono::seconds(30));
    ASSERT_TRUE(child.ok());
  }
  // The destructor killed and reaped it: a second start/wait still works and is fast.
  auto start = std::chrono::steady_clock::now();
  auto r = util::run_function([](int fd) { util::write_all(fd, "ok"); return 0; }, std::chrono::seconds(5));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->out, "ok");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ::close(alive[0]);
  ::close(alive[1]);
}

TEST(Subprocess, MissingProgramExits127) {
  auto r = util::run_command({"/nonexistent/program"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 127);
}
