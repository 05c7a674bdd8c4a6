// The daemon loop: poll(2) on a signalfd and an inotify fd with a timeout that is the nearest of
// the next interval run, the end of the debounce window and the next watchdog ping.
//
// Watches: a directory is watched for entries created, deleted, moved, written or changed in
// attributes; a file through its directory (editors and package managers replace files by
// rename, which a watch on the file itself would lose); a path that does not exist yet through
// its nearest existing ancestor, re-armed after every event so that it is picked up once it
// appears.
#include "service/daemon.hpp"

#include "util/dl.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"
#include "util/logging.hpp"

#include <systemd/sd-daemon.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <map>
#include <optional>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>

namespace service {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// libsystemd's two entry points, dlopen'd when the daemon starts so that the short-lived
// commands (`run` every few minutes) do not pay for loading it and its dependencies.
struct SdApi {
  util::DlLibrary library;
  decltype(&sd_notify) notify = nullptr;
  decltype(&sd_watchdog_enabled) watchdog_enabled = nullptr;
};

const SdApi& sd_api() {
  static const SdApi api = [] {
    SdApi loaded;
    auto library = util::DlLibrary::open("libsystemd.so.0");
    if (!library) {
      if (std::getenv("NOTIFY_SOCKET")) util::log::warning("daemon: cannot tell systemd it is ready: " + library.error().message);
      return loaded;
    }
    loaded.library = std::move(*library);
    loaded.notify = util::function_cast<decltype(&sd_notify)>(loaded.library.symbol_or_null("sd_notify"));
    loaded.watchdog_enabled = util::function_cast<decltype(&sd_watchdog_enabled)>(loaded.library.symbol_or_null("sd_watchdog_enabled"));
    return loaded;
  }();
  return api;
}

void notify(const std::string& state) {
  // sd_notify is a no-op returning 0 when NOTIFY_SOCKET is unset.
  if (sd_api().notify && sd_api().notify(0, state.c_str()) < 0) util::log::debug("sd_notify failed: " + state);
}

class Watcher {
public:
  util::Result<void> open() {
    m_fd.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (!m_fd) {
      int err = errno;
      return util::make_error(util::errno_kind(err), "inotify_init1: " + util::errno_text(err));
    }
    return {};
  }

  // Watches the targets of paths; keeps watches that are still wanted (removing one would
  // queue an IN_IGNORED event that looks like a change).
  void arm(const std::vector<fs::path>& paths) {
    std::map<fs::path, bool> wanted;
    for (const auto& path : paths) {
      std::error_code ec;
      fs::path target = fs::is_directory(path, ec) ? path : path.parent_path();
      while (!target.empty() && !fs::exists(target, ec) && target != target.root_path()) target = target.parent_path();
      if (!target.empty()) wanted[target] = true;
    }
    for (auto it = m_watches.begin(); it != m_watches.end();) {
      if (wanted.erase(it->second)) {
        ++it;
      } else {
        ::inotify_rm_watch(m_fd.get(), it->first);
        it = m_watches.erase(it);
      }
    }
    for (const auto& [target, _] : wanted) {
      int wd = ::inotify_add_watch(m_fd.get(), target.c_str(),
                                   IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_ATTRIB |
                                       IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR);
      if (wd < 0) util::log::warning("daemon: cannot watch " + target.string() + ": " + util::errno_text(errno));
      else m_watches[wd] = target;
    }
  }

  // Drains pending events; true when any of them is a change (IN_IGNORED, the kernel's note
  // that a watch went away, is not).
  bool drain() {
    alignas(inotify_event) char buffer[16 * 1024];
    bool changed = false;
    for (;;) {
      ssize_t n = ::read(m_fd.get(), buffer, sizeof buffer);
      if (n <= 0) break;
      for (ssize_t offset = 0; offset < n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + offset);
        if (event->mask & IN_IGNORED) m_watches.erase(event->wd);
        else changed = true;
        offset += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
    }
    return changed;
  }

  int fd() const { return m_fd.get(); }

private:
  util::Fd m_fd;
  std::map<int, fs::path> m_watches;
};

// Blocks the signals for this thread and returns a signalfd for them; restores the mask on exit.
class SignalFd {
public:
  util::Result<void> open() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGHUP, SIGTERM, SIGINT}) sigaddset(&set, s);
    if (::pthread_sigmask(SIG_BLOCK, &set, &m_old) != 0) return util::make_error(util::ErrorKind::io, "pthread_sigmask failed");
    m_blocked = true;
    m_fd.reset(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
    if (!m_fd) {
      int err = errno;
      return util::make_error(util::errno_kind(err), "signalfd: " + util::errno_text(err));
    }
    return {};
  }
  ~SignalFd() {
    if (m_blocked) ::pthread_sigmask(SIG_SETMASK, &m_old, nullptr);
  }
  // The next pending signal number, or 0.
  int next() {
    signalfd_siginfo info{};
    if (::read(m_fd.get(), &info, sizeof info) != static_cast<ssize_t>(sizeof info)) return 0;
    return static_cast<int>(info.ssi_signo);
  }
  int fd() const { return m_fd.get(); }

private:
  util::Fd m_fd;
  sigset_t m_old{};
  bool m_blocked = false;
};

} // namespace

int run_daemon(DaemonSettings settings, const DaemonHooks& hooks) {
  SignalFd signals;
  Watcher watcher;
  for (auto opened : {signals.open(), watcher.open()}) {
    if (!opened) {
      util::log::error("daemon: " + opened.error().message);
      return 3;
    }
  }
  watcher.arm(settings.watch);

  std::optional<milliseconds> watchdog;
  if (std::uint64_t usec = 0; sd_api().watchdog_enabled && sd_api().watchdog_enabled(0, &usec) > 0 && usec > 0) {
    watchdog = milliseconds(static_cast<long long>(usec / 2000));
  }

  auto run = [&](const char* why) {
    util::log::info(std::string("daemon: running (") + why + ")");
    notify("STATUS=running a check (" + std::string(why) + ")");
    int code = hooks.run_once();
    notify("STATUS=last run exit " + std::to_string(code) + "; next in " +
           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(settings.interval).count()) + " s");
    return code;
  };

  run("start");
  notify("READY=1");
  auto next_run = Clock::now() + settings.interval;
  auto change_deadline = Clock::time_point::max(); // max: no change pending
  auto next_ping = Clock::now();

  for (;;) {
    auto now = Clock::now();
    if (watchdog && now >= next_ping) {
      notify("WATCHDOG=1");
      next_ping = now + *watchdog;
    }
    auto wake = next_run;
    wake = std::min(wake, change_deadline);
    if (watchdog) wake = std::min(wake, next_ping);
    auto wait = std::chrono::duration_cast<milliseconds>(wake - now);
    int timeout = static_cast<int>(std::clamp<long long>(wait.count(), 0, 1 << 30));

    pollfd fds[2] = {{signals.fd(), POLLIN, 0}, {watcher.fd(), POLLIN, 0}};
    int ready = ::poll(fds, 2, timeout);
    if (ready < 0 && errno != EINTR) {
      util::log::error("daemon: poll: " + util::errno_text(errno));
      return 3;
    }
    if (ready > 0 && (fds[0].revents & POLLIN)) {
      for (int sig = signals.next(); sig != 0; sig = signals.next()) {
        if (sig == SIGTERM || sig == SIGINT) {
          notify("STOPPING=1");
          util::log::info("daemon: stopping");
          return 0;
        }
        if (sig == SIGHUP) {
          notify("RELOADING=1");
          auto reloaded = hooks.reload();
          if (reloaded) {
            settings = std::move(*reloaded);
            watcher.arm(settings.watch);
            util::log::info("daemon: configuration reloaded");
            run("reload");
            next_run = Clock::now() + settings.interval;
          } else {
            util::log::error("daemon: reload failed, keeping the previous configuration: " + reloaded.error().message);
          }
          notify("READY=1");
        }
      }
    }
    if (ready > 0 && (fds[1].revents & POLLIN) && watcher.drain()) {
      // Debounced: a burst of changes (a pip install) gives one run after it went quiet.
      change_deadline = Clock::now() + settings.debounce;
      watcher.arm(settings.watch);
    }
    now = Clock::now();
    if (now >= change_deadline) {
      change_deadline = Clock::time_point::max();
      run("a watched path changed");
      watcher.drain(); // the run's own writes are not a change
      next_run = Clock::now() + settings.interval;
    } else if (now >= next_run) {
      run("interval");
      next_run = Clock::now() + settings.interval;
    }
  }
}

} // namespace service
