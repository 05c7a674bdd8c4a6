// Fuzz target: the YAML files beside the rules that are read from a path: a config's
// rules_update.public_keys (the bundle's trusted keys) and an explain case file. The input is
// written to an in-memory file and read back through its /proc/self/fd path, so each run touches
// no disk. Property: both readers return (keys or an error; cases or diagnostics) and never throw.
#include "fuzz_common.hpp"
#include "service/bundle.hpp"
#include "rules/explain_cases.hpp"
#include "util/fd.hpp"

#include <sys/mman.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static util::Fd file(::memfd_create("nvte-fuzz", MFD_CLOEXEC));
  if (!file) return 0;
  if (::ftruncate(file.get(), 0) != 0 || ::pwrite(file.get(), data, size, 0) != static_cast<ssize_t>(size)) return 0;
  std::string path = "/proc/self/fd/" + std::to_string(file.get());
  (void)service::load_trusted_keys(path);
  std::vector<rules::Diagnostic> diagnostics;
  (void)rules::load_explain_cases(path, diagnostics);
  return 0;
}
