// Catching the signals that stop a program politely (SIGTERM from systemd, SIGINT from Ctrl-C,
// SIGHUP) for work that must clean up before it ends: the handler only records the signal, the
// work checks caught() between its steps, cleans up and then ends as the signal would have ended
// it (the default action, re-raised), so the exit status still says "killed by SIGTERM".
#pragma once

namespace util {

// While the object lives, SIGTERM, SIGINT and SIGHUP set a flag instead of ending the process.
// One object at a time per process. The destructor restores the previous actions and, when a
// signal was caught and not yet acted on, raises it again.
class CatchStopSignals {
public:
  CatchStopSignals();
  CatchStopSignals(const CatchStopSignals&) = delete;
  CatchStopSignals& operator=(const CatchStopSignals&) = delete;
  ~CatchStopSignals();

  // The first signal caught since construction; 0 when none.
  int caught() const;
  // Restores the previous actions and raises the caught signal; returns only when none was caught
  // (or its previous action does not end the process).
  void end_if_caught();

private:
  void restore();
  bool m_installed = false;
};

} // namespace util
