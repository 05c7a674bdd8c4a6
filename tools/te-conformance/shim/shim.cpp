// The machine the extracted selector runs on, set by the harness before each call, and the
// capture of the selector's std::cout warnings (TE prints why a cuDNN version is refused).
#include "prelude.hpp"

namespace {
int g_sm = 90;
size_t g_cudnn = 90000;
std::ostringstream g_captured;
std::streambuf* g_saved = nullptr;
} // namespace

extern "C" size_t cudnnGetVersion() { return g_cudnn; }

namespace transformer_engine::cuda {
int current_device() { return 0; }
int sm_arch(int) { return g_sm; }
int sm_arch() { return g_sm; }
} // namespace transformer_engine::cuda

extern "C" {
void conformance_set_machine(int sm, long cudnn_version) {
  g_sm = sm;
  g_cudnn = static_cast<size_t>(cudnn_version);
}
void conformance_capture_begin() {
  g_captured.str("");
  g_saved = std::cout.rdbuf(g_captured.rdbuf());
}
// Copies what the selector printed since capture_begin into buffer (NUL-terminated, truncated).
void conformance_capture_end(char* buffer, size_t size) {
  if (g_saved) std::cout.rdbuf(g_saved);
  g_saved = nullptr;
  std::string text = g_captured.str();
  if (size == 0) return;
  size_t n = text.size() < size - 1 ? text.size() : size - 1;
  text.copy(buffer, n);
  buffer[n] = '\0';
}
}
