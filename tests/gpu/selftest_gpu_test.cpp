// GPU test (ctest label "gpu"): the self-test on a real GPU. Exits 77 (skipped) when there is no
// GPU, 1 when a check fails, 0 otherwise.
//
// 1. The fp32 reference on the GPU (reference.hpp) against the host's, in this process, on small
//    shapes that cover GQA, sq != skv, sliding windows, packed layouts, fp16 and the chunking over
//    heads and query rows: forward O and backward dQ, dK, dV, element by element; and a perturbed
//    element must be caught.
// 2. The checks through the same child protocol as `nvte-doctor selftest` (this binary is its own
//    child): bf16/fp16, causal/no mask, head dims 64 and 128, GQA, bshd / sbhd / sbh3d, sliding
//    windows, forward and backward; NVRTC compile + launch; NCCL.
// 3. Real models at their full shape (batch 1, seq 8192), the attention of the four HF fixtures:
//    DeepSeek-V3 (h128, d192/128), Llama-3-8B (h32/8, d128, also Mixtral-8x7B's), Qwen2.5-7B
//    (h28/4, d128); a Gemma-style head dim 256 and a sliding window of 4096; each with its time
//    and errors.
#include "selftest/budget.hpp"
#include "selftest/reference.hpp"
#include "selftest/sdpa_graph.hpp"
#include "selftest/selftest.hpp"

#include <cmath>
#include <cstdio>
#include <string_view>

namespace {

using selftest::Json;

// dQ, dK, dV on the host in double for every head: the textbook backward of softmax(scale Q K^T) V.
struct HostGrads {
  std::vector<double> dq, dk, dv; // [b][h or g][s][d]
};
HostGrads host_backward(const selftest::SdpaShape& s, const selftest::SdpaLayout& l, const std::vector<std::vector<std::uint16_t>>& in,
                        const std::vector<float>& d_o /* [b][h][sq][dv] */) {
  auto at = [&](const selftest::TensorView& v, std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t d) {
    auto raw = in[static_cast<std::size_t>(v.buffer)][static_cast<std::size_t>(v.offset + b * v.strides[0] + h * v.strides[1] + i * v.strides[2] + d * v.strides[3])];
    return static_cast<double>(s.bf16 ? selftest::from_bfloat16(raw) : selftest::from_half(raw));
  };
  const auto band = selftest::band_of(s);
  const std::int64_t B = s.batch, H = s.heads, G = s.kv_heads, Sq = s.seq_q, Skv = s.seq_kv, D = s.dim_qk, Dv = s.dim_v, group = H / G;
  HostGrads g;
  g.dq.assign(static_cast<std::size_t>(B * H * Sq * D), 0.0);
  g.dk.assign(static_cast<std::size_t>(B * G * Skv * D), 0.0);
  g.dv.assign(static_cast<std::size_t>(B * G * Skv * Dv), 0.0);
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t h = 0; h < H; ++h) {
      std::int64_t kv = h / group;
      for (std::int64_t i = 0; i < Sq; ++i) {
        std::vector<double> p(static_cast<std::size_t>(Skv), 0.0), o(static_cast<std::size_t>(Dv), 0.0);
        double top = -INFINITY, sum = 0;
        for (std::int64_t j = 0; j < Skv; ++j) {
          if (!band.keeps(i, j)) continue;
          double dot = 0;
          for (std::int64_t d = 0; d < D; ++d) dot += at(l.q, b, h, i, d) * at(l.k, b, kv, j, d);
          p[static_cast<std::size_t>(j)] = dot * s.scale();
          top = std::max(top, p[static_cast<std::size_t>(j)]);
        }
        for (std::int64_t j = 0; j < Skv; ++j) {
          double& x = p[static_cast<std::size_t>(j)];
          x = band.keeps(i, j) ? std::exp(x - top) : 0.0;
          sum += x;
        }
        if (sum == 0) continue;
        for (auto& x : p) x /= sum;
        auto dout = [&](std::int64_t d) { return static_cast<double>(d_o[static_cast<std::size_t>(((b * H + h) * Sq + i) * Dv + d)]); };
        double row = 0;
        for (std::int64_t d = 0; d < Dv; ++d) {
          for (std::int64_t j = 0; j < Skv; ++j) o[static_cast<std::size_t>(d)] += p[static_cast<std::size_t>(j)] * at(l.v, b, kv, j, d);
          row += dout(d) * o[static_cast<std::size_t>(d)];
        }
        for (std::int64_t j = 0; j < Skv; ++j) {
          double pij = p[static_cast<std::size_t>(j)];
          if (pij == 0) continue;
          double dp = 0;
          for (std::int64_t d = 0; d < Dv; ++d) dp += dout(d) * at(l.v, b, kv, j, d);
          double ds = pij * (dp - row) * s.scale();
          for (std::int64_t d = 0; d < D; ++d) {
            g.dq[static_cast<std::size_t>(((b * H + h) * Sq + i) * D + d)] += ds * at(l.k, b, kv, j, d);
            g.dk[static_cast<std::size_t>(((b * G + kv) * Skv + j) * D + d)] += ds * at(l.q, b, h, i, d);
          }
          for (std::int64_t d = 0; d < Dv; ++d) g.dv[static_cast<std::size_t>(((b * G + kv) * Skv + j) * Dv + d)] += pij * dout(d);
        }
      }
    }
  }
  return g;
}

// A contiguous [d0][d1][d2][d3] view of a 16-bit buffer.
selftest::TensorView dense_view(std::int64_t d0, std::int64_t d1, std::int64_t d2, std::int64_t d3) {
  selftest::TensorView v;
  v.dims = {d0, d1, d2, d3};
  v.strides = {d1 * d2 * d3, d2 * d3, d3, 1};
  return v;
}

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("    FAILED: %s\n", what.c_str());
    ++failures;
  }
}

// Uploads values (rounded to the shape's 16-bit type) and compares them with the reference's tensor.
void compare_host(const selftest::CudaSession& session, const selftest::DeviceReference& ref, const selftest::SdpaShape& s,
                  const std::string& name, const std::vector<double>& values, const selftest::TensorView& view, bool perturb) {
  std::vector<std::uint16_t> half(values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    half[i] = s.bf16 ? selftest::to_bfloat16(static_cast<float>(values[i])) : selftest::to_half(static_cast<float>(values[i]));
  if (perturb) half[values.size() / 2] = s.bf16 ? selftest::to_bfloat16(static_cast<float>(values[values.size() / 2]) + 0.5f)
                                                : selftest::to_half(static_cast<float>(values[values.size() / 2]) + 0.5f);
  std::string error;
  selftest::DeviceBuffer buffer(session, half.size() * 2, error);
  if (error.empty()) error = session.check(session.api().cuMemcpyHtoD_v2(buffer.get(), half.data(), half.size() * 2), "cuMemcpyHtoD");
  expect(error.empty(), name + ": " + error);
  // The host's values went through one rounding to 16 bits: half an ulp of bf16 is 2^-9 relative.
  double rtol = s.bf16 ? 1.0 / 256 : 1.0 / 2048, atol = 1e-4;
  auto e = ref.compare(name, {buffer.get(), view}, atol, rtol);
  expect(e.ok(), name + ": " + (e ? "" : e.error().message));
  if (!e) return;
  std::printf("    %-2s max_abs_err=%.3g max_ref=%.3g beyond=%lld%s\n", name.c_str(), e->max_abs_err, e->max_ref,
              static_cast<long long>(e->violations), perturb ? " (one element perturbed by 0.5)" : "");
  if (perturb) expect(e->violations == 1, name + ": the perturbed element was not the one counted (" + e->worst + ")");
  else expect(e->violations == 0 && e->nonfinite == 0, name + ": GPU and host references differ: " + e->worst);
}

// The GPU reference against the host's for one small shape, with scratch small enough to chunk.
void reference_against_host(const selftest::CudaSession& session, const std::vector<char>& cubin, selftest::ReferenceKernel kernel,
                            selftest::SdpaShape s, std::int64_t scratch) {
  std::printf("  reference (%s) %s (chunks of %lld bytes)\n", kernel == selftest::ReferenceKernel::tiled ? "tiled" : "simple",
              s.label().c_str(), static_cast<long long>(scratch));
  auto layout = selftest::make_layout(s);
  auto ref = selftest::DeviceReference::load(session, cubin, kernel);
  expect(layout.ok() && ref.ok(), "setup: " + (ref ? std::string() : ref.error().message));
  if (!layout || !ref) return;
  auto grads = selftest::make_grad_layout(s, *layout);
  std::string error;
  std::vector<std::unique_ptr<selftest::DeviceBuffer>> buffers;
  for (std::size_t i = 0; i + 1 < layout->buffer_elements.size(); ++i) {
    buffers.push_back(std::make_unique<selftest::DeviceBuffer>(session, static_cast<std::size_t>(layout->buffer_elements[i]) * 2, error));
    if (auto filled = (*ref)->fill(buffers.back()->get(), layout->buffer_elements[i], selftest::k_seed_inputs + i, s.bf16); !filled)
      error = filled.error().message;
  }
  selftest::DeviceBuffer d_o(session, static_cast<std::size_t>(grads.buffer_elements[0]) * 2, error);
  if (auto filled = (*ref)->fill(d_o.get(), grads.buffer_elements[0], selftest::k_seed_d_o, s.bf16); !filled) error = filled.error().message;
  expect(error.empty(), "buffers: " + error);
  if (!error.empty()) return;
  auto view = [&](const selftest::TensorView& v) { return selftest::DeviceView{buffers[static_cast<std::size_t>(v.buffer)]->get(), v}; };
  auto fwd = (*ref)->forward(s, view(layout->q), view(layout->k), view(layout->v), scratch);
  expect(fwd.ok(), "forward: " + (fwd ? std::string() : fwd.error().message));
  auto bwd = (*ref)->backward(selftest::DeviceView{d_o.get(), grads.d_o});
  expect(bwd.ok(), "backward: " + (bwd ? std::string() : bwd.error().message));
  if (!fwd || !bwd) return;
  std::printf("    %lld heads x %lld rows per chunk, %d launches\n", static_cast<long long>((*ref)->chunks().heads),
              static_cast<long long>((*ref)->chunks().rows), (*ref)->launches());

  auto inputs = selftest::make_inputs(s, *layout);
  std::vector<double> o;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h)
      for (float x : selftest::reference_head(s, *layout, inputs, b, h)) o.push_back(x);
  // dO as the GPU filled it, [b][h][sq][dv] in the gradients' layout.
  std::vector<float> dout(static_cast<std::size_t>(s.batch * s.heads * s.seq_q * s.dim_v));
  const auto& dv = grads.d_o;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h)
      for (std::int64_t i = 0; i < s.seq_q; ++i)
        for (std::int64_t d = 0; d < s.dim_v; ++d) {
          auto index = static_cast<std::uint64_t>(b * dv.strides[0] + h * dv.strides[1] + i * dv.strides[2] + d * dv.strides[3]);
          dout[static_cast<std::size_t>(((b * s.heads + h) * s.seq_q + i) * s.dim_v + d)] = selftest::input_value(selftest::k_seed_d_o, index);
        }
  auto g = host_backward(s, *layout, inputs, dout);
  compare_host(session, **ref, s, "O", o, dense_view(s.batch, s.heads, s.seq_q, s.dim_v), false);
  compare_host(session, **ref, s, "O", o, dense_view(s.batch, s.heads, s.seq_q, s.dim_v), true);
  compare_host(session, **ref, s, "dQ", g.dq, dense_view(s.batch, s.heads, s.seq_q, s.dim_qk), false);
  compare_host(session, **ref, s, "dK", g.dk, dense_view(s.batch, s.kv_heads, s.seq_kv, s.dim_qk), false);
  compare_host(session, **ref, s, "dV", g.dv, dense_view(s.batch, s.kv_heads, s.seq_kv, s.dim_v), false);
  compare_host(session, **ref, s, "dV", g.dv, dense_view(s.batch, s.kv_heads, s.seq_kv, s.dim_v), true);
}

selftest::SdpaShape shape(const char* layout, bool bf16, std::int64_t b, std::int64_t h, std::int64_t g, std::int64_t sq, std::int64_t skv,
                          std::int64_t d, std::int64_t dv, bool causal, std::int64_t left = -1, std::int64_t right = -1) {
  selftest::SdpaShape s;
  s.layout = layout, s.bf16 = bf16, s.batch = b, s.heads = h, s.kv_heads = g, s.seq_q = sq, s.seq_kv = skv, s.dim_qk = d, s.dim_v = dv;
  s.causal = causal, s.window_left = left, s.window_right = right;
  return s;
}

Json args_of(const selftest::SdpaShape& s) {
  Json args{{"dtype", s.bf16 ? "bf16" : "fp16"}, {"layout", s.layout}, {"batch", s.batch}, {"heads", s.heads}, {"kv_heads", s.kv_heads},
            {"seq_q", s.seq_q}, {"seq_kv", s.seq_kv}, {"dim_qk", s.dim_qk}, {"dim_v", s.dim_v}, {"causal", s.causal},
            {"window_left", s.window_left}, {"window_right", s.window_right}};
  if (const char* cudnn = std::getenv("NVTE_TEST_CUDNN_PATH")) args["path"] = cudnn;
  if (const char* nvrtc = std::getenv("NVTE_TEST_NVRTC_PATH")) args["nvrtc_path"] = nvrtc;
  return args;
}

void report(const selftest::CheckOutcome& o) {
  std::printf("%-15s %-8s %7.2f s  %s", o.check.c_str(), o.status.c_str(), o.seconds, o.label.c_str());
  const auto& r = o.result;
  if (r.contains("max_abs_err")) std::printf("  max_abs_err=%.4g max_rel_err=%.4g", r["max_abs_err"].get<double>(), r.value("max_rel_err", 0.0));
  if (r.contains("kernel_seconds")) std::printf("  cuDNN %.3f s", r["kernel_seconds"].get<double>());
  if (r.contains("reference_seconds")) std::printf("  reference %.3f s", r["reference_seconds"].get<double>());
  if (r.contains("reference") && r["reference"].is_object()) std::printf(" (%s)", r["reference"].value("where", "").c_str());
  std::printf("\n");
  if (!o.error.empty()) std::printf("    %s\n", o.error.c_str());
  if (r.contains("scaled")) std::printf("    %s\n", r["scaled"].get<std::string>().c_str());
  if (o.status != "ok") ++failures;
}

} // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "selftest-child")
    return argc == 4 ? selftest::child_main(argv[2], argv[3], selftest::builtin_checks()) : 2;
  selftest::RunnerOptions runner;
  runner.timeout = std::chrono::milliseconds(300000);
  auto driver = selftest::run_check(runner, "driver", Json::object());
  std::printf("driver: %s %s\n", driver.status.c_str(), driver.error.c_str());
  if (driver.status == "skipped") return 77;
  failures = driver.status == "ok" ? 0 : 1;

  // 1. The GPU reference against the host's.
  {
    auto session = selftest::CudaSession::open();
    std::string error;
    std::vector<std::string> nvrtc_candidates;
    if (const char* nvrtc = std::getenv("NVTE_TEST_NVRTC_PATH")) nvrtc_candidates.push_back(nvrtc);
    for (const auto& name : gpuapi::k_nvrtc_sonames) nvrtc_candidates.push_back(name);
    auto nvrtc = gpuapi::Nvrtc::load(nvrtc_candidates);
    expect(session.ok() && nvrtc.ok(), "CUDA session and NVRTC");
    if (session && nvrtc && (*session)->make_current((*session)->gpus().front(), error)) {
      for (auto kernel : {selftest::ReferenceKernel::tiled, selftest::ReferenceKernel::simple}) {
        auto cubin = selftest::compile_reference(*nvrtc, (*session)->gpus().front().sm, kernel);
        expect(cubin.ok(), "compile: " + (cubin ? std::string() : cubin.error().message));
        if (!cubin) continue;
        const auto& s = **session;
        reference_against_host(s, *cubin, kernel, shape("bshd_bshd_bshd", true, 2, 4, 2, 37, 37, 24, 16, true), std::int64_t{1} << 20);
        reference_against_host(s, *cubin, kernel, shape("sbhd_sbhd_sbhd", true, 1, 3, 3, 64, 80, 32, 32, false), std::int64_t{1} << 20);
        reference_against_host(s, *cubin, kernel, shape("bshd_bshd_bshd", false, 1, 4, 1, 70, 70, 40, 40, true, 5), std::int64_t{1} << 20);
        reference_against_host(s, *cubin, kernel, shape("sbh3d", false, 2, 2, 2, 33, 33, 16, 16, false), std::int64_t{1} << 20);
        reference_against_host(s, *cubin, kernel, shape("bshd_bsh2d", true, 1, 4, 2, 50, 50, 32, 32, false, 3, 4), std::int64_t{1} << 20);
        // Rows in chunks of 128 (the scratch holds 128 rows of one head) and heads one at a time.
        reference_against_host(s, *cubin, kernel, shape("bshd_bshd_bshd", true, 2, 2, 1, 300, 260, 32, 24, true, 100), 2 * 128 * 260 * 4);
      }
    }
  }

  // 2. The checks through the child protocol.
  report(selftest::run_check(runner, "nvrtc", Json::object(), "NVRTC"));
  auto both = [&](const selftest::SdpaShape& s) {
    selftest::RunnerOptions r = runner;
    r.timeout = selftest::shape_timeout(s);
    for (const auto& o : selftest::run_forward_and_backward(r, args_of(s), s.label())) report(o);
  };
  for (bool bf16 : {true, false}) {
    for (bool causal : {false, true}) {
      both(shape("bshd_bshd_bshd", bf16, 2, 16, 4, 256, 256, 128, 128, causal));
      both(shape("sbhd_sbhd_sbhd", bf16, 2, 16, 16, 256, 256, 64, 64, causal));
      both(shape("sbh3d", bf16, 2, 16, 16, 256, 256, 128, 128, causal));
    }
  }
  both(shape("bshd_bshd_bshd", true, 2, 16, 4, 1024, 1024, 128, 128, true, 128));
  both(shape("bshd_bshd_bshd", true, 1, 8, 8, 512, 1024, 64, 64, false));
  report(selftest::run_check(runner, "nccl", Json{{"bytes", 1u << 26}}, "NCCL"));

  // 3. Real models at their full shape.
  std::printf("models (batch 1, seq 8192, bf16, causal):\n");
  both(shape("bshd_bshd_bshd", true, 1, 128, 128, 8192, 8192, 192, 128, true)); // DeepSeek-V3
  both(shape("bshd_bshd_bshd", true, 1, 32, 8, 8192, 8192, 128, 128, true));    // Llama-3-8B (and Mixtral-8x7B's attention)
  both(shape("bshd_bshd_bshd", true, 1, 28, 4, 8192, 8192, 128, 128, true));    // Qwen2.5-7B
  both(shape("bshd_bshd_bshd", true, 1, 16, 8, 8192, 8192, 256, 256, true));    // Gemma-style head dim 256
  both(shape("bshd_bshd_bshd", true, 1, 32, 8, 8192, 8192, 128, 128, true, 4096)); // sliding window 4096
  std::printf("%s: %d failure(s)\n", failures ? "FAILED" : "ok", failures);
  return failures ? 1 : 0;
}
