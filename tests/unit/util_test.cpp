#include "util/edit_distance.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"
#include "util/text_wrap.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <pthread.h>
#include <filesystem>
#include <optional>
#include <sys/resource.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <sys/sysmacros.h>
#include <thread>
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

TEST(Strings, PathFileNameIsTheLastComponent) {
  EXPECT_EQ(util::path_file_name("/usr/lib/x86_64-linux-gnu/libcudnn.so.9"), "libcudnn.so.9");
  EXPECT_EQ(util::path_file_name("libnccl.so.2"), "libnccl.so.2");
  EXPECT_EQ(util::path_file_name("lib/"), "");
  EXPECT_EQ(util::path_file_name(""), "");
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

// With a limit the answer is exact up to it and limit + 1 beyond, whichever way round the strings
// come; and a long unknown name against a long different one costs rows, not their product (the
// unbounded table of two 1 MiB strings is 10^12 cells: this test would not finish).
TEST(Strings, EditDistanceWithALimitStopsEarly) {
  const std::pair<const char*, const char*> pairs[] = {{"cudnn.version", "cudnn.verison"},
                                                       {"", "abc"},
                                                       {"abc", ""},
                                                       {"gpu.name", "gpu[0].name"},
                                                       {"kitten", "sitting"},
                                                       {"workload.head_dim", "workload.head_dim_qk"},
                                                       {"x", "y"},
                                                       {"same", "same"}};
  for (const auto& [a, b] : pairs) {
    std::size_t exact = util::edit_distance(a, b);
    EXPECT_EQ(util::edit_distance(b, a), exact) << a << " / " << b;
    for (std::size_t limit = 0; limit <= 6; ++limit)
      EXPECT_EQ(util::edit_distance(a, b, limit), std::min(exact, limit + 1)) << a << " / " << b << " limit " << limit;
  }
  std::string long_a(1u << 20, 'a'), long_b(1u << 20, 'b');
  EXPECT_EQ(util::edit_distance(long_a, long_b, 3), 4u);
  EXPECT_EQ(util::edit_distance(long_a, "a", 3), 4u);
  EXPECT_EQ(util::edit_distance(long_a, long_a, 3), 0u);
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

// Audit 2026-11-25 item 1: `-o /dev/null` as root replaced the device node with a regular file.
TEST(OutputFile, WritesThroughACharacterDeviceInsteadOfReplacingIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "mknod needs root";
  auto dir = temp_dir();
  auto null = dir / "null";
  ASSERT_EQ(::mknod(null.c_str(), S_IFCHR | 0666, ::makedev(1, 3)), 0);
  ASSERT_TRUE(util::write_file_atomic(null, "report\n").ok());
  struct stat st {};
  ASSERT_EQ(::lstat(null.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node was replaced";
  EXPECT_EQ(util::list_directory(dir)->size(), 1u);
  fs::remove_all(dir);
}

TEST(OutputFile, WritesThroughAFifo) {
  auto dir = temp_dir();
  auto fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  // A reader that opens the FIFO blocking, in a thread of this process.
  std::string got;
  std::thread read_side([&] {
    util::Fd fd(::open(fifo.c_str(), O_RDONLY | O_CLOEXEC));
    char buffer[64];
    ssize_t n;
    while ((n = ::read(fd.get(), buffer, sizeof buffer)) > 0) got.append(buffer, static_cast<std::size_t>(n));
  });
  // The writer does not wait for a reader (a FIFO nobody reads is an error): until the thread
  // has reached its open(), which counts it as a reader, the write is refused and tried again.
  auto written = util::write_file_atomic(fifo, "through the pipe\n");
  for (int i = 0; i < 500 && !written && written.error().message.find("no process is reading") != std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    written = util::write_file_atomic(fifo, "through the pipe\n");
  }
  ASSERT_TRUE(written.ok()) << written.error().message;
  read_side.join();
  EXPECT_EQ(got, "through the pipe\n");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  fs::remove_all(dir);
}

// A stand-in for /dev/stdout: a link to /proc/self/fd/N. The link stays and the open file gets
// the text (appended, as a shell redirection left it).
TEST(OutputFile, AProcLinkIsWrittenThroughAndStays) {
  auto dir = temp_dir();
  auto target = dir / "captured";
  util::Fd fd(::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  ASSERT_TRUE(fd);
  auto link = dir / "stdout";
  fs::create_symlink("/proc/self/fd/" + std::to_string(fd.get()), link);
  ASSERT_TRUE(util::write_file_atomic(link, "to stdout\n").ok());
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(*util::read_file(target), "to stdout\n");
  fs::remove_all(dir);
}

TEST(OutputFile, ASymlinkToARegularFileReplacesTheFileAndKeepsTheLink) {
  auto dir = temp_dir();
  fs::create_directories(dir / "real");
  ASSERT_TRUE(util::write_file_atomic(dir / "real" / "doctor.prom", "old\n").ok());
  fs::create_symlink(dir / "real" / "doctor.prom", dir / "doctor.prom");
  ASSERT_TRUE(util::write_file_atomic(dir / "doctor.prom", "new\n").ok());
  EXPECT_TRUE(fs::is_symlink(dir / "doctor.prom"));
  EXPECT_EQ(*util::read_file(dir / "real" / "doctor.prom"), "new\n");
  fs::remove_all(dir);
}

TEST(OutputFile, RefusesDanglingLinksDirectoriesAndSockets) {
  auto dir = temp_dir();
  fs::create_symlink(dir / "missing", dir / "dangling");
  auto dangling = util::write_file_atomic(dir / "dangling", "x");
  ASSERT_FALSE(dangling.ok());
  EXPECT_NE(dangling.error().message.find("missing file"), std::string::npos) << dangling.error().message;
  EXPECT_TRUE(fs::is_symlink(dir / "dangling"));
  fs::create_directories(dir / "sub");
  auto as_dir = util::write_file_atomic(dir / "sub", "x");
  ASSERT_FALSE(as_dir.ok());
  EXPECT_NE(as_dir.error().message.find("a directory"), std::string::npos) << as_dir.error().message;
  fs::remove_all(dir);
}

// Audit item 22: temporaries of killed writers were never removed.
TEST(OutputFile, SweepsOldTemporariesOfTheSameNameOnly) {
  auto dir = temp_dir();
  for (const char* name : {".report.json.tmp.AAAAAA", ".report.json.tmp.BBBBBB", ".state.json.tmp.CCCCCC", "keep.txt"}) {
    ASSERT_TRUE(util::write_file_atomic(dir / name, "x").ok());
  }
  auto old = std::filesystem::file_time_type::clock::now() - std::chrono::minutes(5);
  for (const char* name : {".report.json.tmp.AAAAAA", ".state.json.tmp.CCCCCC", "keep.txt"}) fs::last_write_time(dir / name, old);
  ASSERT_TRUE(util::write_file_atomic(dir / "report.json", "{}").ok());
  EXPECT_FALSE(fs::exists(dir / ".report.json.tmp.AAAAAA")) << "an old temporary stays";
  EXPECT_TRUE(fs::exists(dir / ".report.json.tmp.BBBBBB")) << "a live writer's temporary was removed";
  EXPECT_TRUE(fs::exists(dir / ".state.json.tmp.CCCCCC")) << "another name's temporary was removed";
  EXPECT_EQ(util::sweep_temporaries(dir, ""), 1u);
  EXPECT_FALSE(fs::exists(dir / ".state.json.tmp.CCCCCC"));
  EXPECT_TRUE(fs::exists(dir / "keep.txt"));
  fs::remove_all(dir);
}

// A SIGTERM in the middle of a write: the write finishes, then the process ends; no temporary.
TEST(OutputFile, SigtermDuringAWriteFinishesItFirst) {
  auto dir = temp_dir();
  auto path = dir / "report.json";
  std::string big(64u << 20, 'x');
  auto outcome = util::run_function([&](int) {
    // The killer blocks SIGTERM itself, so the signal can only go to the writing thread; it is
    // sent once the temporary exists, i.e. in the middle of the write.
    std::thread killer([&] {
      sigset_t term;
      sigemptyset(&term);
      sigaddset(&term, SIGTERM);
      ::pthread_sigmask(SIG_BLOCK, &term, nullptr);
      for (int i = 0; i < 200000; ++i) {
        auto names = util::list_directory(dir);
        if (names && std::any_of(names->begin(), names->end(), [](const std::string& n) { return n.starts_with(".report.json.tmp."); }))
          break;
      }
      ::kill(::getpid(), SIGTERM);
    });
    killer.detach();
    (void)util::write_file_atomic(path, big);
    std::this_thread::sleep_for(std::chrono::seconds(5));
    return 0;
  }, std::chrono::seconds(30));
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(outcome->signal.value_or(0), SIGTERM);
  auto names = util::list_directory(dir);
  ASSERT_TRUE(names.ok());
  ASSERT_EQ(names->size(), 1u) << (names->empty() ? "nothing" : names->front());
  EXPECT_EQ(names->front(), "report.json");
  EXPECT_EQ(fs::file_size(path), big.size());
  fs::remove_all(dir);
}

// Audit item 2: run.lock -> /victim was truncated.
TEST(OutputFile, LockFileRefusesSymlinks) {
  auto dir = temp_dir();
  ASSERT_TRUE(util::write_file_atomic(dir / "victim", "precious\n").ok());
  fs::create_symlink(dir / "victim", dir / "run.lock");
  auto lock = util::open_lock_file(dir / "run.lock");
  ASSERT_FALSE(lock.ok());
  EXPECT_NE(lock.error().message.find("symlink"), std::string::npos) << lock.error().message;
  EXPECT_EQ(*util::read_file(dir / "victim"), "precious\n");
  fs::remove(dir / "run.lock");
  EXPECT_TRUE(util::open_lock_file(dir / "run.lock").ok());
  fs::remove_all(dir);
}

TEST(OutputFile, PrivateDirectoryCheck) {
  auto dir = temp_dir();
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                           fs::perms::others_exec);
  EXPECT_TRUE(util::check_private_directory(dir).ok());
  fs::permissions(dir, fs::perms::others_write, fs::perm_options::add);
  auto open = util::check_private_directory(dir);
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.error().message.find("0757"), std::string::npos) << open.error().message;
  fs::permissions(dir, fs::perms::others_write, fs::perm_options::remove);
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
    auto foreign = util::check_private_directory(dir);
    ASSERT_FALSE(foreign.ok());
    EXPECT_NE(foreign.error().message.find("uid 65534"), std::string::npos) << foreign.error().message;
  }
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
  // The string form gives what root / path.relative_path() gives, byte for byte.
  for (const char* root : {"/tmp/fake", "/tmp/fake/", "rel", "/a//b"}) {
    for (const char* path : {"/usr/lib", "//usr//lib/", "/", "", "usr/lib", "/a/../b", "///x"}) {
      EXPECT_EQ(util::under_root(root, path).native(), (fs::path(root) / fs::path(path).relative_path()).native()) << root << " " << path;
    }
  }
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
  auto r = util::run_command({"sh", "-c", "sleep 30 & sleep 30"},
                             util::CommandOptions{std::chrono::milliseconds(300), std::nullopt, 1 << 20, -1});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(r->describe().find("timed out"), std::string::npos);
}

TEST(Subprocess, FunctionCrashIsData) {
  auto r = util::run_function([](int) { std::raise(SIGSEGV); return 0; }, std::chrono::seconds(5));
  ASSERT_TRUE(r.ok());
#if NVTE_TEST_ASAN
  // In the sanitized build ASan catches the SIGSEGV, reports it and aborts (abort_on_error=1,
  // cmake/asan_default_options.cpp).
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

// The Python tier waits at a gate (its stdin) while the CUDA checks run: the child reads to the end
// of its stdin only once the gate opens, and a gate that goes without being opened lets it go too.
TEST(Subprocess, ChildWaitsAtTheGateUntilItOpens) {
  auto gate = util::Gate::make();
  ASSERT_TRUE(gate.ok());
  util::CommandOptions options;
  options.timeout = std::chrono::seconds(20);
  options.stdin_fd = gate->child_end();
  std::atomic<bool> opened{false};
  std::jthread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    opened = true;
    gate->open();
  });
  auto r = util::run_command({"sh", "-c", "cat; echo through"}, options);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(opened.load());
  EXPECT_EQ(r->out, "through\n");
  EXPECT_GE(r->seconds, 0.35);
  // Without a gate, stdin is /dev/null: at its end at once.
  auto plain = util::run_command({"sh", "-c", "cat; echo through"});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->out, "through\n");
  EXPECT_LT(plain->seconds, 5.0);
}

TEST(Subprocess, AGateThatGoesLetsTheChildThrough) {
  util::CommandOptions options;
  options.timeout = std::chrono::seconds(20);
  std::optional<util::Result<util::ChildOutcome>> r;
  {
    auto gate = util::Gate::make();
    ASSERT_TRUE(gate.ok());
    options.stdin_fd = gate->child_end();
    auto started = std::filesystem::temp_directory_path() / ("nvte-gate-" + std::to_string(::getpid()));
    std::filesystem::remove(started);
    std::jthread runner([&] { r = util::run_command({"sh", "-c", "touch " + started.string() + "; cat; echo through"}, options); });
    for (int i = 0; i < 2000 && !std::filesystem::exists(started); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_TRUE(std::filesystem::exists(started));
    std::filesystem::remove(started);
    gate = util::Gate::make(); // the first gate's ends close; the child holds its own copy of stdin
  }
  ASSERT_TRUE(r && r->ok());
  EXPECT_EQ((*r)->out, "through\n");
  EXPECT_FALSE((*r)->timed_out);
}

TEST(Subprocess, MissingProgramExits127) {
  auto r = util::run_command({"/nonexistent/program"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 127);
}

// Wrapping at a terminal's width: breaks at spaces, continuations indented two past the line's
// own indentation, colour sequences and UTF-8 continuation bytes take no column, a word longer
// than the width stays whole, width 0 changes nothing.
TEST(TextWrap, BreaksAtSpacesKeepingIndentation) {
  EXPECT_EQ(util::wrap_text("  one two three four five six\nshort\n", 17), "  one two three\n    four five six\nshort\n");
  EXPECT_EQ(util::wrap_text("\x1b[1;31mred\x1b[0m word here", 12), "\x1b[1;31mred\x1b[0m word\n  here");
  EXPECT_EQ(util::wrap_text("→→→→ →→→→ →→→→", 10), "→→→→ →→→→\n  →→→→");
  EXPECT_EQ(util::wrap_text("/a/very/long/path/without/spaces/at/all and more", 10), "/a/very/long/path/without/spaces/at/all\n  and more");
  EXPECT_EQ(util::wrap_text("a b c d e f g h", 0), "a b c d e f g h");
  EXPECT_EQ(util::wrap_text("", 40), "");
}
