// Fuzz target: the readers of `run` and `daemon` that take the last report back in (the paths
// its facts name feed the fingerprint; its summary's status feeds the metric refresh). The node
// root is a directory that does not exist, so every stat is a cheap miss. Property: neither
// crashes, and a fingerprint always comes out.
#include "fuzz_common.hpp"
#include "service/run.hpp"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(fuzz::as_text(data, size));
  service::FingerprintInputs in;
  in.root = "/nonexistent-nvte-fuzz-root";
  in.last_report_json = text;
  in.tool_version = "fuzz";
  if (service::compute_fingerprint(in).digest.size() != 16) std::abort();
  (void)service::report_status(text);
  return 0;
}
