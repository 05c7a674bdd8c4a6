// What the GPU checks share inside the child: libcuda loaded and initialised, every GPU's
// primary context retained (and released at the end), device buffers as RAII, and the result
// objects of the protocol (selftest.hpp).
#pragma once

#include "gpuapi/cuda_driver.hpp"
#include "selftest/selftest.hpp"

#include <memory>
#include <string>
#include <vector>

namespace selftest {

Json ok_result();
Json failed_result(std::string error, std::string stage);
Json skipped_result(std::string why);

struct Gpu {
  int ordinal = 0;
  gpuapi::CuDevice device = 0;
  int sm = 0; // 90 for compute capability 9.0
  std::string name;
  std::string uuid; // 32 hex digits (cuDeviceGetUuid), "" where the driver cannot say
  gpuapi::CuContext context = nullptr;
};

class CudaSession {
public:
  // Loads libcuda, cuInit(0), retains each GPU's primary context (phases "init cuInit" and
  // "init contexts" when progress is given). Without libcuda or without a device: not_installed
  // whose message starts with "no GPU"; other failures: driver_error.
  static util::Result<std::unique_ptr<CudaSession>> open(Progress* progress = nullptr);
  ~CudaSession();
  CudaSession(const CudaSession&) = delete;
  CudaSession& operator=(const CudaSession&) = delete;

  const gpuapi::CudaDriver& driver() const { return m_driver; }
  const gpuapi::CudaDriverApi& api() const { return m_driver.api(); }
  const std::vector<Gpu>& gpus() const { return m_gpus; }
  int driver_version() const { return m_version; }
  // Makes the GPU's primary context current; false with the driver's text in error.
  bool make_current(const Gpu& gpu, std::string& error) const;
  // Free and total bytes of the current context's device (cuMemGetInfo), or driver_error.
  util::Result<std::pair<std::size_t, std::size_t>> memory_info() const;
  // "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory" when rc fails, else empty.
  std::string check(gpuapi::CuResult rc, const char* what) const;

private:
  CudaSession() = default;
  gpuapi::CudaDriver m_driver;
  std::vector<Gpu> m_gpus;
  int m_version = 0;
};

// Device memory of the current context, freed on destruction.
class DeviceBuffer {
public:
  DeviceBuffer(const CudaSession& session, std::size_t bytes, std::string& error);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  gpuapi::CuDevicePtr get() const { return m_ptr; }
  // The device address as the pointer cuDNN's variant pack takes.
  void* pointer() const { return reinterpret_cast<void*>(m_ptr); } // NOLINT(performance-no-int-to-ptr)

private:
  const CudaSession& m_session;
  gpuapi::CuDevicePtr m_ptr = 0;
};

} // namespace selftest
