// Fuzz target: workload files (YAML or JSON, one workload or a `workloads:` list), each then
// completed with TE's defaults and checked for consistency.
#include "fuzz_common.hpp"
#include "workload/workload_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto workloads = workload::parse_workload_text(fuzz::as_text(data, size), "fuzz.yaml");
  if (!workloads.ok()) return 0;
  for (auto& w : *workloads) (void)workload::finish_workload(w);
  return 0;
}
