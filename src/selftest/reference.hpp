// The fp32 reference attention on the GPU, at the workload's whole shape: its kernels
// (reference_source.cpp) compiled with NVRTC for the GPU at hand, run on the very buffers cuDNN
// read, and compared with cuDNN's output and gradients there, element by element; only a few
// numbers per tensor come back to the host. The reference is what the self-test trusts, so it
// is kept plain: fp32 matrix products, a materialised score matrix a chunk at a time (budget.hpp).
#pragma once

#include "gpuapi/nvrtc.hpp"
#include "selftest/budget.hpp"
#include "selftest/cuda_session.hpp"
#include "selftest/kernel_cache.hpp"
#include "selftest/sdpa.hpp"

#include <memory>
#include <string>
#include <vector>

namespace selftest {

extern const char* const k_reference_common;
extern const char* const k_reference_gemm_tiled;
extern const char* const k_reference_gemm_simple;

// Which matrix product the reference uses: tiled (128 x 128 per block, fast, about a second of
// NVRTC's time to compile) or simple (an element per thread, compiles in a fraction of that);
// simple while the shape's reference work is under 20 GFLOP.
enum class ReferenceKernel { simple, tiled };
ReferenceKernel reference_kernel_for(const SdpaShape& shape);
std::string reference_source(ReferenceKernel kernel);

// The kernels as a CUBIN for sm (e.g. 90). Needs no GPU.
util::Result<std::vector<char>> compile_reference(const gpuapi::Nvrtc& nvrtc, int sm, ReferenceKernel kernel);

// NVRTC's identity for a cache key: its files (libraries_identity of the library and its
// builtins) and nvrtcVersion.
std::string nvrtc_identity(const gpuapi::Nvrtc& nvrtc);
// The key of a CUBIN: NVRTC's identity, the source's digest, the options and the architecture.
CacheKey cubin_key(std::string_view nvrtc_identity, std::string_view source, const std::vector<std::string>& options,
                   std::string_view arch);
// The reference kernels' key (cubin_key of what compile_reference compiles).
CacheKey reference_key(const gpuapi::Nvrtc& nvrtc, int sm, ReferenceKernel kernel);
// The reference kernels' CUBIN and where it came from: the kernel cache's copy when it has one
// (an ELF image for exactly reference_key), else compiled and kept. Fails only when NVRTC does.
struct ReferenceCubin {
  std::vector<char> cubin;
  KeptArtifact kept;
};
util::Result<ReferenceCubin> cached_reference(const KernelCache& cache, const gpuapi::Nvrtc& nvrtc, int sm, ReferenceKernel kernel);

// One 16-bit tensor against its fp32 reference.
struct TensorErrors {
  std::string name;        // "O", "dQ", ...
  double max_abs_err = 0;  // infinite when a value is not finite
  double max_ref = 0;      // largest |reference|
  double max_rel_err = 0;  // max_abs_err / max_ref
  std::int64_t violations = 0; // elements beyond atol + rtol |reference|
  std::int64_t nonfinite = 0;  // NaN or infinite values cuDNN wrote
  std::string worst;           // "b0 h3 s17 d5: got 0.1, want 0.2"
};

// A 16-bit tensor on the device as a [d0, d1, d2, d3] view.
struct DeviceView {
  gpuapi::CuDevicePtr base = 0; // element 0 of the buffer
  TensorView view;              // offset and strides in elements
};

class DeviceReference {
public:
  // Loads the compiled kernels (compile_reference with kernel) into the session's current context.
  static util::Result<std::unique_ptr<DeviceReference>> load(const CudaSession& session, const std::vector<char>& cubin,
                                                            ReferenceKernel kernel);
  ~DeviceReference();
  DeviceReference(const DeviceReference&) = delete;
  DeviceReference& operator=(const DeviceReference&) = delete;

  // Fills n 16-bit elements at ptr with input_value(seed, index) (sdpa.hpp).
  util::Result<void> fill(gpuapi::CuDevicePtr ptr, std::int64_t n, std::uint64_t seed, bool bf16) const;

  // The forward: O in fp32 for the shape's Q, K, V (views into cuDNN's buffers). Allocates the
  // reference's tensors and scratch (plan_chunks over scratch_budget).
  util::Result<void> forward(const SdpaShape& shape, const DeviceView& q, const DeviceView& k, const DeviceView& v,
                             std::int64_t scratch_budget);
  // The backward after forward(): dQ, dK, dV in fp32 for dO.
  util::Result<void> backward(const DeviceView& d_o);

  // cuDNN's tensor (bf16/fp16) against the reference's "O", "dQ", "dK" or "dV", with the
  // elementwise tolerance atol + rtol |reference| counted in violations.
  util::Result<TensorErrors> compare(const std::string& name, const DeviceView& got, double atol, double rtol) const;

  const ChunkPlan& chunks() const { return m_chunks; }
  ReferenceKernel kernel() const { return m_kernel; }
  int launches() const { return m_launches; }

private:
  explicit DeviceReference(const CudaSession& session) : m_session(session) {}
  struct Kernels {
    gpuapi::CuFunction gemm = nullptr, softmax = nullptr, rowdot = nullptr, dsoftmax = nullptr, fill = nullptr, compare = nullptr;
  };
  util::Result<void> launch(gpuapi::CuFunction f, unsigned gx, unsigned gy, unsigned gz, unsigned block, void** params) const;
  unsigned tiles(std::int64_t n) const { return static_cast<unsigned>((n + m_tile - 1) / m_tile); }
  util::Result<void> scores_and_softmax(std::int64_t z_first, std::int64_t heads, std::int64_t r0, std::int64_t rows);

  const CudaSession& m_session;
  gpuapi::CuModule m_module = nullptr;
  Kernels m_kernels;
  ReferenceKernel m_kernel = ReferenceKernel::tiled;
  std::int64_t m_tile = 128; // C's tile per block in the matrix product
  SdpaShape m_shape;
  DeviceView m_q, m_k, m_v;
  ChunkPlan m_chunks;
  std::unique_ptr<DeviceBuffer> m_o, m_dq, m_dk, m_dv, m_dsum, m_p, m_ds;
  mutable std::unique_ptr<DeviceBuffer> m_partials; // made by the first compare
  mutable int m_launches = 0;
};

} // namespace selftest
