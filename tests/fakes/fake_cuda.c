/* A stand-in libcuda for the probe tests: cuDriverGetVersion answers 13.0. cuInit aborts, so a
 * probe that initialised CUDA (which the probes must never do) crashes its child and fails the
 * test. Variants: FAKE_CUDA_CRASH (cuDriverGetVersion segfaults), FAKE_CUDA_HANG (it never returns). */
#include <stdlib.h>
#include <unistd.h>

int cuDriverGetVersion(int* version) {
#if defined(FAKE_CUDA_CRASH)
  *(volatile int*)0 = 1; /* a driver that segfaults in its version call */
#elif defined(FAKE_CUDA_HANG)
  for (;;) pause();
#endif
  *version = 13000;
  return 0;
}

int cuInit(unsigned flags) {
  (void)flags;
  abort();
}
