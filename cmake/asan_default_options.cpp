// ASan's defaults for every executable of an -DNVTE_SANITIZE=ON build (cmake/Settings.cmake adds
// this file to each one). The runtime asks for them at start-up; ASAN_OPTIONS from the
// environment still wins, as scripts/sanitize.sh sets it.
//
// abort_on_error: on a fault ASan reports and then dies by SIGABRT instead of exiting with status
// 1. The doctor tells a crashed child (a signal) from one that failed (an exit status), and the
// tests that crash a child on purpose (a vendor library that segfaults, Subprocess's crash test)
// check that it does; without this, a plain `ctest --test-dir build-asan` failed them. The ctest
// tests asan_defaults_* run them with ASAN_OPTIONS unset (tests/CMakeLists.txt).

// The name is the runtime's, reserved identifier and all.
// NOLINTNEXTLINE(bugprone-reserved-identifier,readability-identifier-naming)
extern "C" const char* __asan_default_options() { return "abort_on_error=1"; }
