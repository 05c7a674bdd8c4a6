/* A stand-in libcuda for the probe tests: cuDriverGetVersion answers 13.0. cuInit aborts, so a
 * probe that initialised CUDA (which the probes must never do) crashes its child and fails the
 * test. */
#include <stdlib.h>

int cuDriverGetVersion(int* version) {
  *version = 13000;
  return 0;
}

int cuInit(unsigned flags) {
  (void)flags;
  abort();
}
