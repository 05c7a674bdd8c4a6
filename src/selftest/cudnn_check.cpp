// The cudnn_sdpa and cudnn_sdpa_bwd checks: with the cuDNN copy TE would load, build the SDPA
// forward (and backward) graphs at the workload's shape (sdpa_graph.hpp), build their execution
// plans, execute them on GPU 0 and compare the whole output and all gradients with an fp32
// reference computed on the GPU from the same inputs (reference.hpp). Stages in a failed result:
// load, init, graph, plan, execute, numerics. Phases (phases.hpp) as it goes. Before each plan is
// built, cuDNN's own support answer for the graph (SdpaGraph::check_support: what TE 2.20 asks
// cuDNN instead of its version tables) goes into the result as "support"; plan.cpp reports it as
// the cudnn_support check, held against the plan build.
//
// What runs at once, because a cold start is what a Slurm prolog pays: cuInit and the primary
// context on one thread while cuDNN and NVRTC load on another; the reference kernels compile
// while cuDNN builds its plans; the backward's plan builds (own handle, own thread) while the
// forward's plan builds, executes and is checked. The forward's result is streamed as a part
// before the backward runs, so a backward that hangs or crashes still leaves the forward's answer.
//
// What was compiled is kept (kernel_cache.hpp, args "kernel_cache": the directory): each plan and
// the reference kernels are loaded from there when an earlier run compiled them for exactly these
// inputs, and compiled (and kept) otherwise; the result says which ("plan_cache",
// "reference_cache"). The kernels still run and are still compared, whatever their origin.
#include "selftest/checks.hpp"
#include "selftest/cuda_session.hpp"
#include "selftest/reference.hpp"
#include "selftest/sdpa_graph.hpp"

#include <chrono>
#include <future>
#include <limits>
#include <optional>

namespace selftest {

namespace {

// TE's test tolerances: elementwise for the output, on max |diff| / max |reference| for each gradient.
double forward_tolerance(const SdpaShape& s) { return s.bf16 ? 2.5e-2 : 5e-3; }
double gradient_tolerance(const SdpaShape& s) { return s.bf16 ? 5e-2 : 1e-2; }

// The host reference (sdpa.hpp, sampled heads) stands in for the GPU's only for shapes this small.
bool host_reference_affordable(const SdpaShape& s) { return s.seq_q * s.seq_kv <= (std::int64_t{1} << 22); }

constexpr int k_repeats = 5;

class Handle {
public:
  explicit Handle(const gpuapi::Cudnn& cudnn) : m_cudnn(cudnn) {}
  ~Handle() {
    if (m_handle) m_cudnn.api().cudnnDestroy(m_handle);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  std::string create() {
    auto rc = m_cudnn.api().cudnnCreate(&m_handle);
    return rc == 0 ? std::string() : "cudnnCreate: " + m_cudnn.describe(rc);
  }
  gpuapi::CudnnHandle get() const { return m_handle; }

private:
  const gpuapi::Cudnn& m_cudnn;
  gpuapi::CudnnHandle m_handle = nullptr;
};

// A finalized variant pack: which device pointer (or by-value scalar) each uid of the graph reads.
class VariantPack {
public:
  explicit VariantPack(const gpuapi::Cudnn& cudnn) : m_cudnn(cudnn) {}
  ~VariantPack() {
    if (m_pack) m_cudnn.api().cudnnBackendDestroyDescriptor(m_pack);
  }
  VariantPack(const VariantPack&) = delete;
  VariantPack& operator=(const VariantPack&) = delete;
  std::string make(const std::vector<std::int64_t>& uids, const std::vector<void*>& pointers, void* workspace) {
    namespace c = gpuapi::cudnn;
    const auto& api = m_cudnn.api();
    auto fail = [&](int rc, const char* what) { return std::string(what) + ": " + m_cudnn.describe(rc); };
    if (auto rc = api.cudnnBackendCreateDescriptor(c::k_variant_pack_descriptor, &m_pack); rc != 0) return fail(rc, "variant pack");
    if (auto rc = api.cudnnBackendSetAttribute(m_pack, c::k_attr_variant_pack_unique_ids, c::k_type_int64, static_cast<std::int64_t>(uids.size()), uids.data()); rc != 0)
      return fail(rc, "variant pack ids");
    if (auto rc = api.cudnnBackendSetAttribute(m_pack, c::k_attr_variant_pack_data_pointers, c::k_type_void_ptr, static_cast<std::int64_t>(pointers.size()), pointers.data()); rc != 0)
      return fail(rc, "variant pack pointers");
    if (auto rc = api.cudnnBackendSetAttribute(m_pack, c::k_attr_variant_pack_workspace, c::k_type_void_ptr, 1, &workspace); rc != 0)
      return fail(rc, "variant pack workspace");
    if (auto rc = api.cudnnBackendFinalize(m_pack); rc != 0) return fail(rc, "variant pack");
    return {};
  }
  gpuapi::CudnnDescriptor get() const { return m_pack; }

private:
  const gpuapi::Cudnn& m_cudnn;
  gpuapi::CudnnDescriptor m_pack = nullptr;
};

Json support_json(const util::Result<SupportAnswer>& answer) {
  if (!answer) return Json{{"error", answer.error().message}};
  Json out{{"supported", answer->supported}, {"configs", answer->configs}};
  if (!answer->reason.empty()) out["reason"] = answer->reason;
  return out;
}

// Where a plan or the reference's CUBIN came from, for the result.
Json kept_json(const KeptArtifact& kept) {
  Json out{{"source", kept.source == KeptArtifact::Source::loaded ? "loaded" : "compiled"}, {"seconds", kept.seconds}};
  if (kept.source == KeptArtifact::Source::compiled) {
    out["why_compiled"] = kept.why_compiled;
    out["stored"] = kept.stored;
    if (!kept.store_error.empty()) out["store_error"] = kept.store_error;
  }
  return out;
}

Json engine_json(const SdpaGraph& graph) {
  Json candidates = Json::array();
  for (const auto& e : graph.candidates()) candidates.push_back(Json{{"index", e.index}, {"runtime_compiled", e.runtime_compiled}});
  return Json{{"index", graph.engine().index}, {"runtime_compiled", graph.engine().runtime_compiled},
              {"heuristics", graph.heuristics_mode()}, {"candidates", candidates}};
}

// The backward's plan, built on its own thread with its own handle while the forward runs.
struct BackwardPlan {
  std::unique_ptr<Handle> handle;
  Json support; // cuDNN's support answer for the backward graph, asked before the plan
  Json kept;    // where the plan came from (kept_json), when it was made
  util::Result<std::int64_t> workspace = util::make_error(util::ErrorKind::invalid, "not built");
  double seconds = 0;
};

class SdpaCheck {
public:
  SdpaCheck(const Json& args, Progress& progress) : m_args(args), m_progress(progress) {}
  Json run();

private:
  Json done(Json result) {
    for (auto& [key, value] : m_info.items()) result[key] = value;
    result["phase_seconds"] = m_progress.seconds();
    result["seconds"] = seconds_since(m_start);
    return result;
  }
  Json failed(const std::string& error, const char* stage) { return done(failed_result(error, stage)); }
  std::string alloc(std::unique_ptr<DeviceBuffer>& buffer, std::int64_t bytes);
  std::string copy_up(const DeviceBuffer& buffer, const std::vector<std::uint16_t>& data);
  void prepare_reference();
  void compile_reference_for(int sm);
  // What a plan depends on beyond its graph and engine configuration (PlanKeeping::key).
  CacheKey plan_key() const;
  const char* reference_kernel_name() const { return m_reference_kernel == ReferenceKernel::tiled ? "tiled" : "simple"; }
  Json forward_and_backward();
  // The backward's plan, built on its own thread (own cuDNN handle) while the forward runs.
  std::future<BackwardPlan> plan_backward(SdpaGraph& bwd);
  // The forward pass: plan, buffers, inputs, execution, numerics; a result when it stops there.
  std::optional<Json> forward(SdpaGraph& fwd, Handle& handle);
  std::optional<Json> forward_numerics();
  // The backward pass on the forward's tensors: buffers, execution, numerics; the final result.
  Json backward(SdpaGraph& bwd, const SdpaGradLayout& grads, BackwardPlan plan);
  Json backward_numerics(const SdpaGradLayout& grads, const std::vector<std::unique_ptr<DeviceBuffer>>& grad);
  // Where a tensor of the forward's layout starts on the device.
  void* tensor(const TensorView& v) const;
  static DeviceView view(const std::vector<std::unique_ptr<DeviceBuffer>>& buffers, const TensorView& v) {
    return DeviceView{buffers[static_cast<std::size_t>(v.buffer)]->get(), v};
  }

  const Json& m_args;
  Progress& m_progress;
  std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
  bool m_backward = false;
  Json m_info = Json::object();
  SdpaShape m_shape;
  std::optional<SdpaLayout> m_layout;
  std::optional<gpuapi::Cudnn> m_cudnn;
  std::optional<gpuapi::Nvrtc> m_nvrtc;
  std::unique_ptr<CudaSession> m_session;
  std::int64_t m_free = 0;
  KernelCache m_cache = KernelCache::off("no cache directory was given");
  PlanKeeping m_keeping; // the plans' cache (m_cache, or off when NVRTC's identity is unknown) and key
  KernelCache m_plans_off = KernelCache::off("");
  std::future<util::Result<ReferenceCubin>> m_compiled; // the reference kernels, compiling (or loading) on their own thread
  int m_compiled_sm = 0;
  ReferenceKernel m_reference_kernel = ReferenceKernel::tiled;
  std::unique_ptr<DeviceReference> m_reference;
  std::string m_reference_error; // why the GPU reference is not there
  // The forward's tensors and scalars, which the backward reads too (declared last: freed before
  // the session's context goes).
  std::vector<std::unique_ptr<DeviceBuffer>> m_device; // one buffer per layout.buffer_elements
  std::unique_ptr<DeviceBuffer> m_stats;
  std::unique_ptr<DeviceBuffer> m_workspace;
  float m_scale = 0;
  MaskScalars m_scalars;
  double m_flops = 0; // of one forward
};

std::string SdpaCheck::alloc(std::unique_ptr<DeviceBuffer>& buffer, std::int64_t bytes) {
  std::string error;
  buffer = std::make_unique<DeviceBuffer>(*m_session, static_cast<std::size_t>(std::max<std::int64_t>(bytes, 256)), error);
  return error;
}

std::string SdpaCheck::copy_up(const DeviceBuffer& buffer, const std::vector<std::uint16_t>& data) {
  return m_session->check(m_session->api().cuMemcpyHtoD_v2(buffer.get(), data.data(), data.size() * 2), "cuMemcpyHtoD");
}

void SdpaCheck::compile_reference_for(int sm) {
  if (m_compiled.valid()) m_compiled.wait();
  m_compiled_sm = sm;
  m_compiled = std::async(std::launch::async, [this, sm] {
    auto compiling = m_progress.phase(phase::reference, "compile");
    return cached_reference(m_cache, *m_nvrtc, sm, m_reference_kernel);
  });
}

CacheKey SdpaCheck::plan_key() const {
  const auto& api = m_cudnn->api();
  const Gpu& gpu = m_session->gpus().front();
  PlanKeyInputs in;
  in.shape = m_shape.label();
  // cuDNN 9's shim loads its sub-libraries by SONAME: every libcudnn* beside the one loaded.
  in.cudnn_files = libraries_identity({m_cudnn->path()}, {"libcudnn"});
  in.cudnn_version = api.cudnnGetVersion ? api.cudnnGetVersion() : 0;
  in.cudart_version = api.cudnnGetCudartVersion ? api.cudnnGetCudartVersion() : 0;
  in.nvrtc = nvrtc_identity(*m_nvrtc); // the compiler of cuDNN's runtime-compiled engines, loaded first
  in.driver_version = m_session->driver_version();
  in.driver_files = libraries_identity({m_session->driver().path()});
  in.gpu_name = gpu.name;
  in.sm = gpu.sm;
  in.gpu_uuid = gpu.uuid;
  return selftest::plan_key(in);
}

// The reference kernels, compiled on the background thread, loaded into the context; when they
// cannot be, the reason is kept (the check then compares on the host, or not at all).
void SdpaCheck::prepare_reference() {
  if (!m_compiled.valid()) return;
  auto cubin = m_compiled.get();
  if (!cubin) {
    m_reference_error = "compiling the reference kernels: " + cubin.error().message;
    return;
  }
  auto loading = m_progress.phase(phase::reference, "load");
  auto ref = DeviceReference::load(*m_session, cubin->cubin, m_reference_kernel);
  if (!ref && cubin->kept.source == KeptArtifact::Source::loaded) {
    // The cache's CUBIN that the driver refuses is the cache's failure: compiled again, kept.
    KernelCache again = KernelCache::open(m_cache.directory());
    again.skip_loads("the driver refused the cached CUBIN: " + ref.error().message);
    cubin = cached_reference(again, *m_nvrtc, m_compiled_sm, m_reference_kernel);
    if (!cubin) {
      m_reference_error = "compiling the reference kernels: " + cubin.error().message;
      return;
    }
    ref = DeviceReference::load(*m_session, cubin->cubin, m_reference_kernel);
  }
  m_info["reference_cache"] = kept_json(cubin->kept);
  if (!ref) {
    m_reference_error = ref.error().message;
    return;
  }
  m_reference = std::move(*ref);
}

Json SdpaCheck::run() {
  m_backward = m_args.contains("backward") && m_args["backward"].is_boolean() && m_args["backward"].get<bool>();
  auto shape = parse_shape(m_args);
  if (!shape) return skipped_result(shape.error().message);
  m_shape = *shape;
  if (auto layout = make_layout(m_shape); !layout) return skipped_result(layout.error().message);
  m_reference_kernel = reference_kernel_for(m_shape);
  if (m_args.contains("kernel_cache") && m_args["kernel_cache"].is_string())
    m_cache = KernelCache::open(m_args["kernel_cache"].get<std::string>());
  else m_cache = KernelCache::off("not asked for (--no-cache, or no usable cache directory)");
  if (m_args.contains("kernel_cache_refresh") && m_args["kernel_cache_refresh"].is_string())
    m_cache.skip_loads(m_args["kernel_cache_refresh"].get<std::string>());

  // cuInit and the contexts on their own thread while the libraries load here.
  auto session = std::async(std::launch::async, [this] { return CudaSession::open(&m_progress); });
  std::vector<std::string> cudnn_candidates, nvrtc_candidates;
  if (m_args.contains("path") && m_args["path"].is_string()) cudnn_candidates.push_back(m_args["path"].get<std::string>());
  for (const auto& name : gpuapi::k_cudnn_sonames) cudnn_candidates.push_back(name);
  // cuDNN's runtime-compiled engines dlopen libnvrtc by SONAME: the copy TE would use is loaded
  // first so that it is the one they get (TE itself preloads it when imported); the reference
  // kernels compile with it too.
  if (m_args.contains("nvrtc_path") && m_args["nvrtc_path"].is_string()) nvrtc_candidates.push_back(m_args["nvrtc_path"].get<std::string>());
  for (const auto& name : gpuapi::k_nvrtc_sonames) nvrtc_candidates.push_back(name);
  util::Result<gpuapi::Cudnn> cudnn = util::make_error(util::ErrorKind::invalid, "");
  {
    auto loading = m_progress.phase(phase::load, "NVRTC");
    if (auto nvrtc = gpuapi::Nvrtc::load(nvrtc_candidates)) m_nvrtc = std::move(*nvrtc);
    else m_reference_error = "loading NVRTC: " + nvrtc.error().message;
    loading.end();
    // With the GPU's architecture known from the probe ("sm"), the reference kernels compile
    // from the start, beside cuInit and the context, and out of the way of cuDNN's own runtime
    // compilation (its plans), which they would otherwise compete with.
    if (m_nvrtc && m_args.contains("sm") && m_args["sm"].is_number_integer() && m_args["sm"].get<int>() > 0)
      compile_reference_for(m_args["sm"].get<int>());
    auto loading_cudnn = m_progress.phase(phase::load, "cuDNN");
    cudnn = gpuapi::Cudnn::load(cudnn_candidates);
  }
  auto opened = session.get();
  if (!cudnn) {
    // No GPU and no cuDNN: nothing on this machine would run the graph (a login node, a CPU-only
    // venv); the job's node is where it matters. With a GPU, a missing cuDNN fails the check.
    if (!opened && opened.error().kind == util::ErrorKind::not_installed && cudnn.error().kind == util::ErrorKind::not_installed)
      return done(skipped_result(cudnn.error().message + " (and " + opened.error().message + ")"));
    return failed(cudnn.error().message, "load");
  }
  m_cudnn = std::move(*cudnn);
  m_info["path"] = m_cudnn->path();
  if (m_nvrtc) m_info["nvrtc_path"] = m_nvrtc->path();
  if (m_cudnn->api().cudnnGetVersion) m_info["version"] = m_cudnn->api().cudnnGetVersion();
  m_info["label"] = m_shape.label();

  if (!opened) {
    if (opened.error().kind != util::ErrorKind::not_installed) return failed(opened.error().message, "init");
    // No GPU: the graphs' operations are still built, which needs only cuDNN.
    auto layout = make_layout(m_shape);
    SdpaGraph graph(*m_cudnn);
    if (auto built = graph.build_operations(m_shape, *layout); !built) return failed(built.error().message, "graph");
    m_info["operations"] = graph.operation_count();
    if (m_backward) {
      SdpaGraph bwd(*m_cudnn);
      if (auto built = bwd.build_backward_operations(m_shape, *layout, make_grad_layout(m_shape, *layout)); !built)
        return failed(built.error().message, "graph");
      m_info["backward_operations"] = bwd.operation_count();
    }
    return done(skipped_result(opened.error().message + " (the graph's operations were built; plan and execution need one)"));
  }
  m_session = std::move(*opened);
  const Gpu& gpu = m_session->gpus().front();
  std::string error;
  if (!m_session->make_current(gpu, error)) return failed(error, "init");
  m_info["gpu"] = gpu.name;
  m_info["sm"] = gpu.sm;
  if (m_nvrtc && m_compiled_sm != gpu.sm) compile_reference_for(gpu.sm); // else it compiles already

  // The workload's whole shape when it fits in the GPU's free memory, else a smaller one, said so.
  auto memory = m_session->memory_info();
  if (!memory) return failed(memory.error().message, "init");
  m_free = static_cast<std::int64_t>(memory->first);
  FittedShape fit = fit_to_memory(m_shape, m_free);
  m_info["gpu_free_mib"] = m_free >> 20;
  m_info["memory_mib"] = (fit.need.total()) >> 20;
  if (!fit.fits) return done(skipped_result("the workload " + fit.note));
  if (fit.scaled) {
    m_info["workload_label"] = m_shape.label();
    m_info["scaled"] = fit.note;
    m_shape = fit.shape;
    m_info["label"] = m_shape.label();
  }
  m_layout = *make_layout(m_shape);
  // Without NVRTC loaded here the compiler of cuDNN's runtime-compiled engines is unknown: its
  // plans are then compiled every time.
  if (m_nvrtc) {
    m_keeping = PlanKeeping{&m_cache, plan_key()};
  } else {
    m_plans_off = KernelCache::off("NVRTC was not loaded by the doctor, so cuDNN's compiler is unknown");
    m_keeping = PlanKeeping{&m_plans_off, {}};
  }
  return forward_and_backward();
}

// The two graphs, the backward's plan beside the forward, then each pass in turn.
Json SdpaCheck::forward_and_backward() {
  SdpaGraph fwd(*m_cudnn), bwd(*m_cudnn);
  SdpaGradLayout grads = make_grad_layout(m_shape, *m_layout);
  std::optional<std::string> backward_graph_error;
  {
    auto building = m_progress.phase(phase::graph, "forward");
    if (auto built = fwd.build_operations(m_shape, *m_layout); !built) return failed(built.error().message, "graph");
    m_info["operations"] = fwd.operation_count();
  }
  if (m_backward) {
    auto building = m_progress.phase(phase::graph, "backward");
    if (auto built = bwd.build_backward_operations(m_shape, *m_layout, grads); !built) backward_graph_error = built.error().message;
  }

  // The backward's plan on its own thread: handles are per thread, the context is the process's.
  std::future<BackwardPlan> backward_plan;
  if (m_backward && !backward_graph_error) backward_plan = plan_backward(bwd);
  // Whatever happens to the forward, the backward's thread is joined before its graph goes.
  struct Join {
    std::future<BackwardPlan>& f;
    ~Join() {
      if (f.valid()) f.wait();
    }
  } join{backward_plan};

  Handle handle(*m_cudnn);
  if (auto stop = forward(fwd, handle)) return *stop;
  if (!m_backward) return done(ok_result());

  // The forward's answer is complete: streamed now, and kept whole in the final result.
  Json forward_result = done(ok_result());
  m_progress.part("forward", forward_result);
  m_info = Json{{"forward", forward_result}};
  for (const char* key : {"path", "nvrtc_path", "version", "label", "gpu", "sm", "workload_label", "scaled", "gpu_free_mib", "memory_mib"})
    if (forward_result.contains(key)) m_info[key] = forward_result[key];
  m_info["forward_max_abs_err"] = forward_result.value("max_abs_err", 0.0);
  m_info["forward_execute_ms"] = forward_result["execute_ms"];

  if (backward_graph_error) return failed(*backward_graph_error, "graph");
  return backward(bwd, grads, backward_plan.get());
}

std::future<BackwardPlan> SdpaCheck::plan_backward(SdpaGraph& bwd) {
  return std::async(std::launch::async, [this, &bwd] {
    BackwardPlan plan;
    std::string e;
    if (!m_session->make_current(m_session->gpus().front(), e)) {
      plan.workspace = util::make_error(util::ErrorKind::driver_error, e);
      return plan;
    }
    plan.handle = std::make_unique<Handle>(*m_cudnn);
    if (e = plan.handle->create(); !e.empty()) {
      plan.workspace = util::make_error(util::ErrorKind::driver_error, e);
      return plan;
    }
    auto planning = m_progress.phase(phase::plan, "backward");
    plan.support = support_json(bwd.check_support(plan.handle->get()));
    auto start = std::chrono::steady_clock::now();
    plan.workspace = bwd.build_plan(plan.handle->get(), &m_keeping);
    plan.seconds = seconds_since(start);
    if (bwd.plan_kept()) plan.kept = kept_json(*bwd.plan_kept());
    return plan;
  });
}

void* SdpaCheck::tensor(const TensorView& v) const {
  return static_cast<void*>(static_cast<char*>(m_device[static_cast<std::size_t>(v.buffer)]->pointer()) + v.offset * 2);
}

std::optional<Json> SdpaCheck::forward(SdpaGraph& fwd, Handle& handle) {
  const SdpaShape& s = m_shape;
  const SdpaLayout& layout = *m_layout;
  const auto& api = m_cudnn->api();
  const auto& cu = m_session->api();
  std::string error;
  {
    auto creating = m_progress.phase(phase::init, "cuDNN handle");
    if (error = handle.create(); !error.empty()) return failed(error, "init");
  }
  std::int64_t fwd_workspace = 0;
  {
    auto planning = m_progress.phase(phase::plan, "forward");
    m_info["support"] = support_json(fwd.check_support(handle.get()));
    auto start = std::chrono::steady_clock::now();
    auto built = fwd.build_plan(handle.get(), &m_keeping);
    m_info["plan_seconds"] = seconds_since(start);
    m_info["engine_configs_tried"] = fwd.engine_configs_tried();
    if (!built) return failed(built.error().message, "plan");
    fwd_workspace = *built;
    m_info["engine"] = engine_json(fwd);
    const bool loaded = fwd.plan_kept() && fwd.plan_kept()->source == KeptArtifact::Source::loaded;
    if (fwd.plan_kept()) m_info["plan_cache"] = kept_json(*fwd.plan_kept());
    // Building the plan of a runtime-compiled engine is its compilation: what a job pays on its
    // first step. A plan loaded from the kernel cache was compiled by an earlier run: no time to say.
    if (fwd.engine().runtime_compiled && !loaded) m_info["runtime_compilation_seconds"] = m_info["plan_seconds"];
  }

  // Buffers; the inputs are filled on the GPU by the reference's kernel, else from the host.
  m_device.resize(layout.buffer_elements.size());
  {
    auto allocating = m_progress.phase(phase::init, "allocate");
    for (std::size_t i = 0; i < m_device.size() && error.empty(); ++i) error = alloc(m_device[i], layout.buffer_elements[i] * 2);
    if (error.empty()) error = alloc(m_stats, s.batch * s.heads * s.seq_q * 4);
    if (error.empty()) error = alloc(m_workspace, fwd_workspace);
    if (!error.empty()) return failed(error, "init");
  }
  prepare_reference();
  {
    auto filling = m_progress.phase(phase::init, "inputs");
    auto host_inputs = m_reference ? std::vector<std::vector<std::uint16_t>>() : make_inputs(s, layout);
    for (std::size_t i = 0; i + 1 < m_device.size(); ++i) {
      if (m_reference) {
        if (auto filled = m_reference->fill(m_device[i]->get(), layout.buffer_elements[i], k_seed_inputs + i, s.bf16); !filled)
          return failed(filled.error().message, "init");
      } else if (error = copy_up(*m_device[i], host_inputs[i]); !error.empty()) {
        return failed(error, "init");
      }
    }
  }

  m_scale = s.scale();
  // The masked score: -inf, except that cuDNN before 9.10 wants the lowest finite float there
  // (cudnn-frontend's attn_score_modifiers.h, get_negative_inf_value).
  std::size_t version = api.cudnnGetVersion ? api.cudnnGetVersion() : 0;
  m_scalars.neg_inf = version < 91000 ? std::numeric_limits<float>::lowest() : -std::numeric_limits<float>::infinity();
  m_scalars.left_bound = static_cast<float>(s.window_left + 1);
  m_scalars.right_shift = static_cast<std::int32_t>(std::max<std::int64_t>(s.window_right, 0));
  std::vector<std::int64_t> uids = {k_uid_q, k_uid_k, k_uid_v, k_uid_o, k_uid_stats, k_uid_scale};
  std::vector<void*> pointers = {tensor(layout.q), tensor(layout.k), tensor(layout.v), tensor(layout.o), m_stats->pointer(), &m_scale};
  fwd.bind_scalars(m_scalars, uids, pointers);
  VariantPack pack(*m_cudnn);
  if (error = pack.make(uids, pointers, m_workspace->pointer()); !error.empty()) return failed(error, "execute");

  m_flops = cudnn_forward_flops(s);
  {
    auto executing = m_progress.phase(phase::execute, "forward");
    auto start = std::chrono::steady_clock::now();
    if (auto rc = api.cudnnBackendExecute(handle.get(), fwd.plan(), pack.get()); rc != 0)
      return failed("cudnnBackendExecute: " + m_cudnn->describe(rc), "execute");
    if (error = m_session->check(cu.cuCtxSynchronize(), "cuCtxSynchronize after cudnnBackendExecute"); !error.empty()) return failed(error, "execute");
    m_info["first_execute_seconds"] = seconds_since(start);
    auto timed = std::chrono::steady_clock::now();
    for (int i = 0; i < k_repeats; ++i) api.cudnnBackendExecute(handle.get(), fwd.plan(), pack.get());
    if (error = m_session->check(cu.cuCtxSynchronize(), "cuCtxSynchronize after cudnnBackendExecute"); !error.empty()) return failed(error, "execute");
    double per_run = seconds_since(timed) / k_repeats;
    m_info["execute_ms"] = per_run * 1e3;
    m_info["tflops"] = per_run > 0 ? m_flops / per_run / 1e12 : 0.0;
    m_info["kernel_seconds"] = seconds_since(start);
  }

  return forward_numerics();
}

// The forward's numerics: the whole O against the GPU's reference, else sampled heads on the
// host, else said not checked.
std::optional<Json> SdpaCheck::forward_numerics() {
  const SdpaShape& s = m_shape;
  const SdpaLayout& layout = *m_layout;
  const auto& cu = m_session->api();
  std::string error;
  const double atol = forward_tolerance(s);
  m_info["tolerance"] = atol;
  std::string numerics_error;
  if (m_reference) {
    auto referencing = m_progress.phase(phase::reference, "forward");
    auto start = std::chrono::steady_clock::now();
    auto ran =
        m_reference->forward(s, view(m_device, layout.q), view(m_device, layout.k), view(m_device, layout.v), scratch_budget(m_free));
    if (!ran) {
      // A failure of the doctor's own kernels says nothing about cuDNN.
      m_reference_error = ran.error().message;
      m_reference.reset();
    }
    m_info["reference_seconds"] = seconds_since(start);
  }
  if (m_reference) {
    auto comparing = m_progress.phase(phase::compare, "forward");
    auto o = m_reference->compare("O", view(m_device, layout.o), atol, atol);
    if (!o) return failed(o.error().message, "numerics");
    m_info["max_abs_err"] = o->max_abs_err;
    m_info["max_rel_err"] = o->max_rel_err;
    m_info["elements_beyond_tolerance"] = o->violations;
    m_info["nonfinite"] = o->nonfinite;
    m_info["reference"] = Json{{"where", "gpu"}, {"compared", "whole tensors"}, {"kernel", reference_kernel_name()},
                               {"heads_per_chunk", m_reference->chunks().heads}, {"rows_per_chunk", m_reference->chunks().rows}};
    if (o->violations > 0 || o->nonfinite > 0)
      numerics_error = "cuDNN's output differs from the fp32 reference beyond atol=rtol=" + std::to_string(atol) + " at " +
                       std::to_string(o->violations) + " elements" + (o->nonfinite ? " (" + std::to_string(o->nonfinite) + " not finite)" : "") +
                       " (worst: " + o->worst + ")";
  } else if (host_reference_affordable(s)) {
    auto comparing = m_progress.phase(phase::compare, "forward");
    std::vector<std::uint16_t> o(static_cast<std::size_t>(layout.buffer_elements.back()));
    if (error = m_session->check(cu.cuMemcpyDtoH_v2(o.data(), m_device.back()->get(), o.size() * 2), "cuMemcpyDtoH"); !error.empty())
      return failed(error, "execute");
    Comparison cmp = compare_output(s, layout, make_inputs(s, layout), o);
    m_info["max_abs_err"] = cmp.max_abs_err;
    m_info["max_rel_err"] = cmp.max_rel_err;
    m_info["reference"] = Json{{"where", "host"}, {"compared", "sampled heads"}, {"why", m_reference_error}};
    if (!cmp.ok)
      numerics_error = "cuDNN's output differs from the fp32 reference beyond atol=rtol=" + std::to_string(cmp.atol) + " (worst: " + cmp.worst + ")";
  } else {
    m_info["reference"] = Json{{"where", "none"}, {"why", m_reference_error}};
    m_info["note"] = "numerics not checked: " + m_reference_error;
  }
  if (!numerics_error.empty()) return failed(numerics_error, "numerics");
  return std::nullopt;
}

Json SdpaCheck::backward(SdpaGraph& bwd, const SdpaGradLayout& grads, BackwardPlan plan) {
  const SdpaShape& s = m_shape;
  const SdpaLayout& layout = *m_layout;
  const auto& api = m_cudnn->api();
  const auto& cu = m_session->api();
  std::string error;
  m_info["operations"] = bwd.operation_count();
  if (!plan.support.is_null()) m_info["support"] = plan.support;
  m_info["plan_seconds"] = plan.seconds;
  m_info["engine_configs_tried"] = bwd.engine_configs_tried();
  if (!plan.workspace) return failed(plan.workspace.error().message, "plan");
  m_info["engine"] = engine_json(bwd);
  if (!plan.kept.is_null()) m_info["plan_cache"] = plan.kept;
  if (bwd.engine().runtime_compiled && plan.kept.value("source", "") != "loaded") m_info["runtime_compilation_seconds"] = plan.seconds;

  std::vector<std::unique_ptr<DeviceBuffer>> grad(grads.buffer_elements.size());
  std::unique_ptr<DeviceBuffer> softmax_sum, dq_accum, bwd_workspace;
  const std::int64_t dq_elements = s.batch * s.heads * s.seq_q * s.dim_qk;
  {
    auto allocating = m_progress.phase(phase::init, "allocate");
    for (std::size_t i = 0; i < grad.size() && error.empty(); ++i) error = alloc(grad[i], grads.buffer_elements[i] * 2);
    if (error.empty()) error = alloc(softmax_sum, s.batch * s.heads * s.seq_q * 4);
    if (error.empty()) error = alloc(dq_accum, dq_elements * 4);
    if (error.empty()) error = alloc(bwd_workspace, *plan.workspace);
    if (!error.empty()) return failed(error, "init");
    if (m_reference) {
      if (auto filled = m_reference->fill(grad[0]->get(), grads.buffer_elements[0], k_seed_d_o, s.bf16); !filled)
        return failed(filled.error().message, "init");
    } else {
      std::vector<std::uint16_t> d_o(static_cast<std::size_t>(grads.buffer_elements[0]));
      for (std::size_t e = 0; e < d_o.size(); ++e) d_o[e] = s.bf16 ? to_bfloat16(input_value(k_seed_d_o, e)) : to_half(input_value(k_seed_d_o, e));
      if (error = copy_up(*grad[0], d_o); !error.empty()) return failed(error, "init");
    }
  }
  float one = 1.0f;
  std::vector<std::int64_t> bwd_uids = {k_uid_q, k_uid_k, k_uid_v, k_uid_o, k_uid_stats, k_uid_scale, k_uid_one,
                                        k_uid_do, k_uid_dq, k_uid_dk, k_uid_dv, k_uid_softmax_sum, k_uid_dq_accum};
  std::vector<void*> bwd_pointers = {
      tensor(layout.q),   tensor(layout.k),   tensor(layout.v),   tensor(layout.o),   m_stats->pointer(),     &m_scale,           &one,
      grad[0]->pointer(), grad[1]->pointer(), grad[2]->pointer(), grad[3]->pointer(), softmax_sum->pointer(), dq_accum->pointer()};
  bwd.bind_scalars(m_scalars, bwd_uids, bwd_pointers);
  VariantPack bwd_pack(*m_cudnn);
  if (error = bwd_pack.make(bwd_uids, bwd_pointers, bwd_workspace->pointer()); !error.empty()) return failed(error, "execute");
  {
    auto executing = m_progress.phase(phase::execute, "backward");
    // cuDNN accumulates dQ into the float buffer, which starts at zero for every run.
    auto run_once = [&]() -> std::string {
      if (auto e = m_session->check(cu.cuMemsetD32_v2(dq_accum->get(), 0, static_cast<std::size_t>(dq_elements)), "cuMemsetD32"); !e.empty()) return e;
      if (auto rc = api.cudnnBackendExecute(plan.handle->get(), bwd.plan(), bwd_pack.get()); rc != 0)
        return "cudnnBackendExecute (backward): " + m_cudnn->describe(rc);
      return {};
    };
    auto start = std::chrono::steady_clock::now();
    if (error = run_once(); error.empty()) error = m_session->check(cu.cuCtxSynchronize(), "cuCtxSynchronize after the backward");
    if (!error.empty()) return failed(error, "execute");
    m_info["first_execute_seconds"] = seconds_since(start);
    auto timed = std::chrono::steady_clock::now();
    for (int i = 0; i < k_repeats && error.empty(); ++i) error = run_once();
    if (error.empty()) error = m_session->check(cu.cuCtxSynchronize(), "cuCtxSynchronize after the backward");
    if (!error.empty()) return failed(error, "execute");
    double per_run = seconds_since(timed) / k_repeats;
    m_info["execute_ms"] = per_run * 1e3;
    m_info["tflops"] = per_run > 0 ? 2.5 * m_flops / per_run / 1e12 : 0.0;
    m_info["kernel_seconds"] = seconds_since(start);
  }

  return backward_numerics(grads, grad);
}

// The gradients' numerics: dQ, dK, dV against the GPU's reference, else sampled heads on the
// host, else said not checked.
Json SdpaCheck::backward_numerics(const SdpaGradLayout& grads, const std::vector<std::unique_ptr<DeviceBuffer>>& grad) {
  const SdpaShape& s = m_shape;
  const SdpaLayout& layout = *m_layout;
  const auto& cu = m_session->api();
  std::string error;
  const double tolerance = gradient_tolerance(s);
  m_info["tolerance"] = tolerance;
  if (m_reference) {
    auto referencing = m_progress.phase(phase::reference, "backward");
    auto start = std::chrono::steady_clock::now();
    if (auto ran = m_reference->backward(view(grad, grads.d_o)); !ran) {
      m_reference_error = ran.error().message;
      m_reference.reset();
    }
    m_info["reference_seconds"] = seconds_since(start);
  }
  if (m_reference) {
    auto comparing = m_progress.phase(phase::compare, "backward");
    Json per_gradient = Json::object();
    double max_abs = 0, max_rel = 0;
    std::string worst;
    std::int64_t nonfinite = 0;
    for (auto [name, v] : {std::pair{"dQ", &grads.dq}, {"dK", &grads.dk}, {"dV", &grads.dv}}) {
      auto e = m_reference->compare(name, view(grad, *v), tolerance, tolerance);
      if (!e) return failed(e.error().message, "numerics");
      per_gradient[name] = Json{{"max_abs_err", e->max_abs_err}, {"max_rel_err", e->max_rel_err}, {"max_ref", e->max_ref}, {"nonfinite", e->nonfinite}};
      nonfinite += e->nonfinite;
      if (e->max_rel_err >= max_rel) worst = std::string(name) + " " + e->worst;
      max_abs = std::max(max_abs, e->max_abs_err);
      max_rel = std::max(max_rel, e->max_rel_err);
    }
    m_info["gradients"] = per_gradient;
    m_info["max_abs_err"] = max_abs;
    m_info["max_rel_err"] = max_rel;
    m_info["reference"] = Json{{"where", "gpu"}, {"compared", "whole tensors"}, {"kernel", reference_kernel_name()},
                               {"heads_per_chunk", m_reference->chunks().heads}, {"rows_per_chunk", m_reference->chunks().rows},
                               {"launches", m_reference->launches()}};
    if (max_rel > tolerance || nonfinite > 0)
      return failed("cuDNN's gradients differ from the fp32 reference: relative error " + std::to_string(max_rel) + " > " +
                        std::to_string(tolerance) + (nonfinite ? " (" + std::to_string(nonfinite) + " values not finite)" : "") +
                        " (worst: " + worst + ")",
                    "numerics");
  } else if (host_reference_affordable(s)) {
    auto comparing = m_progress.phase(phase::compare, "backward");
    std::vector<std::vector<std::uint16_t>> back;
    for (std::size_t i = 0; i < grad.size(); ++i) {
      back.emplace_back(static_cast<std::size_t>(grads.buffer_elements[i]));
      if (error = m_session->check(cu.cuMemcpyDtoH_v2(back[i].data(), grad[i]->get(), back[i].size() * 2), "cuMemcpyDtoH"); !error.empty())
        return failed(error, "execute");
    }
    GradComparison gc = compare_gradients(s, layout, make_inputs(s, layout), grads.d_o, grads.dq, grads.dk, grads.dv, back);
    m_info["max_abs_err"] = gc.max_abs_err;
    m_info["max_rel_err"] = gc.max_rel_err;
    m_info["reference"] = Json{{"where", "host"}, {"compared", "sampled heads"}, {"why", m_reference_error}};
    if (!gc.ok)
      return failed("cuDNN's gradients differ from the fp32 reference: relative error " + std::to_string(gc.max_rel_err) + " > " +
                        std::to_string(gc.tolerance) + " (worst: " + gc.worst + ")",
                    "numerics");
  } else {
    m_info["reference"] = Json{{"where", "none"}, {"why", m_reference_error}};
    m_info["note"] = "numerics not checked: " + m_reference_error;
  }
  return done(ok_result());
}

} // namespace

// Whether a result (or its forward's) used a kernel loaded from the kernel cache.
bool used_cached_kernels(const Json& result) {
  for (const Json* r : {&result, result.contains("forward") ? &result["forward"] : nullptr}) {
    if (!r || !r->is_object()) continue;
    for (const char* key : {"plan_cache", "reference_cache"})
      if (r->contains(key) && (*r)[key].is_object() && (*r)[key].value("source", "") == "loaded") return true;
  }
  return false;
}

Json run_with_cache_fallback(const Json& args, const std::function<Json(const Json&)>& run) {
  Json result = run(args);
  const std::string stage = result.value("stage", "");
  if (result.value("status", "") != "failed" || (stage != "execute" && stage != "numerics") || !used_cached_kernels(result)) return result;
  const std::string first = result.value("error", "");
  Json again = args;
  again["kernel_cache_refresh"] = "compiled again: the run with the cache's kernels failed (" + first + ")";
  Json second = run(again);
  second["kernel_cache_fallback"] = "the run with kernels from the kernel cache failed (" + first + "); this is the run with them compiled";
  return second;
}

Json check_cudnn_sdpa(const Json& args, Progress& progress) {
  return run_with_cache_fallback(args, [&](const Json& a) { return SdpaCheck(a, progress).run(); });
}

Json check_cudnn_sdpa_bwd(const Json& args, Progress& progress) {
  Json with = args;
  with["backward"] = true;
  return run_with_cache_fallback(with, [&](const Json& a) { return SdpaCheck(a, progress).run(); });
}

} // namespace selftest
