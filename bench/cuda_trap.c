/* A trap libcuda for the benchmark's "no CUDA context" check: installed as libcuda.so.1 in a
 * directory put first on LD_LIBRARY_PATH, it stands in for the driver library. Loading it appends
 * "loaded <pid>" to $NVTE_BENCH_CUDA_TRAP_LOG (so the harness knows the check was not vacuous);
 * cuInit, the call every CUDA context starts with, appends "cuInit <pid>" and fails with
 * CUDA_ERROR_NOT_INITIALIZED (3) instead of aborting, so the command being checked runs to its
 * end. cuDriverGetVersion answers 13.0 like tests/fakes/fake_cuda.c. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void note(const char* what) {
  const char* path = getenv("NVTE_BENCH_CUDA_TRAP_LOG");
  if (!path || !*path) return;
  FILE* f = fopen(path, "a");
  if (!f) return;
  fprintf(f, "%s %ld\n", what, (long)getpid());
  fclose(f);
}

__attribute__((constructor)) static void on_load(void) { note("loaded"); }

int cuDriverGetVersion(int* version) {
  *version = 13000;
  return 0;
}

int cuInit(unsigned flags) {
  (void)flags;
  note("cuInit");
  return 3;
}
