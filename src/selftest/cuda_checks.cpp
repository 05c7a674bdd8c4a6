// The driver and NVRTC checks, and the cuda child that runs them and NCCL's in one process.
//
// driver: cuInit, every device's compute capability and a primary context made current with a
// small allocation in it. nvrtc: the NVRTC copy cuDNN would use (args "path") compiles a small
// kernel for each GPU's sm_XX, the driver loads the CUBIN (cuModuleLoadData), launches it and
// the result is checked; without a GPU it compiles for sm_80 and sm_90 (CUBIN) and compute_90
// (PTX) and checks what came back. That is the path cuDNN's runtime-compiled engines take, and
// where "No valid execution plans built" comes from when NVRTC and the driver disagree.
#include "selftest/checks.hpp"
#include "selftest/cuda_session.hpp"

#include "gpuapi/nvrtc.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <future>

namespace selftest {

namespace {

constexpr const char* k_kernel_source = R"(
extern "C" __global__ void nvte_doctor_axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

} // namespace

Json check_driver(const Json& args, Progress& progress) { return driver_check(args, CudaSession::open(&progress), progress); }

Json driver_check(const Json&, const SessionResult& session, Progress& progress) {
  auto start = std::chrono::steady_clock::now();
  if (!session) {
    if (session.error().kind == util::ErrorKind::not_installed) return skipped_result(session.error().message);
    return failed_result(session.error().message, "init");
  }
  const CudaSession& s = **session;
  Json result = ok_result();
  result["libcuda"] = s.driver().path();
  result["cuda_version"] = std::to_string(s.driver_version() / 1000) + "." + std::to_string((s.driver_version() % 1000) / 10);
  result["cuda_major"] = s.driver_version() / 1000;
  Json gpus = Json::array();
  auto in_contexts = progress.phase(phase::init, "allocate");
  for (const auto& gpu : s.gpus()) {
    std::string error;
    if (s.make_current(gpu, error)) {
      DeviceBuffer probe(s, 1 << 20, error);
      if (error.empty()) error = s.check(s.api().cuCtxSynchronize(), "cuCtxSynchronize");
    }
    gpus.push_back(Json{{"index", gpu.ordinal}, {"name", gpu.name}, {"sm", gpu.sm}, {"context", error.empty()}});
    if (!error.empty() && result["status"] == "ok") {
      result = failed_result("GPU " + std::to_string(gpu.ordinal) + ": " + error, "context");
    }
  }
  in_contexts.end();
  result["gpus"] = gpus;
  result["gpu_count"] = s.gpus().size();
  result["phase_seconds"] = progress.seconds();
  result["seconds"] = seconds_since(start);
  return result;
}

util::Result<Json> nvrtc_compile_only(const std::vector<std::string>& candidates, const std::vector<std::string>& archs) {
  auto nvrtc = NVTE_TRY(gpuapi::Nvrtc::load(candidates));
  auto version = NVTE_TRY(nvrtc.version());
  Json result = ok_result();
  result["path"] = nvrtc.path();
  result["cuda_version"] = std::to_string(version.first) + "." + std::to_string(version.second);
  result["cuda_major"] = version.first;
  Json compiled = Json::array();
  for (const auto& arch : archs) {
    auto start = std::chrono::steady_clock::now();
    auto out = nvrtc.compile(k_kernel_source, "nvte_doctor_axpy.cu", arch);
    if (!out) {
      Json failed = failed_result(out.error().message, "compile");
      failed["path"] = result["path"];
      failed["cuda_version"] = result["cuda_version"];
      failed["cuda_major"] = result["cuda_major"];
      failed["log"] = out.error().message;
      return failed;
    }
    bool elf = out->image.size() > 4 && std::memcmp(out->image.data(), "\x7f" "ELF", 4) == 0;
    bool ptx = !out->is_cubin && std::string(out->image.data()).find(".entry nvte_doctor_axpy") != std::string::npos;
    if (out->is_cubin ? !elf : !ptx) {
      return failed_result(arch + ": NVRTC returned " + std::to_string(out->image.size()) + " bytes that are not a " +
                               (out->is_cubin ? "CUBIN (ELF)" : "PTX with the kernel's entry"),
                           "compile");
    }
    compiled.push_back(Json{{"arch", arch}, {"bytes", out->image.size()}, {"seconds", seconds_since(start)}});
  }
  result["compiled"] = compiled;
  return result;
}

Json check_nvrtc(const Json& args, Progress& progress) { return nvrtc_check(args, CudaSession::open(&progress), progress); }

Json nvrtc_check(const Json& args, const SessionResult& session, Progress& progress) {
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> candidates;
  if (args.contains("path") && args["path"].is_string()) candidates.push_back(args["path"].get<std::string>());
  for (const auto& name : gpuapi::k_nvrtc_sonames) candidates.push_back(name);

  if (!session) {
    if (session.error().kind != util::ErrorKind::not_installed) return failed_result(session.error().message, "init");
    // No GPU: the compile still runs, for the architectures TE's wheels target.
    auto compiling = progress.phase(phase::compile);
    auto result = nvrtc_compile_only(candidates, {"sm_80", "sm_90", "compute_90"});
    compiling.end();
    // No GPU and no NVRTC: nothing here would compile a kernel (a login node); on the job's node
    // the same check runs with its GPU, where a missing NVRTC fails.
    if (!result && result.error().kind == util::ErrorKind::not_installed)
      return skipped_result(result.error().message + " (and " + session.error().message + ")");
    if (!result) return failed_result(result.error().message, "load");
    (*result)["gpu"] = false;
    (*result)["seconds"] = seconds_since(start);
    return *result;
  }
  const CudaSession& s = **session;
  std::vector<std::string> archs;
  for (const auto& gpu : s.gpus()) archs.push_back("sm_" + std::to_string(gpu.sm));
  auto compiling = progress.phase(phase::compile);
  auto compiled = nvrtc_compile_only(candidates, archs);
  compiling.end();
  if (!compiled) return failed_result(compiled.error().message, "load");
  Json result = *compiled;
  if (result["status"] != "ok") return result;
  result["gpu"] = true;
  result["driver_cuda_major"] = s.driver_version() / 1000;
  auto nvrtc = gpuapi::Nvrtc::load(candidates);
  const auto& api = s.api();
  if (!api.cuModuleLoadData || !api.cuModuleGetFunction || !api.cuLaunchKernel || !api.cuModuleUnload)
    return failed_result(s.driver().path() + " lacks module entry points", "load");
  constexpr int n = 1 << 20;
  std::vector<float> x(n), y(n), back(n);
  for (int i = 0; i < n; ++i) {
    x[static_cast<std::size_t>(i)] = static_cast<float>(i % 97) * 0.5f;
    y[static_cast<std::size_t>(i)] = static_cast<float>(i % 13);
  }
  auto launching = progress.phase(phase::launch);
  for (const auto& gpu : s.gpus()) {
    std::string where = "GPU " + std::to_string(gpu.ordinal) + " (sm_" + std::to_string(gpu.sm) + "): ";
    auto image = nvrtc->compile(k_kernel_source, "nvte_doctor_axpy.cu", "sm_" + std::to_string(gpu.sm));
    if (!image) return failed_result(where + image.error().message, "compile");
    std::string error;
    if (!s.make_current(gpu, error)) return failed_result(where + error, "context");
    gpuapi::CuModule module = nullptr;
    if (error = s.check(api.cuModuleLoadData(&module, image->image.data()), "cuModuleLoadData"); !error.empty()) {
      Json failed = failed_result(where + error + " (a CUBIN from NVRTC " + result["cuda_version"].get<std::string>() +
                                      " that this driver cannot load)",
                                  "load_module");
      failed["cuda_major"] = result["cuda_major"];
      failed["driver_cuda_major"] = result["driver_cuda_major"];
      return failed;
    }
    gpuapi::CuFunction function = nullptr;
    error = s.check(api.cuModuleGetFunction(&function, module, "nvte_doctor_axpy"), "cuModuleGetFunction");
    DeviceBuffer dx(s, n * sizeof(float), error);
    DeviceBuffer dy(s, n * sizeof(float), error);
    if (error.empty()) error = s.check(api.cuMemcpyHtoD_v2(dx.get(), x.data(), n * sizeof(float)), "cuMemcpyHtoD");
    if (error.empty()) error = s.check(api.cuMemcpyHtoD_v2(dy.get(), y.data(), n * sizeof(float)), "cuMemcpyHtoD");
    float a = 2.0f;
    int count = n;
    gpuapi::CuDevicePtr px = dx.get(), py = dy.get();
    void* params[] = {&a, &px, &py, &count};
    if (error.empty())
      error = s.check(api.cuLaunchKernel(function, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
    if (error.empty()) error = s.check(api.cuCtxSynchronize(), "cuCtxSynchronize");
    if (error.empty()) error = s.check(api.cuMemcpyDtoH_v2(back.data(), dy.get(), n * sizeof(float)), "cuMemcpyDtoH");
    api.cuModuleUnload(module);
    if (!error.empty()) return failed_result(where + error, "launch");
    for (std::size_t i = 0; i < back.size(); ++i) {
      if (std::fabs(back[i] - (2.0f * x[i] + y[i])) > 1e-5f)
        return failed_result(where + "the kernel computed a wrong value at element " + std::to_string(i), "numerics");
    }
  }
  launching.end();
  result["launched"] = true;
  result["phase_seconds"] = progress.seconds();
  result["seconds"] = seconds_since(start);
  return result;
}

} // namespace selftest

namespace selftest {

// One process, one CUDA context for the three: contexts are made one at a time by the driver
// (four children creating theirs at once took 0.38 s each on the H100, one alone 0.11 s), and the
// cuDNN child's context is on the self-test's critical path. Each answer is streamed as a part
// as soon as it is known, so that NCCL crashing or hanging leaves the driver's and NVRTC's.
//
// NCCL's check runs on a thread of its own beside the NVRTC check: with cuDNN's plans from the
// kernel cache, its communicator's initialisation (0.5 s on the H200, mostly host work) after
// NVRTC's compile and launch was the self-test's critical path. Each thread makes the context
// current itself (CudaSession::make_current); Progress is shared under its mutex. NCCL crashing
// before NVRTC's answer is streamed now loses that answer too (its compile and launch take 0.15 s,
// NCCL's initialisation 0.5 s). An exception
// on the thread comes back through the future and is rethrown here, never terminates.
Json check_cuda(const Json& args, Progress& progress) {
  auto session = CudaSession::open(&progress);
  progress.part("driver", driver_check(args.value("driver", Json::object()), session, progress));
  const Json nccl_args = args.value("nccl", Json::object());
  auto nccl = std::async(std::launch::async, [&] { return nccl_check(nccl_args, session, progress); });
  progress.part("nvrtc", nvrtc_check(args.value("nvrtc", Json::object()), session, progress));
  return nccl.get();
}

} // namespace selftest
