// Logging is not output: log lines go to stderr (and so to journald under systemd, with the
// priority prefix it understands); reports go to stdout or files.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace util::log {

enum class Level { error = 0, warning = 1, info = 2, debug = 3 };

// Messages above this level are dropped. Default: warning; -v gives info, -vv debug.
void set_level(Level level);
Level level();
bool enabled(Level level);

void error(std::string_view message);
void warning(std::string_view message);
void info(std::string_view message);
void debug(std::string_view message);

// Where a command's time goes, with -vv: each lap("facts") logs "<scope>: facts 3.2 ms (at 11.6
// ms)", the time since the previous lap (or since construction) and since the program started. Nothing is formatted below the debug level.
class Laps {
public:
  explicit Laps(std::string scope) : m_scope(std::move(scope)), m_last(std::chrono::steady_clock::now()) {}
  void lap(std::string_view what);

private:
  std::string m_scope;
  std::chrono::steady_clock::time_point m_last;
};

} // namespace util::log
