// What nvte_get_fused_attn_backend asks of the machine, answered by the harness instead of
// CUDA and cuDNN: the SM of the current device, cudnnGetVersion(), TE's getenv and error
// macros (DType comes from TE's public header). Nothing else of TE's internals is
// provided: the extracted functions must compile against TE's own public headers and this.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "transformer_engine/fused_attn.h"

extern "C" size_t cudnnGetVersion();

namespace transformer_engine {

namespace cuda {
int current_device();
int sm_arch(int device_id);
int sm_arch();
} // namespace cuda

// util/system.h: a variable's value parsed as T, or the default when unset or empty.
template <typename T> T getenv(const char* name, const T& default_value) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return default_value;
  std::istringstream in(text);
  T value{};
  in >> value;
  return in.fail() ? default_value : value;
}
template <typename T> T getenv(const char* name) { return getenv<T>(name, T{}); }

} // namespace transformer_engine

#define NVTE_CHECK(condition, ...)                                                               \
  do {                                                                                           \
    if (!(condition)) throw std::runtime_error("NVTE_CHECK failed: " #condition);                \
  } while (false)
#define NVTE_ERROR(...) throw std::runtime_error("NVTE_ERROR")
