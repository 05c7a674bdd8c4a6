// Fuzz target: TE debug logs (--te-log): the line reader, the config dictionary's Python-repr
// scanner and the verdict lines; every workload is then completed with TE's defaults, and its
// TE verdict compared with an empty explanation.
#include "fuzz_common.hpp"
#include "model/observed_selection.hpp"
#include "workload/te_log.hpp"
#include "workload/workload_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  auto imported = workload::parse_te_log(text, "train.log", "train");
  if (!imported.ok()) return 0;
  for (auto& [w, observed] : imported->workloads) {
    (void)workload::finish_workload(w);
    model::Explanation e;
    if (observed) (void)model::compare_selection(*observed, e);
  }
  return 0;
}
