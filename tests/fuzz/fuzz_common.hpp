// Shared by the fuzz targets: the libFuzzer entry point's signature, and a small node that the
// evaluating targets (rules, conditions) run against so that evaluation reaches real values.
#pragma once

#include "model/facts.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// A target's one-time set-up before the first input, where it has one; weak, so that the replay
// driver (replay_main.cpp) can run it as libFuzzer does, and targets without one still link.
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Two GPUs, a cuDNN with two copies, TE, PyTorch and an environment variable: enough for every
// kind of condition (per-element, versions, strings, booleans, env) to evaluate both ways.
inline const model::Facts& small_node() {
  static const model::Facts facts = [] {
    model::Facts f;
    for (const char* set : {"gpu[0].name=NVIDIA A100-SXM4-40GB", "gpu[0].compute_capability=8.0",
                            "gpu[1].name=NVIDIA H100 80GB HBM3", "gpu[1].compute_capability=9.0",
                            "driver.version=550.54.15", "driver.cuda_version=12.4", "cudnn.version=9.1.0",
                            "cudnn.path=/usr/lib/x86_64-linux-gnu/libcudnn.so.9", "te.version=2.3.0",
                            "torch.version=2.6.0+cu124", "torch.cuda_version=12.4", "python.executable=/opt/venv/bin/python3",
                            "env.NVTE_FLASH_ATTN=0"}) {
      (void)f.apply_override(set);
    }
    f.derive();
    return f;
  }();
  return facts;
}

} // namespace fuzz
