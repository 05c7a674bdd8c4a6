// Fuzz target: the Hugging Face config.json importer, then completion of every variant.
#include "fuzz_common.hpp"
#include "workload/hf_config.hpp"
#include "workload/workload_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto imported = workload::parse_hf_config(fuzz::as_text(data, size), "config.json");
  if (!imported.ok()) return 0;
  for (auto& w : *imported) (void)workload::finish_workload(w);
  return 0;
}
