// The daemon loop in a forked child: it runs at start, says READY=1 and pings WATCHDOG=1 on
// NOTIFY_SOCKET, reloads and re-runs on SIGHUP, re-runs after a watched directory changed
// (debounced), and exits 0 on SIGTERM within a bound. The child reports each hook call on a pipe.
#include "service/daemon.hpp"

#include "util/fd.hpp"
#include "util/file.hpp"
#include "util/subprocess.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <atomic>
#include <fcntl.h>
#include <mutex>
#include <thread>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// The next line from fd within timeout, or "" on timeout/EOF.
std::string next_line(int fd, std::string& buffer, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto nl = buffer.find('\n'); nl != std::string::npos) {
      std::string line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left <= 0ms) return {};
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return {};
    char chunk[256];
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) return {};
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
}

TEST(Daemon, RunsReloadsWatchesAndStops) {
  fs::path dir = fs::temp_directory_path() / ("nvte-daemon-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "workloads");

  // A NOTIFY_SOCKET for sd_notify, as systemd would give.
  util::Fd notify(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string notify_path = (dir / "notify").string();
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", notify_path.c_str());
  ASSERT_EQ(::bind(notify.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);

  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  util::Fd events(pipe_fds[0]);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setenv("NOTIFY_SOCKET", notify_path.c_str(), 1);
    ::setenv("WATCHDOG_USEC", "200000", 1); // ping every 100 ms
    ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
    int out = pipe_fds[1];
    service::DaemonSettings settings{1h, 200ms, {dir / "workloads"}};
    service::DaemonHooks hooks;
    hooks.run_once = [out] {
      util::write_all(out, "run\n");
      return 0;
    };
    hooks.reload = [out, settings]() -> util::Result<service::DaemonSettings> {
      util::write_all(out, "reload\n");
      return settings;
    };
    ::_exit(service::run_daemon(settings, hooks));
  }
  ::close(pipe_fds[1]);
  // Whatever happens below, the child does not outlive the test.
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
  } reaper{pid};
  std::string buffer;

  EXPECT_EQ(next_line(events.get(), buffer, 5s), "run") << "first run at start";
  // Read NOTIFY_SOCKET as systemd does, all the time (a full datagram queue would block the
  // daemon in sd_notify), until the test ends.
  std::mutex notified_mutex;
  std::string notified;
  std::atomic<bool> stop_reading{false};
  std::thread reader([&] {
    while (!stop_reading) {
      pollfd p{notify.get(), POLLIN, 0};
      if (::poll(&p, 1, 50) != 1) continue;
      char message[256] = {};
      ssize_t n = ::recv(notify.get(), message, sizeof message - 1, MSG_DONTWAIT);
      std::lock_guard lock(notified_mutex);
      if (n > 0) notified += std::string(message, static_cast<std::size_t>(n)) + "\n";
    }
  });
  struct Joiner {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~Joiner() {
      stop = true;
      thread.join();
    }
  } joiner{stop_reading, reader};
  auto seen = [&](const char* what) {
    std::lock_guard lock(notified_mutex);
    return notified.find(what) != std::string::npos;
  };
  auto notify_deadline = std::chrono::steady_clock::now() + 5s;
  while (!(seen("READY=1") && seen("WATCHDOG=1")) && std::chrono::steady_clock::now() < notify_deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(seen("READY=1"));
  EXPECT_TRUE(seen("WATCHDOG=1"));

  ::kill(pid, SIGHUP);
  EXPECT_EQ(next_line(events.get(), buffer, 3s), "reload");
  EXPECT_EQ(next_line(events.get(), buffer, 3s), "run") << "a reload re-runs";

  // Several changes in a burst give one debounced run.
  auto changed = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(util::write_file_atomic(dir / "workloads" / ("w" + std::to_string(i) + ".yaml"), "x: 1\n"));
  EXPECT_EQ(next_line(events.get(), buffer, 3s), "run") << "no re-run after a watched change";
  auto waited = std::chrono::steady_clock::now() - changed;
  EXPECT_GE(waited, 150ms) << "not debounced";
  EXPECT_EQ(next_line(events.get(), buffer, 600ms), "") << "a burst must give one run";

  auto stop = std::chrono::steady_clock::now();
  ::kill(pid, SIGTERM);
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() - stop < 3s) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(done, pid) << "daemon did not exit within 3 s of SIGTERM";
  reaper.pid = -1;
  for (int i = 0; i < 50 && !seen("STOPPING=1"); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(seen("STOPPING=1"));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_LT(std::chrono::steady_clock::now() - stop, 1s);
  fs::remove_all(dir);
}

} // namespace
