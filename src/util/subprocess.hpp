// Child processes with a hard timeout. The child runs in its own process group; on timeout the
// whole group is killed (SIGKILL) so a hung vendor library cannot keep a grandchild alive.
// How the child ended is data, never an exception.
#pragma once

#include "util/fd.hpp"
#include "util/result.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace util {

struct ChildOutcome {
  std::optional<int> exit_code; // set when the child exited
  std::optional<int> signal;    // set when a signal ended it (SIGKILL after a timeout too)
  bool timed_out = false;
  std::string out; // what the child wrote to its result pipe (or stdout for commands)
  std::string err; // stderr of a command
  double seconds = 0;

  bool succeeded() const { return exit_code && *exit_code == 0 && !timed_out; }
  // "exit code 3", "killed by signal 11 (Segmentation fault)", "timed out after 5.0 s".
  std::string describe() const;
};

struct CommandOptions {
  std::chrono::milliseconds timeout{10000};
  std::optional<std::map<std::string, std::string>> environment; // replaces the environment
  std::size_t max_output = 16u << 20;                             // bytes kept of each stream
  // The child's stdin (the caller keeps the descriptor and closes it); -1: /dev/null. The read
  // end of a pipe whose write end the caller closes later is a gate the child can wait at.
  int stdin_fd = -1;
};

// A gate a child command waits at: pass child_end() as CommandOptions::stdin_fd; the child reads
// its stdin to the end, which comes when open() is called (or when this object goes, the caller
// with it). Both ends close on exec, so no other child holds the gate shut.
class Gate {
public:
  static Result<Gate> make();
  int child_end() const { return m_read.get(); }
  void open() { m_write.reset(); }

private:
  Gate(Fd read, Fd write) : m_read(std::move(read)), m_write(std::move(write)) {}
  Fd m_read;
  Fd m_write;
};

// Runs argv[0] (searched in PATH) with the remaining arguments.
Result<ChildOutcome> run_command(const std::vector<std::string>& argv, const CommandOptions& options = {});

// Forks; the child calls body(result_fd), and its return value is the child's exit code. What
// body writes to result_fd comes back in ChildOutcome::out. For work that may hang or crash in
// a vendor library (NVML init, cuInit) so that the caller stays alive and bounded.
Result<ChildOutcome> run_function(const std::function<int(int result_fd)>& body,
                                  std::chrono::milliseconds timeout, std::size_t max_output = 16u << 20);

// A forked child started by start_function, running while the caller does other work. wait()
// drains its result pipe and reaps it, bounded by the timeout counted from the start. A child
// never waited for is killed (with its process group) and reaped by the destructor.
class RunningChild {
public:
  RunningChild(int pid, int result_fd, std::chrono::steady_clock::time_point start, std::chrono::milliseconds timeout,
               std::size_t max_output);
  RunningChild(RunningChild&& other) noexcept;
  RunningChild& operator=(RunningChild&&) = delete;
  RunningChild(const RunningChild&) = delete;
  ~RunningChild();

  // Blocks until the child ended or the deadline passed (then kills it); call once.
  ChildOutcome wait();

private:
  int m_pid = -1;
  int m_fd = -1;
  std::chrono::steady_clock::time_point m_start;
  std::chrono::milliseconds m_timeout;
  std::size_t m_max_output;
};

// Forks like run_function and returns at once; the body runs concurrently with the caller.
// Fork before starting threads: the child inherits only the forking thread.
Result<RunningChild> start_function(const std::function<int(int result_fd)>& body, std::chrono::milliseconds timeout,
                                    std::size_t max_output = 16u << 20);

// Writes all of data to fd (retrying on EINTR / short writes); false on error.
bool write_all(int fd, std::string_view data);

} // namespace util
