#include "util/logging.hpp"
#include "util/strings.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace util::log {

namespace {

Level g_level = Level::warning;
// When the program started, near enough (static initialisation): laps also say where on the
// command's whole timeline they end, which is how the critical path across threads is read.
const auto g_started = std::chrono::steady_clock::now();

void emit(Level at, std::string_view prefix, std::string_view message) {
  if (!enabled(at)) return;
  // Under systemd (JOURNAL_STREAM set) stderr is the journal: use sd-daemon(3) priority prefixes.
  static const bool journal = std::getenv("JOURNAL_STREAM") != nullptr;
  std::string line;
  if (journal) {
    static const char* priorities[] = {"<3>", "<4>", "<6>", "<7>"};
    line = priorities[static_cast<int>(at)];
  } else {
    line = "nvte-doctor: ";
    line += prefix;
  }
  // No terminal control from a path or value inside the message.
  line += terminal_safe(message);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

} // namespace

void set_level(Level level) { g_level = level; }
Level level() { return g_level; }
bool enabled(Level at) { return static_cast<int>(at) <= static_cast<int>(g_level); }

void error(std::string_view message) { emit(Level::error, "error: ", message); }
void warning(std::string_view message) { emit(Level::warning, "warning: ", message); }
void info(std::string_view message) { emit(Level::info, "", message); }
void debug(std::string_view message) { emit(Level::debug, "debug: ", message); }

void Laps::lap(std::string_view what) {
  auto now = std::chrono::steady_clock::now();
  if (enabled(Level::debug))
    debug(m_scope + ": " + std::string(what) + " " + std::to_string(std::chrono::duration<double, std::milli>(now - m_last).count()) +
          " ms (at " + std::to_string(std::chrono::duration<double, std::milli>(now - g_started).count()) + " ms)");
  m_last = now;
}

} // namespace util::log
