// Fuzz target: dist-info METADATA (RFC 822 style core metadata) as the python probe reads it.
#include "fuzz_common.hpp"
#include "probe/dist_info.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)probe::parse_core_metadata(fuzz::as_text(data, size), "fuzz/METADATA");
  return 0;
}
