// Fuzz target: the service configuration reader (/etc/nvte-doctor/config.yaml, through the
// input layer's YAML check and then yaml-cpp). Property: parse_config returns a value or an
// error naming the file, and never throws or crashes.
#include "fuzz_common.hpp"
#include "service/config.hpp"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto config = service::parse_config(fuzz::as_text(data, size), "/etc/nvte-doctor/config.yaml");
  if (!config && config.error().message.find("config.yaml") == std::string::npos) std::abort();
  return 0;
}
