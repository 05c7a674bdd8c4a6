#include "selftest/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace selftest {

namespace {

// Mirrors of the kernels' parameter blocks (reference_source.cpp): 8-byte fields only.
struct OperandParams {
  std::uint64_t ptr = 0;
  std::int64_t sb = 0, sh = 0, sz = 0, rs = 0, cs = 0, head_div = 1, kind = 0;
};
struct GemmParams {
  OperandParams a, b, c;
  std::int64_t M = 0, N = 0, K = 0, heads = 1, z_first = 0, mode = 0;
  double alpha = 1;
  std::int64_t band_lo = -k_unbounded, band_hi = k_unbounded, out_lo = -k_unbounded, out_hi = k_unbounded;
};
struct Partial {
  double max_diff, max_ref, got, want;
  std::int64_t worst, violations, nonfinite, pad;
};
static_assert(sizeof(OperandParams) == 64 && sizeof(GemmParams) == 3 * 64 + 11 * 8 && sizeof(Partial) == 64);

constexpr unsigned k_compare_blocks = 1024;

// A bound moved by d, an absent bound left absent.
std::int64_t shift(std::int64_t bound, std::int64_t d) { return std::abs(bound) >= k_unbounded ? bound : bound + d; }
std::int64_t negate(std::int64_t bound) { return -bound; }

std::int64_t kind_of(const SdpaShape& s) { return s.bf16 ? 1 : 2; }

// A 16-bit tensor's heads as matrices [seq, dim] from row row0, or transposed ([dim, seq] from
// column row0).
OperandParams matrix(const DeviceView& t, const SdpaShape& s, std::int64_t row0, bool transposed = false) {
  OperandParams o;
  o.ptr = t.base + static_cast<std::uint64_t>(t.view.offset + row0 * t.view.strides[2]) * 2;
  o.sb = t.view.strides[0];
  o.sh = t.view.strides[1];
  o.rs = transposed ? t.view.strides[3] : t.view.strides[2];
  o.cs = transposed ? t.view.strides[2] : t.view.strides[3];
  o.head_div = s.heads / t.view.dims[1];
  o.kind = kind_of(s);
  return o;
}

// A contiguous fp32 tensor [batch * heads_of_it][rows][cols] from row row0.
OperandParams dense(gpuapi::CuDevicePtr base, const SdpaShape& s, std::int64_t heads_of_it, std::int64_t rows,
                    std::int64_t cols, std::int64_t row0) {
  OperandParams o;
  o.ptr = base + static_cast<std::uint64_t>(row0 * cols) * 4;
  o.sb = heads_of_it * rows * cols;
  o.sh = rows * cols;
  o.rs = cols;
  o.cs = 1;
  o.head_div = s.heads / heads_of_it;
  return o;
}

// The chunk's scratch [heads][rows][cols], or its transpose from column col0.
OperandParams scratch(gpuapi::CuDevicePtr base, std::int64_t rows, std::int64_t cols, bool transposed = false, std::int64_t col0 = 0) {
  OperandParams o;
  o.ptr = base + static_cast<std::uint64_t>(col0) * 4;
  o.sb = o.sh = 0;
  o.sz = rows * cols;
  o.rs = transposed ? 1 : cols;
  o.cs = transposed ? cols : 1;
  return o;
}

} // namespace

ReferenceKernel reference_kernel_for(const SdpaShape& shape) {
  return reference_flops(shape) < 2e10 ? ReferenceKernel::simple : ReferenceKernel::tiled;
}

std::string reference_source(ReferenceKernel kernel) {
  return std::string(k_reference_common) + (kernel == ReferenceKernel::tiled ? k_reference_gemm_tiled : k_reference_gemm_simple);
}

util::Result<std::vector<char>> compile_reference(const gpuapi::Nvrtc& nvrtc, int sm, ReferenceKernel kernel) {
  auto out = NVTE_TRY(nvrtc.compile(reference_source(kernel), "nvte_doctor_reference.cu", "sm_" + std::to_string(sm)));
  return std::move(out.image);
}

std::string nvrtc_identity(const gpuapi::Nvrtc& nvrtc) {
  std::vector<std::string> files = {nvrtc.path()};
  if (auto builtins = nvrtc.builtins_path(); !builtins.empty()) files.push_back(builtins);
  auto version = nvrtc.version();
  return libraries_identity(files) + " version " +
         (version ? std::to_string(version->first) + "." + std::to_string(version->second) : "unknown");
}

CacheKey cubin_key(std::string_view nvrtc_identity, std::string_view source, const std::vector<std::string>& options,
                   std::string_view arch) {
  CacheKey key;
  key.add("nvrtc", nvrtc_identity);
  key.add("source", digest(source));
  std::string joined;
  for (const auto& o : options) joined += (joined.empty() ? "" : " ") + o;
  key.add("options", joined);
  key.add("arch", arch);
  return key;
}

CacheKey reference_key(const gpuapi::Nvrtc& nvrtc, int sm, ReferenceKernel kernel) {
  const std::string arch = "sm_" + std::to_string(sm);
  return cubin_key(nvrtc_identity(nvrtc), reference_source(kernel), gpuapi::Nvrtc::options_for(arch), arch);
}

util::Result<ReferenceCubin> cached_reference(const KernelCache& cache, const gpuapi::Nvrtc& nvrtc, int sm, ReferenceKernel kernel) {
  ReferenceCubin out;
  CacheSteps steps;
  steps.restore = [&](std::string_view image) -> util::Result<void> {
    if (!image.starts_with("\x7f"
                           "ELF"))
      return util::make_error(util::ErrorKind::invalid, "not an ELF image");
    out.cubin.assign(image.begin(), image.end());
    return {};
  };
  steps.build = [&]() -> util::Result<void> {
    out.cubin = NVTE_TRY(compile_reference(nvrtc, sm, kernel));
    return {};
  };
  steps.serialize = [&]() -> util::Result<std::string> { return std::string(out.cubin.begin(), out.cubin.end()); };
  out.kept = NVTE_TRY(keep_or_build(cache, "reference-cubin", reference_key(nvrtc, sm, kernel), steps));
  return out;
}

util::Result<std::unique_ptr<DeviceReference>> DeviceReference::load(const CudaSession& session, const std::vector<char>& cubin,
                                                                     ReferenceKernel kernel) {
  const auto& api = session.api();
  if (!api.cuModuleLoadData || !api.cuModuleGetFunction || !api.cuLaunchKernel || !api.cuModuleUnload)
    return util::make_error(util::ErrorKind::symbol_missing, session.driver().path() + " lacks module entry points");
  std::unique_ptr<DeviceReference> ref(new DeviceReference(session));
  ref->m_kernel = kernel;
  ref->m_tile = kernel == ReferenceKernel::tiled ? 128 : 16;
  if (auto error = session.check(api.cuModuleLoadData(&ref->m_module, cubin.data()), "cuModuleLoadData (reference kernels)"); !error.empty())
    return util::make_error(util::ErrorKind::driver_error, error);
  auto& k = ref->m_kernels;
  for (auto [name, slot] : {std::pair{"nvte_ref_gemm", &k.gemm}, {"nvte_ref_softmax", &k.softmax}, {"nvte_ref_rowdot", &k.rowdot}, {"nvte_ref_dsoftmax", &k.dsoftmax},
                            {"nvte_ref_fill", &k.fill}, {"nvte_ref_compare", &k.compare}}) {
    if (auto error = session.check(api.cuModuleGetFunction(slot, ref->m_module, name), name); !error.empty())
      return util::make_error(util::ErrorKind::driver_error, error);
  }
  return ref;
}

DeviceReference::~DeviceReference() {
  // The buffers first: they belong to the context the module was loaded into.
  m_o.reset(), m_dq.reset(), m_dk.reset(), m_dv.reset(), m_dsum.reset(), m_p.reset(), m_ds.reset(), m_partials.reset();
  if (m_module) m_session.api().cuModuleUnload(m_module);
}

util::Result<void> DeviceReference::launch(gpuapi::CuFunction f, unsigned gx, unsigned gy, unsigned gz, unsigned block, void** params) const {
  ++m_launches;
  if (auto error = m_session.check(m_session.api().cuLaunchKernel(f, gx, gy, gz, block, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel (reference)");
      !error.empty())
    return util::make_error(util::ErrorKind::driver_error, error);
  return {};
}

util::Result<void> DeviceReference::fill(gpuapi::CuDevicePtr ptr, std::int64_t n, std::uint64_t seed, bool bf16) const {
  std::uint64_t out = ptr;
  std::int64_t kind = bf16 ? 1 : 2;
  void* params[] = {&out, &n, &seed, &kind};
  auto blocks = static_cast<unsigned>(std::clamp<std::int64_t>((n + 255) / 256, 1, 4096));
  return launch(m_kernels.fill, blocks, 1, 1, 256, params);
}

namespace {

util::Result<void> sync(const CudaSession& s, const char* what) {
  if (auto error = s.check(s.api().cuCtxSynchronize(), what); !error.empty()) return util::make_error(util::ErrorKind::driver_error, error);
  return {};
}

} // namespace

util::Result<void> DeviceReference::scores_and_softmax(std::int64_t z_first, std::int64_t heads, std::int64_t r0, std::int64_t rows) {
  const SdpaShape& s = m_shape;
  const Band band = band_of(s);
  GemmParams p;
  p.a = matrix(m_q, s, r0);
  p.b = matrix(m_k, s, 0, true);
  p.c = scratch(m_p->get(), rows, s.seq_kv);
  p.M = rows, p.N = s.seq_kv, p.K = s.dim_qk, p.heads = s.heads, p.z_first = z_first, p.mode = 2, p.alpha = s.scale();
  p.out_lo = shift(band.lo, r0), p.out_hi = shift(band.hi, r0);
  void* gemm_params[] = {&p};
  NVTE_TRY_VOID(launch(m_kernels.gemm, tiles(p.N), tiles(p.M), static_cast<unsigned>(heads), 256, gemm_params));
  std::uint64_t scores = m_p->get();
  std::int64_t row_stride = s.seq_kv, head_stride = rows * s.seq_kv, cols = s.seq_kv;
  void* softmax_params[] = {&scores, &row_stride, &head_stride, &cols};
  return launch(m_kernels.softmax, static_cast<unsigned>(rows), static_cast<unsigned>(heads), 1, 256, softmax_params);
}

util::Result<void> DeviceReference::forward(const SdpaShape& shape, const DeviceView& q, const DeviceView& k, const DeviceView& v,
                                            std::int64_t budget) {
  m_shape = shape, m_q = q, m_k = k, m_v = v;
  const SdpaShape& s = shape;
  m_chunks = plan_chunks(s, budget);
  std::string error;
  m_o = std::make_unique<DeviceBuffer>(m_session, static_cast<std::size_t>(s.batch * s.heads * s.seq_q * s.dim_v) * 4, error);
  if (error.empty()) m_p = std::make_unique<DeviceBuffer>(m_session, static_cast<std::size_t>(m_chunks.scratch_bytes() / 2), error);
  if (!error.empty()) return util::make_error(util::ErrorKind::driver_error, "reference buffers: " + error);
  const Band band = band_of(s);
  const std::int64_t heads_total = s.batch * s.heads;
  for (std::int64_t z0 = 0; z0 < heads_total; z0 += m_chunks.heads) {
    std::int64_t heads = std::min(m_chunks.heads, heads_total - z0);
    for (std::int64_t r0 = 0; r0 < s.seq_q; r0 += m_chunks.rows) {
      std::int64_t rows = std::min(m_chunks.rows, s.seq_q - r0);
      NVTE_TRY_VOID(scores_and_softmax(z0, heads, r0, rows));
      GemmParams p; // O rows = P V
      p.a = scratch(m_p->get(), rows, s.seq_kv);
      p.b = matrix(m_v, s, 0);
      p.c = dense(m_o->get(), s, s.heads, s.seq_q, s.dim_v, r0);
      p.M = rows, p.N = s.dim_v, p.K = s.seq_kv, p.heads = s.heads, p.z_first = z0, p.mode = 0;
      p.band_lo = shift(band.lo, r0), p.band_hi = shift(band.hi, r0);
      void* params[] = {&p};
      NVTE_TRY_VOID(launch(m_kernels.gemm, tiles(p.N), tiles(p.M), static_cast<unsigned>(heads), 256, params));
    }
  }
  return sync(m_session, "cuCtxSynchronize after the reference forward");
}

util::Result<void> DeviceReference::backward(const DeviceView& d_o) {
  const SdpaShape& s = m_shape;
  const Band band = band_of(s);
  const std::int64_t heads_total = s.batch * s.heads;
  std::string error;
  m_dq = std::make_unique<DeviceBuffer>(m_session, static_cast<std::size_t>(heads_total * s.seq_q * s.dim_qk) * 4, error);
  if (error.empty()) m_dk = std::make_unique<DeviceBuffer>(m_session, static_cast<std::size_t>(s.batch * s.kv_heads * s.seq_kv * s.dim_qk) * 4, error);
  if (error.empty()) m_dv = std::make_unique<DeviceBuffer>(m_session, static_cast<std::size_t>(s.batch * s.kv_heads * s.seq_kv * s.dim_v) * 4, error);
  if (error.empty()) m_dsum = std::make_unique<DeviceBuffer>(m_session, static_cast<std::size_t>(heads_total * s.seq_q) * 4, error);
  if (error.empty()) m_ds = std::make_unique<DeviceBuffer>(m_session, static_cast<std::size_t>(m_chunks.scratch_bytes() / 2), error);
  if (!error.empty()) return util::make_error(util::ErrorKind::driver_error, "reference buffers: " + error);
  const auto& api = m_session.api();
  for (const auto& [buffer, count] : {std::pair{m_dk.get(), s.batch * s.kv_heads * s.seq_kv * s.dim_qk},
                                      {m_dv.get(), s.batch * s.kv_heads * s.seq_kv * s.dim_v}}) {
    if (error = m_session.check(api.cuMemsetD32_v2(buffer->get(), 0, static_cast<std::size_t>(count)), "cuMemsetD32"); !error.empty())
      return util::make_error(util::ErrorKind::driver_error, error);
  }
  // Row sums of dO * O, once for all chunks.
  OperandParams dout = matrix(d_o, s, 0);
  std::uint64_t o = m_o->get(), dsum = m_dsum->get();
  std::int64_t rows_all = s.seq_q, dim_v = s.dim_v, heads = s.heads;
  void* rowdot_params[] = {&dout, &o, &dsum, &rows_all, &dim_v, &heads};
  NVTE_TRY_VOID(launch(m_kernels.rowdot, static_cast<unsigned>(s.seq_q), static_cast<unsigned>(heads_total), 1, 128, rowdot_params));

  for (std::int64_t z0 = 0; z0 < heads_total; z0 += m_chunks.heads) {
    std::int64_t chunk_heads = std::min(m_chunks.heads, heads_total - z0);
    auto gz = static_cast<unsigned>(chunk_heads);
    for (std::int64_t r0 = 0; r0 < s.seq_q; r0 += m_chunks.rows) {
      std::int64_t rows = std::min(m_chunks.rows, s.seq_q - r0);
      NVTE_TRY_VOID(scores_and_softmax(z0, chunk_heads, r0, rows));
      GemmParams dp; // dP = dO V^T, where P can be non-zero
      dp.a = matrix(d_o, s, r0);
      dp.b = matrix(m_v, s, 0, true);
      dp.c = scratch(m_ds->get(), rows, s.seq_kv);
      dp.M = rows, dp.N = s.seq_kv, dp.K = s.dim_v, dp.heads = s.heads, dp.z_first = z0;
      dp.out_lo = shift(band.lo, r0), dp.out_hi = shift(band.hi, r0);
      void* dp_params[] = {&dp};
      NVTE_TRY_VOID(launch(m_kernels.gemm, tiles(dp.N), tiles(dp.M), gz, 256, dp_params));
      std::uint64_t ds_ptr = m_ds->get(), p_ptr = m_p->get();
      std::int64_t cols = s.seq_kv, seq_q = s.seq_q;
      float scale = s.scale();
      void* ds_params[] = {&ds_ptr, &p_ptr, &dsum, &chunk_heads, &rows, &cols, &z0, &r0, &seq_q, &scale};
      auto blocks = static_cast<unsigned>(std::clamp<std::int64_t>(chunk_heads * rows * cols / 256, 1, 8192));
      NVTE_TRY_VOID(launch(m_kernels.dsoftmax, blocks, 1, 1, 256, ds_params));

      GemmParams dq; // dQ rows = dS K
      dq.a = scratch(m_ds->get(), rows, s.seq_kv);
      dq.b = matrix(m_k, s, 0);
      dq.c = dense(m_dq->get(), s, s.heads, s.seq_q, s.dim_qk, r0);
      dq.M = rows, dq.N = s.dim_qk, dq.K = s.seq_kv, dq.heads = s.heads, dq.z_first = z0;
      dq.band_lo = shift(band.lo, r0), dq.band_hi = shift(band.hi, r0);
      void* dq_params[] = {&dq};
      NVTE_TRY_VOID(launch(m_kernels.gemm, tiles(dq.N), tiles(dq.M), gz, 256, dq_params));

      // dK += dS^T Q and dV += P^T dO over the keys these rows can see.
      std::int64_t m_begin = band.lo > -k_unbounded ? std::max<std::int64_t>(0, r0 + band.lo) : 0;
      std::int64_t m_end = band.hi < k_unbounded ? std::min(s.seq_kv, r0 + rows + band.hi) : s.seq_kv;
      if (m_end <= m_begin) continue;
      for (bool is_dk : {true, false}) {
        GemmParams g;
        g.a = scratch(is_dk ? m_ds->get() : m_p->get(), rows, s.seq_kv, true, m_begin);
        g.b = matrix(is_dk ? m_q : d_o, s, r0);
        std::int64_t dim = is_dk ? s.dim_qk : s.dim_v;
        g.c = dense((is_dk ? m_dk : m_dv)->get(), s, s.kv_heads, s.seq_kv, dim, m_begin);
        g.M = m_end - m_begin, g.N = dim, g.K = rows, g.heads = s.heads, g.z_first = z0, g.mode = 1;
        g.band_lo = shift(negate(band.hi), m_begin - r0), g.band_hi = shift(negate(band.lo), m_begin - r0);
        void* params[] = {&g};
        NVTE_TRY_VOID(launch(m_kernels.gemm, tiles(g.N), tiles(g.M), gz, 256, params));
      }
    }
  }
  return sync(m_session, "cuCtxSynchronize after the reference backward");
}

util::Result<TensorErrors> DeviceReference::compare(const std::string& name, const DeviceView& got, double atol, double rtol) const {
  const SdpaShape& s = m_shape;
  const DeviceBuffer* ref = name == "O" ? m_o.get() : name == "dQ" ? m_dq.get() : name == "dK" ? m_dk.get() : name == "dV" ? m_dv.get() : nullptr;
  std::array<std::int64_t, 4> dims = name == "O"    ? std::array<std::int64_t, 4>{s.batch, s.heads, s.seq_q, s.dim_v}
                                     : name == "dQ" ? std::array<std::int64_t, 4>{s.batch, s.heads, s.seq_q, s.dim_qk}
                                     : name == "dK" ? std::array<std::int64_t, 4>{s.batch, s.kv_heads, s.seq_kv, s.dim_qk}
                                                    : std::array<std::int64_t, 4>{s.batch, s.kv_heads, s.seq_kv, s.dim_v};
  if (!ref) return util::make_error(util::ErrorKind::invalid, "no reference tensor " + name + " (forward/backward not run)");
  if (got.view.dims != dims) return util::make_error(util::ErrorKind::invalid, name + ": the view's dims differ from the reference's");
  std::string error;
  if (!m_partials) {
    m_partials = std::make_unique<DeviceBuffer>(m_session, k_compare_blocks * sizeof(Partial), error);
    if (!error.empty()) return util::make_error(util::ErrorKind::driver_error, "compare buffer: " + error);
  }
  std::uint64_t got_ptr = got.base + static_cast<std::uint64_t>(got.view.offset) * 2, ref_ptr = ref->get(), partials = m_partials->get();
  std::int64_t kind = kind_of(s), s0 = got.view.strides[0], s1 = got.view.strides[1], s2 = got.view.strides[2], s3 = got.view.strides[3];
  std::int64_t d0 = dims[0], d1 = dims[1], d2 = dims[2], d3 = dims[3];
  void* params[] = {&got_ptr, &kind, &s0, &s1, &s2, &s3, &d0, &d1, &d2, &d3, &ref_ptr, &atol, &rtol, &partials};
  const std::int64_t n = d0 * d1 * d2 * d3;
  auto blocks = static_cast<unsigned>(std::clamp<std::int64_t>((n + 255) / 256, 1, k_compare_blocks));
  NVTE_TRY_VOID(launch(m_kernels.compare, blocks, 1, 1, 256, params));
  NVTE_TRY_VOID(sync(m_session, "cuCtxSynchronize after the comparison"));
  std::vector<Partial> back(blocks);
  if (error = m_session.check(m_session.api().cuMemcpyDtoH_v2(back.data(), m_partials->get(), blocks * sizeof(Partial)), "cuMemcpyDtoH");
      !error.empty())
    return util::make_error(util::ErrorKind::driver_error, error);
  TensorErrors e;
  e.name = name;
  const Partial* worst = nullptr;
  for (const auto& p : back) {
    e.max_ref = std::max(e.max_ref, p.max_ref);
    e.violations += p.violations;
    e.nonfinite += p.nonfinite;
    if (p.worst >= 0 && (!worst || p.max_diff > worst->max_diff)) worst = &p;
  }
  if (worst) {
    e.max_abs_err = worst->max_diff;
    std::int64_t i = worst->worst;
    std::int64_t i3 = i % d3, i2 = (i / d3) % d2, i1 = (i / (d3 * d2)) % d1, i0 = i / (d3 * d2 * d1);
    e.worst = "b" + std::to_string(i0) + (name == "dK" || name == "dV" ? " g" : " h") + std::to_string(i1) + " s" + std::to_string(i2) +
              " d" + std::to_string(i3) + ": got " + std::to_string(worst->got) + ", want " + std::to_string(worst->want);
  }
  e.max_rel_err = e.max_ref > 0 ? e.max_abs_err / e.max_ref : e.max_abs_err;
  return e;
}

} // namespace selftest
