// Runs the built nvte-doctor as a user would, for the reliability tests: a clean environment
// (PATH, HOME, NO_COLOR and what the test adds), a hard timeout, and the time it took.
#pragma once

#include "util/subprocess.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

namespace reliability {

// The fixture snapshot and the shipped rules the tests give the doctor (one definition: the unity
// build compiles reliability_tests' files as one translation unit).
inline const std::string k_snapshot = std::string(NVTE_TESTS_DIR) + "/fixtures/snapshots/h100-node.json";
inline const std::string k_rules = std::string(NVTE_SOURCE_DIR) + "/rules";

struct DoctorRun {
  int exit_code = -1;  // -1 when a signal ended it or it timed out
  bool timed_out = false;
  std::string out;
  std::string err;
  double seconds = 0;
  double cpu_seconds = 0; // user + system time of the doctor and the children it waited for
};

// The doctor's environment: what the test adds, then PATH, HOME and NO_COLOR, and in a sanitizer
// build the test's own sanitizer options (abort_on_error makes a crashed child a signal, as
// without ASan).
inline std::map<std::string, std::string> doctor_environment(std::map<std::string, std::string> env = {}) {
  env.emplace("PATH", "/usr/bin:/bin");
  env.emplace("HOME", "/nonexistent");
  env.emplace("NO_COLOR", "1");
  for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"}) {
    if (const char* value = std::getenv(name)) env.emplace(name, value);
  }
  return env;
}

// CPU seconds of the children this process has waited for so far.
inline double children_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_CHILDREN, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

inline DoctorRun run_doctor(std::vector<std::string> args, std::map<std::string, std::string> env = {},
                            std::chrono::seconds timeout = std::chrono::seconds(60), std::string program = NVTE_BINARY) {
  std::vector<std::string> argv = {std::move(program)};
  argv.insert(argv.end(), args.begin(), args.end());
  util::CommandOptions options;
  options.timeout = timeout;
  options.environment = doctor_environment(std::move(env));
  auto start = std::chrono::steady_clock::now();
  double cpu_start = children_cpu_seconds();
  auto result = util::run_command(argv, options);
  DoctorRun run;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.cpu_seconds = children_cpu_seconds() - cpu_start;
  if (!result.ok()) {
    run.err = result.error().message;
    return run;
  }
  run.exit_code = result->exit_code.value_or(-1);
  run.timed_out = result->timed_out;
  run.out = result->out;
  run.err = result->err;
  return run;
}

// A fresh directory under the system temp dir, removed by the destructor.
class TempDir {
public:
  explicit TempDir(const std::string& name)
      : m_path(std::filesystem::temp_directory_path() / ("nvte-rel-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(m_path);
    std::filesystem::create_directories(m_path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return m_path; }
  std::filesystem::path operator/(const std::string& name) const { return m_path / name; }

private:
  std::filesystem::path m_path;
};

inline std::string context(const DoctorRun& run) {
  return "\n--- exit " + std::to_string(run.exit_code) + (run.timed_out ? " (timed out)" : "") + " after " +
         std::to_string(run.seconds) + " s\n--- stdout ---\n" + run.out.substr(0, 3000) + "\n--- stderr ---\n" +
         run.err.substr(0, 3000);
}

} // namespace reliability
