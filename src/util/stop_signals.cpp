// CatchStopSignals (stop_signals.hpp): sigaction handlers that store the signal number in a
// sig_atomic_t, the only thing a handler may safely do here.
#include "util/stop_signals.hpp"

#include <csignal>

namespace util {

namespace {

volatile std::sig_atomic_t g_caught = 0;
struct sigaction g_before[3];
constexpr int k_signals[3] = {SIGTERM, SIGINT, SIGHUP};

extern "C" void record_stop_signal(int signal) {
  if (g_caught == 0) g_caught = signal;
}

} // namespace

CatchStopSignals::CatchStopSignals() {
  g_caught = 0;
  struct sigaction action {};
  action.sa_handler = record_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int i = 0; i < 3; ++i) ::sigaction(k_signals[i], &action, &g_before[i]);
  m_installed = true;
}

CatchStopSignals::~CatchStopSignals() { end_if_caught(); }

int CatchStopSignals::caught() const { return g_caught; }

void CatchStopSignals::restore() {
  if (!m_installed) return;
  for (int i = 0; i < 3; ++i) ::sigaction(k_signals[i], &g_before[i], nullptr);
  m_installed = false;
}

void CatchStopSignals::end_if_caught() {
  restore();
  int signal = g_caught;
  g_caught = 0;
  if (signal != 0) std::raise(signal);
}

} // namespace util
