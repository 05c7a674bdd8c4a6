// The nccl check, run in a child process only: one communicator per local GPU in this process
// (ncclCommInitAll), an all-reduce (sum) of float buffers filled with rank + 1 whose result is
// checked, and the bus bandwidth of the timed repetitions (algorithm bandwidth x 2(n-1)/n, as
// nccl-tests report it). One GPU still tests ncclGetUniqueId and the communicator's
// initialisation.
#include "selftest/checks.hpp"
#include "selftest/cuda_session.hpp"

#include "gpuapi/nccl.hpp"

#include <bit>
#include <chrono>
#include <cmath>

namespace selftest {

Json check_nccl(const Json& args, Progress& progress) { return nccl_check(args, CudaSession::open(&progress), progress); }

Json nccl_check(const Json& args, const SessionResult& session, Progress& progress) {
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> candidates;
  if (args.contains("path") && args["path"].is_string()) candidates.push_back(args["path"].get<std::string>());
  for (const auto& name : gpuapi::k_nccl_sonames) candidates.push_back(name);
  std::size_t bytes = args.contains("bytes") && args["bytes"].is_number_unsigned() ? args["bytes"].get<std::size_t>() : (64u << 20);

  if (!session) {
    if (session.error().kind == util::ErrorKind::not_installed) return skipped_result(session.error().message);
    return failed_result(session.error().message, "init");
  }
  const CudaSession& s = **session;
  auto loading = progress.phase(phase::load, "NCCL");
  auto nccl = gpuapi::Nccl::load(candidates);
  loading.end();
  if (!nccl) return failed_result(nccl.error().message, "load");
  const auto& api = nccl->api();
  if (!api.ncclGetUniqueId || !api.ncclCommInitAll || !api.ncclAllReduce || !api.ncclGroupStart || !api.ncclGroupEnd || !api.ncclCommDestroy)
    return failed_result(nccl->path() + " lacks an entry point the check needs", "load");
  Json result = ok_result();
  result["path"] = nccl->path();
  int version = 0;
  if (api.ncclGetVersion && api.ncclGetVersion(&version) == 0) result["version"] = version;
  auto done = [&](Json r) {
    for (const auto& key : {"path", "version"})
      if (result.contains(key)) r[key] = result[key];
    r["phase_seconds"] = progress.seconds();
    r["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  };

  auto in_comm = progress.phase(phase::comm);
  gpuapi::NcclUniqueId id{};
  if (auto rc = api.ncclGetUniqueId(&id); rc != 0) return done(failed_result("ncclGetUniqueId: " + nccl->describe(rc), "init"));
  int n = static_cast<int>(s.gpus().size());
  std::vector<int> devices;
  for (const auto& gpu : s.gpus()) devices.push_back(gpu.ordinal);
  std::vector<gpuapi::NcclComm> comms(static_cast<std::size_t>(n), nullptr);
  if (auto rc = api.ncclCommInitAll(comms.data(), n, devices.data()); rc != 0)
    return done(failed_result("ncclCommInitAll over " + std::to_string(n) + " GPU(s): " + nccl->describe(rc), "init"));
  // No ncclCommDestroy: the check runs in a child that _exits right after its result, and the
  // kernel frees what NCCL holds. Destroying the communicator took 0.6 s of the self-test's
  // critical path on the H100 (one GPU), and whether it works is not what this check asks.

  in_comm.end();
  auto reducing = progress.phase(phase::allreduce);
  std::size_t count = bytes / sizeof(float);
  std::vector<std::unique_ptr<DeviceBuffer>> send, recv;
  std::vector<gpuapi::CuStream> streams(static_cast<std::size_t>(n), nullptr);
  std::string error;
  for (int i = 0; i < n; ++i) {
    const Gpu& gpu = s.gpus()[static_cast<std::size_t>(i)];
    if (!s.make_current(gpu, error)) return done(failed_result(error, "init"));
    send.push_back(std::make_unique<DeviceBuffer>(s, bytes, error));
    if (error.empty()) recv.push_back(std::make_unique<DeviceBuffer>(s, bytes, error));
    if (error.empty()) error = s.check(s.api().cuMemsetD32_v2(send.back()->get(), std::bit_cast<unsigned>(static_cast<float>(i + 1)), count), "cuMemsetD32");
    if (error.empty()) error = s.check(s.api().cuStreamCreate(&streams[static_cast<std::size_t>(i)], 0), "cuStreamCreate");
    if (!error.empty()) return done(failed_result("GPU " + std::to_string(i) + ": " + error, "allreduce"));
  }
  auto all_reduce = [&]() -> std::string {
    api.ncclGroupStart();
    for (int i = 0; i < n; ++i) {
      auto u = static_cast<std::size_t>(i);
      if (auto rc = api.ncclAllReduce(send[u]->pointer(), recv[u]->pointer(), count, gpuapi::k_nccl_float32, gpuapi::k_nccl_sum, comms[u], streams[u]); rc != 0) {
        api.ncclGroupEnd();
        return "ncclAllReduce: " + nccl->describe(rc);
      }
    }
    if (auto rc = api.ncclGroupEnd(); rc != 0) return "ncclGroupEnd: " + nccl->describe(rc);
    for (int i = 0; i < n; ++i) {
      std::string e;
      s.make_current(s.gpus()[static_cast<std::size_t>(i)], e);
      if (e.empty()) e = s.check(s.api().cuStreamSynchronize(streams[static_cast<std::size_t>(i)]), "cuStreamSynchronize");
      if (!e.empty()) return e;
    }
    return {};
  };
  if (error = all_reduce(); !error.empty()) return done(failed_result(error, "allreduce"));
  float want = static_cast<float>(n * (n + 1) / 2);
  std::vector<float> back(count < 4096 ? count : 4096);
  for (int i = 0; i < n; ++i) {
    s.make_current(s.gpus()[static_cast<std::size_t>(i)], error);
    std::size_t tail = (count - back.size()) * sizeof(float);
    for (std::size_t offset : {std::size_t{0}, tail}) {
      error = s.check(s.api().cuMemcpyDtoH_v2(back.data(), recv[static_cast<std::size_t>(i)]->get() + offset, back.size() * sizeof(float)), "cuMemcpyDtoH");
      if (!error.empty()) return done(failed_result(error, "allreduce"));
      for (float x : back) {
        if (std::fabs(x - want) > 1e-3f)
          return done(failed_result("GPU " + std::to_string(i) + " received " + std::to_string(x) + " where the sum is " + std::to_string(want), "numerics"));
      }
    }
  }
  constexpr int k_repeats = 10;
  auto timed = std::chrono::steady_clock::now();
  for (int r = 0; r < k_repeats && error.empty(); ++r) error = all_reduce();
  double per_run = std::chrono::duration<double>(std::chrono::steady_clock::now() - timed).count() / k_repeats;
  if (!error.empty()) return done(failed_result(error, "allreduce"));
  double algbw = static_cast<double>(bytes) / per_run / 1e9;
  result["gpus"] = n;
  result["bytes"] = bytes;
  result["allreduce_ms"] = per_run * 1e3;
  result["algbw_gbps"] = algbw;
  result["bus_bandwidth_gbps"] = n > 1 ? algbw * 2.0 * (n - 1) / n : 0.0;
  for (auto stream : streams) s.api().cuStreamDestroy_v2(stream);
  reducing.end();
  return done(result);
}

} // namespace selftest
