// `nvte-doctor daemon`: the `run` step on an interval, re-run soon after a watched path changed,
// configuration reloaded on SIGHUP, a clean exit on SIGTERM or SIGINT. Under systemd
// (NOTIFY_SOCKET set) it sends READY=1 after the first run, WATCHDOG=1 at half the watchdog
// interval, RELOADING=1 / STOPPING=1 and a STATUS= line.
//
// The loop is generic: what a run is and how settings are reloaded are hooks, so that app wires
// the real check and tests wire counters. Signals are taken through a signalfd; they are
// blocked in the calling thread for the loop's lifetime, so one arriving during a run is
// handled when the run ends (outputs are written atomically; nothing is left half-written).
#pragma once

#include "util/result.hpp"

#include <chrono>
#include <filesystem>
#include <functional>
#include <vector>

namespace service {

struct DaemonSettings {
  std::chrono::milliseconds interval{900'000};     // time between runs
  std::chrono::milliseconds debounce{5000};        // quiet time after a change before the re-run
  std::vector<std::filesystem::path> watch;        // files or directories; missing ones watch their parent
};

struct DaemonHooks {
  std::function<int()> run_once;                   // one run; its exit code is logged
  std::function<util::Result<DaemonSettings>()> reload; // SIGHUP: new settings, or an error (old ones stay)
};

// Runs until SIGTERM or SIGINT; returns 0 then, 3 when the loop itself cannot start (signalfd,
// inotify). Each run happens after the previous one, never two at once.
int run_daemon(DaemonSettings settings, const DaemonHooks& hooks);

} // namespace service
