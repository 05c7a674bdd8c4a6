/* A libcudnn.so.9 that says it was loaded: its constructor appends "uid=N" to the file named by
 * NVTE_TEST_LOAD_MARKER (inherited by the doctor's version child). No version in its name, no
 * header or wheel beside it: only loading it would tell its version. The untrusted-tree tests
 * (tests/reliability/untrusted_trees_test.cpp) put it where a preflight or a root probe must not
 * load it, and check that the marker never appears. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void mark_loaded(void) {
  const char* marker = getenv("NVTE_TEST_LOAD_MARKER");
  if (!marker) return;
  FILE* f = fopen(marker, "a");
  if (!f) return;
  fprintf(f, "uid=%d\n", (int)getuid());
  fclose(f);
}

size_t cudnnGetVersion(void) { return 90300; } // NOLINT(readability-identifier-naming): cuDNN's own name
