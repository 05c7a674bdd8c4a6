// Logging is not output: log lines go to stderr (and so to journald under systemd, with the
// priority prefix it understands); reports go to stdout or files.
#pragma once

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

} // namespace util::log
