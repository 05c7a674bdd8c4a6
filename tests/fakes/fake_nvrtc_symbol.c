/* Provides the one NVRTC symbol the FAKE_TE_NEEDS_NVRTC stand-in of libtransformer_engine.so
 * uses, so a test can preload it globally as TE's Python preloads the real libnvrtc. */
#include <stddef.h>

int nvrtcGetCUBINSize(void* program, size_t* size) {
  (void)program;
  *size = 42;
  return 0;
}
