#include "util/subprocess.hpp"

#include "util/fd.hpp"
#include "util/file.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

extern char** environ;

namespace util {

namespace {

using Clock = std::chrono::steady_clock;

struct Pipe {
  Fd read;
  Fd write;
};

Result<Pipe> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Error{ErrorKind::io, "pipe: " + errno_text(errno)};
  return Pipe{Fd(fds[0]), Fd(fds[1])};
}

// Reads the given fds until EOF on all of them, the deadline, or the child's exit is reaped.
// Returns false when the deadline passed.
bool drain(std::vector<std::pair<int, std::string*>> streams, Clock::time_point deadline, std::size_t max_output) {
  char buffer[16384];
  int late_reads = 0;
  while (!streams.empty()) {
    // Past the deadline, what the child already wrote (and its EOF) still counts: a child
    // collected late (started ahead of other work) may have finished long ago.
    auto now = Clock::now();
    bool late = now >= deadline;
    auto left = late ? 0 : std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    std::vector<pollfd> polls;
    polls.reserve(streams.size());
    for (auto& [fd, sink] : streams) polls.push_back(pollfd{fd, POLLIN, 0});
    int ready = ::poll(polls.data(), polls.size(), late ? 0 : static_cast<int>(std::min<long long>(left, 1000) + 1));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return true;
    }
    if (late && (ready == 0 || ++late_reads > 64)) return false; // bounded even for a child that never stops writing
    for (std::size_t i = polls.size(); i-- > 0;) {
      if (!(polls[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(polls[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        auto* sink = streams[i].second;
        if (sink->size() < max_output) sink->append(buffer, std::min<std::size_t>(static_cast<std::size_t>(n), max_output - sink->size()));
      } else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        streams.erase(streams.begin() + static_cast<long>(i));
      }
    }
  }
  return true;
}

void finish(pid_t pid, ChildOutcome& outcome, bool in_time, Clock::time_point deadline, Clock::time_point start) {
  if (in_time) {
    // The streams closed; the child may still be running (closed its fds and hung). Wait, bounded.
    for (;;) {
      int status = 0;
      pid_t got = ::waitpid(pid, &status, WNOHANG);
      if (got == pid) {
        if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
        ::kill(-pid, SIGKILL); // grandchildren left in the group
        outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        return;
      }
      if (got < 0 && errno != EINTR) break;
      if (Clock::now() >= deadline) break;
      ::usleep(2000);
    }
  }
  outcome.timed_out = true;
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
  outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

std::string ChildOutcome::describe() const {
  if (timed_out) {
    char text[64];
    std::snprintf(text, sizeof text, "timed out after %.1f s", seconds);
    return text;
  }
  if (signal) return "killed by signal " + std::to_string(*signal) + " (" + ::strsignal(*signal) + ")";
  if (exit_code) return "exit code " + std::to_string(*exit_code);
  return "unknown end";
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

Result<Gate> Gate::make() {
  auto pipe = NVTE_TRY(make_pipe());
  return Gate(std::move(pipe.read), std::move(pipe.write));
}

Result<ChildOutcome> run_command(const std::vector<std::string>& argv, const CommandOptions& options) {
  if (argv.empty()) return Error{ErrorKind::invalid, "run_command: empty argv"};
  auto out = NVTE_TRY(make_pipe());
  auto err = NVTE_TRY(make_pipe());
  std::vector<std::string> env_storage;
  std::vector<char*> envp;
  if (options.environment) {
    env_storage.reserve(options.environment->size());
    envp.reserve(options.environment->size() + 1);
    for (auto& [key, value] : *options.environment) env_storage.push_back(key + "=" + value);
    for (auto& entry : env_storage) envp.push_back(entry.data());
    envp.push_back(nullptr);
  }
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);

  auto start = Clock::now();
  pid_t pid = ::fork();
  if (pid < 0) return Error{ErrorKind::io, "fork: " + errno_text(errno)};
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(out.write.get(), 1);
    ::dup2(err.write.get(), 2);
    int in = options.stdin_fd >= 0 ? options.stdin_fd : ::open("/dev/null", O_RDONLY);
    if (in >= 0) ::dup2(in, 0);
    if (options.environment) environ = envp.data();
    ::execvp(args[0], args.data());
    std::string msg = std::string("cannot execute ") + args[0] + ": " + std::strerror(errno) + "\n";
    write_all(2, msg);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  out.write.reset();
  err.write.reset();
  ChildOutcome outcome;
  auto deadline = start + options.timeout;
  bool in_time = drain({{out.read.get(), &outcome.out}, {err.read.get(), &outcome.err}}, deadline, options.max_output);
  finish(pid, outcome, in_time, deadline, start);
  return outcome;
}

Result<RunningChild> start_function(const std::function<int(int)>& body, std::chrono::milliseconds timeout,
                                    std::size_t max_output) {
  auto result = NVTE_TRY(make_pipe());
  auto start = Clock::now();
  pid_t pid = ::fork();
  if (pid < 0) return Error{ErrorKind::io, "fork: " + errno_text(errno)};
  if (pid == 0) {
    ::setpgid(0, 0);
    result.read.reset();
    int code = body(result.write.get());
    ::_exit(code);
  }
  ::setpgid(pid, pid);
  result.write.reset();
  return RunningChild(pid, result.read.release(), start, timeout, max_output);
}

RunningChild::RunningChild(int pid, int result_fd, Clock::time_point start, std::chrono::milliseconds timeout,
                           std::size_t max_output)
    : m_pid(pid), m_fd(result_fd), m_start(start), m_timeout(timeout), m_max_output(max_output) {}

RunningChild::RunningChild(RunningChild&& other) noexcept
    : m_pid(std::exchange(other.m_pid, -1)), m_fd(std::exchange(other.m_fd, -1)), m_start(other.m_start),
      m_timeout(other.m_timeout), m_max_output(other.m_max_output) {}

RunningChild::~RunningChild() {
  if (m_fd >= 0) ::close(m_fd);
  if (m_pid > 0) {
    ::kill(-m_pid, SIGKILL);
    ::kill(m_pid, SIGKILL);
    int status = 0;
    while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

ChildOutcome RunningChild::wait() {
  ChildOutcome outcome;
  if (m_pid <= 0) return outcome;
  Fd fd(std::exchange(m_fd, -1));
  auto deadline = m_start + m_timeout;
  bool in_time = drain({{fd.get(), &outcome.out}}, deadline, m_max_output);
  finish(std::exchange(m_pid, -1), outcome, in_time, deadline, m_start);
  return outcome;
}

Result<ChildOutcome> run_function(const std::function<int(int)>& body, std::chrono::milliseconds timeout,
                                  std::size_t max_output) {
  auto child = NVTE_TRY(start_function(body, timeout, max_output));
  return child.wait();
}

} // namespace util
