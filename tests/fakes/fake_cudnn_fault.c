/* A libcudnn.so.9 whose version call misbehaves, for the fault-injection tests: the file name
 * carries no version and there is no header or wheel beside it, so the libraries probe has to
 * call cudnnGetVersion (in its bounded child). FAKE_CUDNN_CRASH segfaults there, FAKE_CUDNN_HANG
 * never returns, FAKE_CUDNN_ABORT aborts in a constructor (while dlopen runs). */
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef FAKE_CUDNN_ABORT
__attribute__((constructor)) static void fail_on_load(void) { abort(); }
#endif

size_t cudnnGetVersion(void) {
#if defined(FAKE_CUDNN_CRASH)
  *(volatile int*)0 = 1;
#elif defined(FAKE_CUDNN_HANG)
  for (;;) pause();
#endif
  return 91000;
}
