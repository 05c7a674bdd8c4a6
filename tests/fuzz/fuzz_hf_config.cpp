// Fuzz target: the Hugging Face config.json importer, then workload completion.
#include "fuzz_common.hpp"
#include "workload/workload_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto imported = workload::parse_hf_config(fuzz::as_text(data, size), "config.json");
  if (!imported.ok()) return 0;
  (void)workload::finish_workload(imported->workload);
  return 0;
}
