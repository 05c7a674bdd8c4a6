// env: the environment a job would see, filtered to what decides which libraries load and
// which attention backend TE picks. Values are recorded as they are; rules interpret them.
#include "probe/node_probes.hpp"

#include <array>
#include <string_view>

namespace probe {

namespace {

constexpr std::array<std::string_view, 4> k_prefixes = {"NVTE_", "NCCL_", "CUDA_", "CUDNN_"};
// PYTHONPATH: where a `pip install --target` TE is found; PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK:
// turns off the torch check that a cuDNN loaded by TE first can fail (import_order.hpp);
// PYTHONDONTWRITEBYTECODE, PYTHONPYCACHEPREFIX: whether and where `import` keeps the bytecode it
// compiles (python_probe.cpp, python.bytecode[]).
constexpr std::array<std::string_view, 12> k_names = {"LD_LIBRARY_PATH",
                                                      "LD_PRELOAD",
                                                      "PYTORCH_CUDA_ALLOC_CONF",
                                                      "CUDA_VISIBLE_DEVICES",
                                                      "NVIDIA_VISIBLE_DEVICES",
                                                      "VIRTUAL_ENV",
                                                      "CONDA_PREFIX",
                                                      "PATH",
                                                      "PYTHONPATH",
                                                      "PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK",
                                                      "PYTHONDONTWRITEBYTECODE",
                                                      "PYTHONPYCACHEPREFIX"};

bool wanted(std::string_view name) {
  // A dot or bracket would split the fact name.
  if (name.find_first_of(".[]") != std::string_view::npos) return false;
  // The doctor's own settings (NVTE_DOCTOR_RULES, ...) share TE's prefix but are not TE's: a job
  // never sees them, and they must not count among the node's NVTE_* variables.
  if (name.starts_with("NVTE_DOCTOR_")) return false;
  for (auto prefix : k_prefixes) {
    if (name.starts_with(prefix)) return true;
  }
  for (auto exact : k_names) {
    if (name == exact) return true;
  }
  return false;
}

} // namespace

void run_env_probe(const Host& host, model::Facts& facts) {
  for (const auto& [name, value] : host.env) {
    if (wanted(name)) facts.set("env." + name, value);
  }
  record_status(facts, "env", "ok");
}

} // namespace probe
