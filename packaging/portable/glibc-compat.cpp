// The two glibc symbols newer than 2.31 that GCC 12's static libstdc++ asks for, defined inside
// the portable binary (scripts/build-portable.sh; packaging/portable/toolchain.cmake), hidden, so
// the binary binds no glibc version above the root it was built against.
// - __libc_single_threaded (glibc 2.32): libstdc++ skips atomic reference counts while it is
//   nonzero. Zero here means "maybe threaded": always atomic, correct everywhere, as with glibc
//   before 2.32.
// - arc4random (glibc 2.36): std::random_device's default source; getrandom(2) (glibc 2.25).
#include <sys/random.h>

#include <cerrno>
#include <cstdint>

extern "C" {
__attribute__((visibility("hidden"))) char __libc_single_threaded = 0; // NOLINT: glibc's name

__attribute__((visibility("hidden"))) std::uint32_t arc4random() {
  std::uint32_t value = 0;
  while (getrandom(&value, sizeof value, 0) != static_cast<ssize_t>(sizeof value)) {
    if (errno != EINTR) __builtin_trap(); // no entropy at all: glibc's arc4random aborts too
  }
  return value;
}
}
