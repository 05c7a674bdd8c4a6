// Fuzz target: Megatron-LM launch scripts and argument files (the shell reader, then the
// argument table) and, when the input starts with '#yaml', Megatron-Bridge / NeMo 2 recipes;
// every workload is then completed with TE's defaults.
#include "fuzz_common.hpp"
#include "workload/megatron.hpp"
#include "workload/workload_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  auto environment = [](std::string_view name) -> std::optional<std::string> {
    if (name == "SEQ_LEN") return std::string("8192");
    return std::nullopt;
  };
  auto imported = text.starts_with("#yaml") ? workload::parse_megatron_yaml(text, "recipe.yaml", "recipe")
                                            : workload::parse_megatron_script(text, "run.sh", environment, "run");
  if (!imported.ok()) return 0;
  for (auto& w : *imported) (void)workload::finish_workload(w);
  return 0;
}
