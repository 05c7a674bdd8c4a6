// The cudnn_sdpa check: with the cuDNN copy TE would load, build the SDPA forward graph at the
// workload's shape (sdpa_graph.hpp), build an execution plan, execute it on GPU 0 and compare
// the output with the host's fp32 reference (sdpa.hpp). Stages in the result: load, graph,
// plan, execute, numerics. Backward is not built by this check (the Python tier runs it).
#include "selftest/checks.hpp"
#include "selftest/cuda_session.hpp"
#include "selftest/sdpa_graph.hpp"

#include <chrono>
#include <limits>

namespace selftest {

namespace {

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

Json check_cudnn_sdpa(const Json& args) {
  auto start = std::chrono::steady_clock::now();
  auto shape = parse_shape(args);
  if (!shape) return skipped_result(shape.error().message);
  auto layout = make_layout(*shape);
  if (!layout) return skipped_result(layout.error().message);

  std::vector<std::string> candidates;
  if (args.contains("path") && args["path"].is_string()) candidates.push_back(args["path"].get<std::string>());
  for (const auto& name : gpuapi::k_cudnn_sonames) candidates.push_back(name);
  // cuDNN's runtime-compiled engines dlopen libnvrtc by SONAME: load the copy TE would use first
  // so that is the one they get (TE itself preloads it when imported).
  util::DlLibrary nvrtc;
  if (args.contains("nvrtc_path") && args["nvrtc_path"].is_string()) {
    if (auto loaded = util::DlLibrary::open(args["nvrtc_path"].get<std::string>())) nvrtc = std::move(*loaded);
  }
  auto cudnn = gpuapi::Cudnn::load(candidates);
  if (!cudnn) return failed_result(cudnn.error().message, "load");
  Json info = Json::object();
  info["path"] = cudnn->path();
  if (nvrtc) info["nvrtc_path"] = nvrtc.loaded_path();
  if (cudnn->api().cudnnGetVersion) info["version"] = cudnn->api().cudnnGetVersion();
  info["label"] = shape->label();
  auto with_info = [&](Json result) {
    for (auto& [key, value] : info.items()) result[key] = value;
    result["seconds"] = since(start);
    return result;
  };

  SdpaGraph graph(*cudnn);
  if (auto built = graph.build_operations(*shape, *layout); !built) return with_info(failed_result(built.error().message, "graph"));
  info["operations"] = graph.operation_count();

  auto session = CudaSession::open();
  if (!session) {
    if (session.error().kind == util::ErrorKind::not_installed) {
      Json skipped = skipped_result(session.error().message + " (the graph's operations were built; plan and execution need one)");
      return with_info(skipped);
    }
    return with_info(failed_result(session.error().message, "init"));
  }
  const CudaSession& s = **session;
  const Gpu& gpu = s.gpus().front();
  std::string error;
  if (!s.make_current(gpu, error)) return with_info(failed_result(error, "init"));
  info["gpu"] = gpu.name;
  info["sm"] = gpu.sm;
  gpuapi::CudnnHandle handle = nullptr;
  if (auto rc = cudnn->api().cudnnCreate(&handle); rc != 0) return with_info(failed_result("cudnnCreate: " + cudnn->describe(rc), "init"));
  struct HandleGuard {
    const gpuapi::Cudnn& c;
    gpuapi::CudnnHandle h;
    ~HandleGuard() { c.api().cudnnDestroy(h); }
  } guard{*cudnn, handle};

  auto plan_start = std::chrono::steady_clock::now();
  auto workspace_size = graph.build_plan(handle);
  info["plan_seconds"] = since(plan_start);
  info["engine_configs_tried"] = graph.engine_configs_tried();
  if (!workspace_size) return with_info(failed_result(workspace_size.error().message, "plan"));

  auto inputs = make_inputs(*shape, *layout);
  std::vector<std::unique_ptr<DeviceBuffer>> device;
  for (std::size_t i = 0; i < layout->buffer_elements.size(); ++i) {
    device.push_back(std::make_unique<DeviceBuffer>(s, static_cast<std::size_t>(layout->buffer_elements[i]) * 2, error));
    if (!error.empty()) return with_info(failed_result(error, "execute"));
    if (i < inputs.size()) {
      error = s.check(s.api().cuMemcpyHtoD_v2(device[i]->get(), inputs[i].data(), inputs[i].size() * 2), "cuMemcpyHtoD");
      if (!error.empty()) return with_info(failed_result(error, "execute"));
    }
  }
  DeviceBuffer stats(s, static_cast<std::size_t>(shape->batch * shape->heads * shape->seq_q) * sizeof(float), error);
  DeviceBuffer workspace(s, static_cast<std::size_t>(std::max<std::int64_t>(*workspace_size, 256)), error);
  if (!error.empty()) return with_info(failed_result(error, "execute"));

  float scale = shape->scale();
  // The masked score: -inf, except that cuDNN before 9.10 wants the lowest finite float there
  // (cudnn-frontend's attn_score_modifiers.h, get_negative_inf_value).
  std::size_t version = cudnn->api().cudnnGetVersion ? cudnn->api().cudnnGetVersion() : 0;
  float neg_inf = version < 91000 ? std::numeric_limits<float>::lowest() : -std::numeric_limits<float>::infinity();
  std::vector<std::int64_t> uids = {k_uid_q, k_uid_k, k_uid_v, k_uid_o, k_uid_stats, k_uid_scale};
  auto at = [&](const TensorView& v) {
    return static_cast<void*>(static_cast<char*>(device[static_cast<std::size_t>(v.buffer)]->pointer()) + v.offset * 2);
  };
  std::vector<void*> pointers = {at(layout->q), at(layout->k), at(layout->v), at(layout->o), stats.pointer(), &scale};
  if (shape->causal) {
    uids.push_back(k_uid_neg_inf);
    pointers.push_back(&neg_inf);
  }
  namespace c = gpuapi::cudnn;
  const auto& api = cudnn->api();
  gpuapi::CudnnDescriptor pack = nullptr;
  auto fail_pack = [&](int rc, const char* what) { return with_info(failed_result(std::string(what) + ": " + cudnn->describe(rc), "execute")); };
  if (auto rc = api.cudnnBackendCreateDescriptor(c::k_variant_pack_descriptor, &pack); rc != 0) return fail_pack(rc, "variant pack");
  struct PackGuard {
    const gpuapi::Cudnn& c;
    gpuapi::CudnnDescriptor d;
    ~PackGuard() { c.api().cudnnBackendDestroyDescriptor(d); }
  } pack_guard{*cudnn, pack};
  void* workspace_pointer = workspace.pointer();
  if (auto rc = api.cudnnBackendSetAttribute(pack, c::k_attr_variant_pack_unique_ids, c::k_type_int64, static_cast<std::int64_t>(uids.size()), uids.data()); rc != 0)
    return fail_pack(rc, "variant pack ids");
  if (auto rc = api.cudnnBackendSetAttribute(pack, c::k_attr_variant_pack_data_pointers, c::k_type_void_ptr, static_cast<std::int64_t>(pointers.size()), pointers.data()); rc != 0)
    return fail_pack(rc, "variant pack pointers");
  if (auto rc = api.cudnnBackendSetAttribute(pack, c::k_attr_variant_pack_workspace, c::k_type_void_ptr, 1, &workspace_pointer); rc != 0)
    return fail_pack(rc, "variant pack workspace");
  if (auto rc = api.cudnnBackendFinalize(pack); rc != 0) return fail_pack(rc, "variant pack");

  auto exec_start = std::chrono::steady_clock::now();
  if (auto rc = api.cudnnBackendExecute(handle, graph.plan(), pack); rc != 0) return fail_pack(rc, "cudnnBackendExecute");
  if (error = s.check(s.api().cuCtxSynchronize(), "cuCtxSynchronize after cudnnBackendExecute"); !error.empty())
    return with_info(failed_result(error, "execute"));
  info["first_execute_seconds"] = since(exec_start);
  constexpr int k_repeats = 5;
  auto timed = std::chrono::steady_clock::now();
  for (int i = 0; i < k_repeats; ++i) api.cudnnBackendExecute(handle, graph.plan(), pack);
  s.api().cuCtxSynchronize();
  double per_run = since(timed) / k_repeats;
  double flops = 2.0 * static_cast<double>(shape->batch * shape->heads * shape->seq_q * shape->seq_kv) *
                 static_cast<double>(shape->dim_qk + shape->dim_v) * (shape->causal ? 0.5 : 1.0);
  info["execute_ms"] = per_run * 1e3;
  info["tflops"] = per_run > 0 ? flops / per_run / 1e12 : 0.0;

  std::vector<std::uint16_t> o(static_cast<std::size_t>(layout->buffer_elements.back()));
  error = s.check(s.api().cuMemcpyDtoH_v2(o.data(), device.back()->get(), o.size() * 2), "cuMemcpyDtoH");
  if (!error.empty()) return with_info(failed_result(error, "execute"));
  Comparison cmp = compare_output(*shape, *layout, inputs, o);
  info["max_abs_err"] = cmp.max_abs_err;
  info["max_rel_err"] = cmp.max_rel_err;
  info["tolerance"] = cmp.atol;
  if (!cmp.ok)
    return with_info(failed_result("cuDNN's output differs from the fp32 reference beyond atol=rtol=" + std::to_string(cmp.atol) +
                                       " (worst: " + cmp.worst + ")",
                                   "numerics"));
  bool backward = args.contains("backward") && args["backward"].is_boolean() && args["backward"].get<bool>();
  if (!backward) return with_info(ok_result());

  // Backward: the forward's O and statistics, a reproducible dO, the gradients against the host.
  // The forward's own result goes along whole, so that one child answers for both checks.
  info["forward"] = with_info(ok_result());
  info["forward_max_abs_err"] = cmp.max_abs_err;
  info["forward_execute_ms"] = info["execute_ms"];
  for (const char* forward_only : {"max_abs_err", "max_rel_err", "execute_ms", "tflops", "first_execute_seconds"}) info.erase(forward_only);
  SdpaGradLayout grads_layout = make_grad_layout(*shape, *layout);
  SdpaGraph bwd(*cudnn);
  if (auto built = bwd.build_backward_operations(*shape, *layout, grads_layout); !built)
    return with_info(failed_result(built.error().message, "graph"));
  info["operations"] = bwd.operation_count();
  auto bwd_plan_start = std::chrono::steady_clock::now();
  auto bwd_workspace_size = bwd.build_plan(handle);
  info["plan_seconds"] = since(bwd_plan_start);
  info["engine_configs_tried"] = bwd.engine_configs_tried();
  if (!bwd_workspace_size) return with_info(failed_result(bwd_workspace_size.error().message, "plan"));

  std::vector<std::vector<std::uint16_t>> grads;
  std::vector<std::unique_ptr<DeviceBuffer>> grad_device;
  std::uint64_t state = 0x2545f4914f6cdd1dull;
  for (std::size_t i = 0; i < grads_layout.buffer_elements.size(); ++i) {
    grads.emplace_back(static_cast<std::size_t>(grads_layout.buffer_elements[i]), std::uint16_t{0});
    if (i == 0) {
      for (auto& x : grads[0]) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        float value = static_cast<float>((state >> 40) & 0xffffffu) / 8388608.0f - 1.0f;
        x = shape->bf16 ? to_bfloat16(value) : to_half(value);
      }
    }
    grad_device.push_back(std::make_unique<DeviceBuffer>(s, grads[i].size() * 2, error));
    if (error.empty() && i == 0) error = s.check(s.api().cuMemcpyHtoD_v2(grad_device[0]->get(), grads[0].data(), grads[0].size() * 2), "cuMemcpyHtoD");
    if (!error.empty()) return with_info(failed_result(error, "execute"));
  }
  DeviceBuffer softmax_sum(s, static_cast<std::size_t>(shape->batch * shape->heads * shape->seq_q) * sizeof(float), error);
  DeviceBuffer dq_accum(s, static_cast<std::size_t>(shape->batch * shape->heads * shape->seq_q * shape->dim_qk) * sizeof(float), error);
  DeviceBuffer bwd_workspace(s, static_cast<std::size_t>(std::max<std::int64_t>(*bwd_workspace_size, 256)), error);
  if (!error.empty()) return with_info(failed_result(error, "execute"));
  // cuDNN accumulates dQ into the float buffer: it starts at zero.
  error = s.check(s.api().cuMemsetD32_v2(dq_accum.get(), 0, static_cast<std::size_t>(shape->batch * shape->heads * shape->seq_q * shape->dim_qk)), "cuMemsetD32");
  if (!error.empty()) return with_info(failed_result(error, "execute"));
  float one = 1.0f;
  std::vector<std::int64_t> bwd_uids = {k_uid_q, k_uid_k, k_uid_v, k_uid_o, k_uid_stats, k_uid_scale, k_uid_one,
                                        k_uid_do, k_uid_dq, k_uid_dk, k_uid_dv, k_uid_softmax_sum, k_uid_dq_accum};
  std::vector<void*> bwd_pointers = {at(layout->q), at(layout->k), at(layout->v), at(layout->o), stats.pointer(), &scale, &one,
                                     grad_device[0]->pointer(), grad_device[1]->pointer(), grad_device[2]->pointer(),
                                     grad_device[3]->pointer(), softmax_sum.pointer(), dq_accum.pointer()};
  if (shape->causal) {
    bwd_uids.push_back(k_uid_neg_inf);
    bwd_pointers.push_back(&neg_inf);
  }
  gpuapi::CudnnDescriptor bwd_pack = nullptr;
  if (auto rc = api.cudnnBackendCreateDescriptor(c::k_variant_pack_descriptor, &bwd_pack); rc != 0) return fail_pack(rc, "variant pack");
  PackGuard bwd_pack_guard{*cudnn, bwd_pack};
  void* bwd_workspace_pointer = bwd_workspace.pointer();
  if (auto rc = api.cudnnBackendSetAttribute(bwd_pack, c::k_attr_variant_pack_unique_ids, c::k_type_int64, static_cast<std::int64_t>(bwd_uids.size()), bwd_uids.data()); rc != 0)
    return fail_pack(rc, "variant pack ids");
  if (auto rc = api.cudnnBackendSetAttribute(bwd_pack, c::k_attr_variant_pack_data_pointers, c::k_type_void_ptr, static_cast<std::int64_t>(bwd_pointers.size()), bwd_pointers.data()); rc != 0)
    return fail_pack(rc, "variant pack pointers");
  if (auto rc = api.cudnnBackendSetAttribute(bwd_pack, c::k_attr_variant_pack_workspace, c::k_type_void_ptr, 1, &bwd_workspace_pointer); rc != 0)
    return fail_pack(rc, "variant pack workspace");
  if (auto rc = api.cudnnBackendFinalize(bwd_pack); rc != 0) return fail_pack(rc, "variant pack");
  auto bwd_start = std::chrono::steady_clock::now();
  if (auto rc = api.cudnnBackendExecute(handle, bwd.plan(), bwd_pack); rc != 0) return fail_pack(rc, "cudnnBackendExecute (backward)");
  if (error = s.check(s.api().cuCtxSynchronize(), "cuCtxSynchronize after the backward"); !error.empty())
    return with_info(failed_result(error, "execute"));
  info["first_execute_seconds"] = since(bwd_start);
  for (std::size_t i = 1; i < grads.size(); ++i) {
    error = s.check(s.api().cuMemcpyDtoH_v2(grads[i].data(), grad_device[i]->get(), grads[i].size() * 2), "cuMemcpyDtoH");
    if (!error.empty()) return with_info(failed_result(error, "execute"));
  }
  // The timing runs after the results are read: the first run pays for loading the kernels, and
  // each run adds into dQ's accumulator, so only the first run's gradients are the answer.
  auto bwd_timed = std::chrono::steady_clock::now();
  for (int i = 0; i < k_repeats; ++i) api.cudnnBackendExecute(handle, bwd.plan(), bwd_pack);
  s.api().cuCtxSynchronize();
  double bwd_per_run = since(bwd_timed) / k_repeats;
  info["execute_ms"] = bwd_per_run * 1e3;
  info["tflops"] = bwd_per_run > 0 ? 2.5 * flops / bwd_per_run / 1e12 : 0.0;
  GradComparison gc = compare_gradients(*shape, *layout, inputs, grads_layout.d_o, grads_layout.dq, grads_layout.dk, grads_layout.dv, grads);
  info["max_abs_err"] = gc.max_abs_err;
  info["max_rel_err"] = gc.max_rel_err;
  info["tolerance"] = gc.tolerance;
  if (!gc.ok)
    return with_info(failed_result("cuDNN's gradients differ from the fp32 reference: relative error " + std::to_string(gc.max_rel_err) +
                                       " > " + std::to_string(gc.tolerance) + " (worst: " + gc.worst + ")",
                                   "numerics"));
  return with_info(ok_result());
}

Json check_cudnn_sdpa_bwd(const Json& args) {
  Json with = args;
  with["backward"] = true;
  return check_cudnn_sdpa(with);
}

} // namespace selftest
