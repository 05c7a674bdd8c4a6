#include "selftest/cuda_session.hpp"

#include "util/strings.hpp"

#include <optional>

namespace selftest {

Json ok_result() { return Json{{"status", "ok"}}; }
Json failed_result(std::string error, std::string stage) {
  return Json{{"status", "failed"}, {"stage", std::move(stage)}, {"error", std::move(error)}};
}
Json skipped_result(std::string why) { return Json{{"status", "skipped"}, {"error", std::move(why)}}; }

util::Result<std::unique_ptr<CudaSession>> CudaSession::open(Progress* progress) {
  std::optional<Progress::Scope> in_cuinit;
  if (progress) in_cuinit.emplace(*progress, phase::init, "cuInit");
  std::unique_ptr<CudaSession> session(new CudaSession);
  auto driver = gpuapi::CudaDriver::load();
  if (!driver) return util::make_error(util::ErrorKind::not_installed, "no GPU: " + driver.error().message);
  session->m_driver = std::move(*driver);
  const auto& api = session->api();
  if (!api.cuInit || !api.cuDeviceGetCount || !api.cuDeviceGet || !api.cuDevicePrimaryCtxRetain || !api.cuCtxSetCurrent ||
      !api.cuDeviceGetAttribute || !api.cuCtxSynchronize || !api.cuMemAlloc_v2 || !api.cuMemFree_v2 || !api.cuMemcpyHtoD_v2 ||
      !api.cuMemcpyDtoH_v2)
    return util::make_error(util::ErrorKind::symbol_missing,
                            session->m_driver.path() + " lacks " + util::join(session->m_driver.missing(), ", "));
  if (api.cuDriverGetVersion) api.cuDriverGetVersion(&session->m_version);
  if (auto rc = api.cuInit(0); rc != gpuapi::k_cuda_success) {
    if (rc == gpuapi::k_cuda_error_no_device)
      return util::make_error(util::ErrorKind::not_installed, "no GPU: cuInit: " + session->m_driver.describe(rc));
    return util::make_error(util::ErrorKind::driver_error, "cuInit: " + session->m_driver.describe(rc));
  }
  int count = 0;
  if (auto rc = api.cuDeviceGetCount(&count); rc != gpuapi::k_cuda_success)
    return util::make_error(util::ErrorKind::driver_error, "cuDeviceGetCount: " + session->m_driver.describe(rc));
  if (count == 0) return util::make_error(util::ErrorKind::not_installed, "no GPU: cuDeviceGetCount reports 0 devices");
  in_cuinit.reset();
  std::optional<Progress::Scope> in_contexts;
  if (progress) in_contexts.emplace(*progress, phase::init, "contexts");
  for (int i = 0; i < count; ++i) {
    Gpu gpu;
    gpu.ordinal = i;
    if (auto rc = api.cuDeviceGet(&gpu.device, i); rc != gpuapi::k_cuda_success)
      return util::make_error(util::ErrorKind::driver_error, "cuDeviceGet(" + std::to_string(i) + "): " + session->m_driver.describe(rc));
    int major = 0, minor = 0;
    api.cuDeviceGetAttribute(&major, gpuapi::k_cu_device_attribute_compute_capability_major, gpu.device);
    api.cuDeviceGetAttribute(&minor, gpuapi::k_cu_device_attribute_compute_capability_minor, gpu.device);
    gpu.sm = major * 10 + minor;
    char name[256] = {};
    if (api.cuDeviceGetName) api.cuDeviceGetName(name, sizeof name, gpu.device);
    gpu.name = name;
    using GetUuid = gpuapi::CuResult (*)(unsigned char*, gpuapi::CuDevice);
    if (void* get_uuid = session->m_driver.optional_symbol("cuDeviceGetUuid")) {
      unsigned char uuid[16] = {};
      if (util::function_cast<GetUuid>(get_uuid)(uuid, gpu.device) == gpuapi::k_cuda_success) {
        static const char digits[] = "0123456789abcdef";
        for (unsigned char b : uuid) gpu.uuid += std::string{digits[b >> 4], digits[b & 0xf]};
      }
    }
    if (auto rc = api.cuDevicePrimaryCtxRetain(&gpu.context, gpu.device); rc != gpuapi::k_cuda_success)
      return util::make_error(util::ErrorKind::driver_error,
                              "cuDevicePrimaryCtxRetain(GPU " + std::to_string(i) + "): " + session->m_driver.describe(rc));
    session->m_gpus.push_back(gpu);
  }
  return session;
}

CudaSession::~CudaSession() {
  if (!api().cuDevicePrimaryCtxRelease_v2) return;
  if (api().cuCtxSetCurrent) api().cuCtxSetCurrent(nullptr);
  for (const auto& gpu : m_gpus) api().cuDevicePrimaryCtxRelease_v2(gpu.device);
}

util::Result<std::pair<std::size_t, std::size_t>> CudaSession::memory_info() const {
  if (!api().cuMemGetInfo_v2) return util::make_error(util::ErrorKind::symbol_missing, m_driver.path() + " lacks cuMemGetInfo_v2");
  std::size_t free = 0, total = 0;
  if (auto error = check(api().cuMemGetInfo_v2(&free, &total), "cuMemGetInfo"); !error.empty())
    return util::make_error(util::ErrorKind::driver_error, error);
  return std::pair{free, total};
}

bool CudaSession::make_current(const Gpu& gpu, std::string& error) const {
  error = check(api().cuCtxSetCurrent(gpu.context), "cuCtxSetCurrent");
  return error.empty();
}

std::string CudaSession::check(gpuapi::CuResult rc, const char* what) const {
  if (rc == gpuapi::k_cuda_success) return {};
  return std::string(what) + ": " + m_driver.describe(rc);
}

DeviceBuffer::DeviceBuffer(const CudaSession& session, std::size_t bytes, std::string& error) : m_session(session) {
  error = session.check(session.api().cuMemAlloc_v2(&m_ptr, bytes), "cuMemAlloc");
  if (!error.empty()) m_ptr = 0;
}

DeviceBuffer::~DeviceBuffer() {
  if (m_ptr) m_session.api().cuMemFree_v2(m_ptr);
}

} // namespace selftest
