// Fuzz target: the /etc/ld.so.cache parser (old libc5 and new glibc formats, string table
// offsets, entry counts) of the libraries probe.
#include "fuzz_common.hpp"
#include "probe/ld_cache.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)probe::parse_ld_cache(fuzz::as_text(data, size), "fuzz/ld.so.cache");
  return 0;
}
