// The self-test without a GPU: the runner against children that crash, hang, exit non-zero or
// print noise; the phase protocol (a timeout names its phase); NVRTC compiling for sm_80/sm_90
// with the toolkit's real libnvrtc, the GPU reference's kernels included; the cuDNN SDPA graph's
// operations finalized by the real libcudnn (sliding windows too); layouts, conversions, the host
// reference; the shape budget; facts.
#include "gpuapi/cudnn.hpp"
#include "gpuapi/te_attention.hpp"
#include "selftest/budget.hpp"
#include "selftest/checks.hpp"
#include "selftest/reference.hpp"
#include "selftest/sdpa.hpp"
#include "selftest/sdpa_graph.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <unistd.h>

namespace {

using selftest::Json;

selftest::RunnerOptions fake(std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
  return {FAKE_CHILD, timeout};
}

TEST(Runner, OkResultComesBackWithItsArguments) {
  auto o = selftest::run_check(fake(), "ok", Json{{"x", 1}}, "label");
  EXPECT_EQ(o.status, "ok");
  EXPECT_EQ(o.label, "label");
  EXPECT_EQ(o.result["echo"]["x"], 1);
}

TEST(Runner, StdoutNoiseDoesNotCorruptTheResult) {
  auto o = selftest::run_check(fake(), "noisy", Json::object());
  EXPECT_EQ(o.status, "ok") << o.error;
}

TEST(Runner, CrashIsRecordedWithTheSignal) {
  auto o = selftest::run_check(fake(), "crash", Json::object());
  EXPECT_EQ(o.status, "error");
  EXPECT_NE(o.error.find("signal 11"), std::string::npos) << o.error;
}

TEST(Runner, HangIsKilledAtTheTimeout) {
  auto start = std::chrono::steady_clock::now();
  auto o = selftest::run_check(fake(std::chrono::milliseconds(500)), "hang", Json::object());
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(o.status, "error");
  EXPECT_NE(o.error.find("timed out"), std::string::npos) << o.error;
  EXPECT_LT(took, 5.0);
}

TEST(Runner, GrandchildrenDieWithTheGroup) {
  auto start = std::chrono::steady_clock::now();
  auto o = selftest::run_check(fake(std::chrono::milliseconds(500)), "hang_with_grandchild", Json::object());
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(o.status, "error");
  EXPECT_LT(took, 5.0); // a surviving grandchild would hold the pipes open until the test's timeout
}

TEST(Runner, NonZeroExitIsRecordedWithStderr) {
  auto o = selftest::run_check(fake(), "exit3", Json::object());
  EXPECT_EQ(o.status, "error");
  EXPECT_NE(o.error.find("exit code 3"), std::string::npos) << o.error;
  EXPECT_NE(o.error.find("fake: giving up"), std::string::npos) << o.error;
}

TEST(Runner, MissingOrMalformedResultIsAnError) {
  EXPECT_EQ(selftest::run_check(fake(), "no_result", Json::object()).status, "error");
  auto bad = selftest::run_check(fake(), "bad_status", Json::object());
  EXPECT_EQ(bad.status, "error");
  EXPECT_NE(bad.error.find("maybe"), std::string::npos);
  EXPECT_EQ(selftest::run_check(fake(), "no_such_check", Json::object()).status, "error");
}

TEST(Runner, MissingExecutableIsAnError) {
  auto o = selftest::run_check({"/nonexistent/nvte-doctor", std::chrono::milliseconds(2000)}, "ok", Json::object());
  EXPECT_EQ(o.status, "error");
}

TEST(Runner, FailedCheckKeepsTheVendorText) {
  auto o = selftest::run_check(fake(), "failed", Json::object());
  EXPECT_EQ(o.status, "failed");
  EXPECT_EQ(o.error, "No valid execution plans built");
}

TEST(Runner, GpuChecksSkipOrRunThroughTheChild) {
  // On a machine without a driver the driver check reports "skipped: no GPU"; with one, ok.
  auto o = selftest::run_check(fake(), "driver", Json::object());
  ASSERT_TRUE(o.status == "skipped" || o.status == "ok") << o.status << ": " << o.error;
  if (o.status == "skipped") {
    EXPECT_EQ(o.error.rfind("no GPU", 0), 0u) << o.error;
  }
}

std::string toolkit_library(const char* name) {
  for (const char* dir : {"/usr/local/cuda/lib64", "/usr/local/cuda/lib"}) {
    auto path = std::filesystem::path(dir) / name;
    if (std::filesystem::exists(path)) return path.string();
  }
  return {};
}

// One child answers for the forward and the backward; the parent splits its answer in two.
TEST(ForwardAndBackward, OneChildGivesTwoOutcomes) {
  auto both = selftest::run_forward_and_backward(fake(), Json{{"fake", "both_ok"}}, "bf16 d128");
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].check, "cudnn_sdpa");
  EXPECT_EQ(both[0].status, "ok");
  EXPECT_EQ(both[0].label, "bf16 d128");
  EXPECT_EQ(both[0].seconds, 0.25) << "the forward's own time, from the child";
  EXPECT_EQ(both[0].result["max_abs_err"], 0.004);
  EXPECT_EQ(both[1].check, "cudnn_sdpa_bwd");
  EXPECT_EQ(both[1].status, "ok");
  EXPECT_FALSE(both[1].result.contains("forward")) << "the forward's part is not repeated in the backward's";
  EXPECT_EQ(both[1].result["max_abs_err_dq"], 0.02);
  EXPECT_GE(both[1].seconds, 0.0);

  auto backward_failed = selftest::run_forward_and_backward(fake(), Json{{"fake", "backward_failed"}}, "d512");
  ASSERT_EQ(backward_failed.size(), 2u);
  EXPECT_EQ(backward_failed[0].status, "ok");
  EXPECT_EQ(backward_failed[1].check, "cudnn_sdpa_bwd");
  EXPECT_EQ(backward_failed[1].status, "failed");
  EXPECT_EQ(backward_failed[1].error, "No valid execution plans built");

  for (const char* before_the_forward : {"forward_failed", "crash"}) {
    auto one = selftest::run_forward_and_backward(fake(), Json{{"fake", before_the_forward}}, "d64");
    ASSERT_EQ(one.size(), 1u) << before_the_forward;
    EXPECT_EQ(one[0].check, "cudnn_sdpa") << before_the_forward;
    EXPECT_NE(one[0].status, "ok") << before_the_forward;
    EXPECT_FALSE(one[0].error.empty()) << before_the_forward;
  }
}

TEST(Nvrtc, CompilesForSm80AndSm90WithoutAGpu) {
  std::string path = toolkit_library("libnvrtc.so");
  if (path.empty()) GTEST_SKIP() << "no CUDA toolkit NVRTC on this machine";
  auto result = selftest::nvrtc_compile_only({path}, {"sm_80", "sm_90", "compute_90"});
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ((*result)["status"], "ok") << result->dump();
  ASSERT_EQ((*result)["compiled"].size(), 3u);
  EXPECT_GT((*result)["compiled"][0]["bytes"].get<int>(), 100);
  EXPECT_GE((*result)["cuda_major"].get<int>(), 11);
}

TEST(Nvrtc, UnknownArchitectureFailsWithNvrtcText) {
  std::string path = toolkit_library("libnvrtc.so");
  if (path.empty()) GTEST_SKIP() << "no CUDA toolkit NVRTC on this machine";
  auto result = selftest::nvrtc_compile_only({path}, {"sm_1"});
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ((*result)["status"], "failed");
  EXPECT_EQ((*result)["stage"], "compile");
  EXPECT_NE((*result)["error"].get<std::string>().find("nvrtcCompileProgram"), std::string::npos);
}

TEST(Sdpa, LayoutStrides) {
  selftest::SdpaShape s;
  s.batch = 2, s.heads = 4, s.kv_heads = 4, s.seq_q = s.seq_kv = 8, s.dim_qk = s.dim_v = 16;
  s.layout = "bshd_bshd_bshd";
  auto l = selftest::make_layout(s);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->q.strides, (std::array<std::int64_t, 4>{std::int64_t{8} * 4 * 16, 16, std::int64_t{4} * 16, 1}));
  s.layout = "sbhd_sbhd_sbhd";
  l = selftest::make_layout(s);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->k.strides, (std::array<std::int64_t, 4>{std::int64_t{4} * 16, 16, std::int64_t{2} * 4 * 16, 1}));
  s.layout = "sbh3d";
  l = selftest::make_layout(s);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->v.offset, 32);
  EXPECT_EQ(l->q.strides, (std::array<std::int64_t, 4>{std::int64_t{4} * 3 * 16, std::int64_t{3} * 16, std::int64_t{2} * 4 * 3 * 16, 1}));
  EXPECT_EQ(l->buffer_elements.size(), 2u);
  s.kv_heads = 2;
  EXPECT_FALSE(selftest::make_layout(s)); // sbh3d with GQA
  s.layout = "sbhd_sbh2d";
  l = selftest::make_layout(s);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->k.dims[1], 2);
  EXPECT_EQ(l->v.offset, 16);
  s.layout = "thd_thd_thd";
  auto thd = selftest::make_layout(s);
  ASSERT_FALSE(thd);
  EXPECT_EQ(thd.error().kind, util::ErrorKind::unsupported);
}

TEST(Sdpa, HalfAndBfloat16Conversions) {
  for (float x : {0.0f, 1.0f, -0.5f, 0.333251953125f, 65504.0f, std::ldexp(3.0f, -24)}) {
    EXPECT_FLOAT_EQ(selftest::from_half(selftest::to_half(x)), x) << x;
  }
  EXPECT_EQ(selftest::to_half(1.0f), 0x3c00);
  EXPECT_EQ(selftest::to_bfloat16(1.0f), 0x3f80);
  EXPECT_FLOAT_EQ(selftest::from_bfloat16(selftest::to_bfloat16(-2.5f)), -2.5f);
  EXPECT_NEAR(selftest::from_half(selftest::to_half(0.1f)), 0.1f, 1e-4f);
}

TEST(Sdpa, ReferenceCausalFirstRowIsTheFirstValue) {
  selftest::SdpaShape s;
  s.batch = 1, s.heads = 2, s.kv_heads = 1, s.seq_q = s.seq_kv = 4, s.dim_qk = s.dim_v = 8, s.causal = true;
  auto l = selftest::make_layout(s);
  ASSERT_TRUE(l);
  auto buffers = selftest::make_inputs(s, *l);
  auto out = selftest::reference_head(s, *l, buffers, 0, 1);
  // Row 0 attends only to key 0: the output is V[0] exactly.
  for (int d = 0; d < 8; ++d) EXPECT_FLOAT_EQ(out[static_cast<std::size_t>(d)], selftest::from_bfloat16(buffers[2][static_cast<std::size_t>(d)]));
  // The comparison accepts the reference and rejects a perturbed output.
  std::vector<std::uint16_t> o(static_cast<std::size_t>(l->buffer_elements.back()));
  for (std::int64_t h = 0; h < 2; ++h) {
    auto ref = selftest::reference_head(s, *l, buffers, 0, h);
    for (std::int64_t i = 0; i < 4; ++i)
      for (std::int64_t d = 0; d < 8; ++d)
        o[static_cast<std::size_t>(i * l->o.strides[2] + h * l->o.strides[1] + d)] = selftest::to_bfloat16(ref[static_cast<std::size_t>(i * 8 + d)]);
  }
  auto good = selftest::compare_output(s, *l, buffers, o);
  EXPECT_TRUE(good.ok) << good.worst;
  o[3] = selftest::to_bfloat16(selftest::from_bfloat16(o[3]) + 0.5f);
  auto bad = selftest::compare_output(s, *l, buffers, o);
  EXPECT_FALSE(bad.ok);
  EXPECT_GT(bad.max_abs_err, 0.4);
}

TEST(CudnnGraph, OperationsFinalizeWithoutAGpu) {
  std::string path = toolkit_library("libcudnn.so.9");
  if (path.empty()) GTEST_SKIP() << "no cuDNN 9 in the CUDA toolkit on this machine";
  auto cudnn = gpuapi::Cudnn::load(std::vector<std::string>{path});
  ASSERT_TRUE(cudnn) << cudnn.error().message;
  EXPECT_FALSE(cudnn->preloaded().empty()); // libcudnn_graph & co. from the same directory
  for (auto [layout, causal, heads, kv_heads, dim, count] :
       {std::tuple{"bshd_bshd_bshd", true, 16, 4, 128, 14u}, {"sbhd_sbhd_sbhd", false, 16, 16, 64, 10u},
        {"sbh3d", true, 8, 8, 256, 14u}, {"bshd_bsh2d", false, 16, 4, 192, 10u}}) {
    selftest::SdpaShape s;
    s.layout = layout, s.causal = causal, s.heads = heads, s.kv_heads = kv_heads, s.dim_qk = s.dim_v = dim;
    auto l = selftest::make_layout(s);
    ASSERT_TRUE(l);
    selftest::SdpaGraph graph(*cudnn);
    auto built = graph.build_operations(s, *l);
    EXPECT_TRUE(built) << s.label() << ": " << (built ? "" : built.error().message);
    EXPECT_EQ(graph.operation_count(), count) << s.label();
  }
}

TEST(CudnnGraph, CheckWithoutAGpuBuildsTheGraphAndSkips) {
  std::string path = toolkit_library("libcudnn.so.9");
  if (path.empty()) GTEST_SKIP() << "no cuDNN 9 in the CUDA toolkit on this machine";
  Json args{{"dtype", "fp16"}, {"layout", "bshd_bshd_bshd"}, {"heads", 16}, {"kv_heads", 4}, {"dim_qk", 128}, {"causal", true}, {"path", path}};
  auto o = selftest::run_check(fake(), "cudnn_sdpa", args);
  if (o.status == "skipped") {
    EXPECT_EQ(o.result["operations"], 14) << o.result.dump();
    EXPECT_EQ(o.result["version"].get<int>() / 10000, 9);
  } else {
    EXPECT_EQ(o.status, "ok") << o.error; // a machine with a GPU runs it for real
  }
}

TEST(TeSelector, SignatureRangesAndRefusals) {
  EXPECT_EQ(*gpuapi::te_selector_abi(1, 10), 0);
  EXPECT_EQ(*gpuapi::te_selector_abi(2, 4), 0);
  EXPECT_EQ(*gpuapi::te_selector_abi(2, 5), 1);
  EXPECT_EQ(*gpuapi::te_selector_abi(2, 8), 2);
  EXPECT_EQ(*gpuapi::te_selector_abi(2, 9), 3);
  EXPECT_EQ(*gpuapi::te_selector_abi(2, 11), 4);
  EXPECT_EQ(*gpuapi::te_selector_abi(2, 18), 5);
  EXPECT_EQ(gpuapi::te_selector_abi(2, 19).error().kind, util::ErrorKind::unsupported);
  EXPECT_FALSE(gpuapi::te_selector_abi(1, 9));
  EXPECT_EQ(gpuapi::te_backend_name(1), "F16_arbitrary_seqlen");
  EXPECT_EQ(gpuapi::te_backend_name(-1), "none");
}

TEST(Facts, FoldedPerCheck) {
  selftest::Results r;
  r.outcomes.push_back({"cudnn_sdpa", "a", "ok", "", 1.0, 0, Json{{"status", "ok"}, {"max_abs_err", 0.01}}, "", false, {}, -1, "", {}});
  r.outcomes.push_back({"cudnn_sdpa",
                        "b",
                        "failed",
                        "No valid execution plans built",
                        2.0,
                        0,
                        Json{{"status", "failed"}, {"stage", "plan"}, {"max_abs_err", 0.002}},
                        "",
                        false,
                        {},
                        -1,
                        "",
                        {}});
  r.outcomes.push_back({"nccl", "NCCL", "skipped", "no GPU", 0.1, 0, Json{{"status", "skipped"}}, "", false, {}, -1, "", {}});
  r.outcomes.push_back({"nvrtc", "NVRTC", "ok", "", 0.3, 0, Json{{"status", "ok"}, {"cuda_major", 13}}, "", false, {}, -1, "", {}});
  model::Facts facts;
  selftest::add_facts(r, facts);
  EXPECT_EQ(facts.get_bool("selftest.cudnn_sdpa.ok"), false);
  EXPECT_EQ(facts.get_string("selftest.cudnn_sdpa.stage"), "plan");
  EXPECT_EQ(facts.get_string("selftest.cudnn_sdpa.failed_case"), "b");
  EXPECT_EQ(facts.get_string("selftest.cudnn_sdpa.error"), "No valid execution plans built");
  EXPECT_EQ(facts.get_int("selftest.cudnn_sdpa.cases"), 2);
  EXPECT_EQ(facts.get_string("selftest.nccl.status"), "skipped");
  EXPECT_FALSE(facts.has("selftest.nccl.ok"));
  EXPECT_EQ(facts.get_int("selftest.nvrtc.cuda_major"), 13);
  EXPECT_EQ(facts.get_bool("selftest.nvrtc.ok"), true);
  // Every fact the self-test writes is a catalog name (rules can use it; JSON replays it).
  auto replayed = model::Facts::from_json(facts.to_json(), "selftest facts");
  EXPECT_TRUE(replayed) << (replayed ? "" : replayed.error().message);
  auto json = selftest::to_json(r);
  EXPECT_EQ(json["summary"]["failed"], 1);
  EXPECT_EQ(json["summary"]["skipped"], 1);
}

TEST(SdpaArgs, UnsupportedMaskAndDtypeAreNamed) {
  model::Workload w;
  ASSERT_TRUE(w.set_text("attn_mask_type", "padding"));
  ASSERT_TRUE(w.complete());
  auto args = selftest::sdpa_args(w);
  ASSERT_FALSE(args);
  EXPECT_NE(args.error().message.find("padding"), std::string::npos);
  model::Workload ok;
  ASSERT_TRUE(ok.set_text("qkv_format", "bshd"));
  ASSERT_TRUE(ok.set_text("num_gqa_groups", "4"));
  ASSERT_TRUE(ok.complete());
  auto good = selftest::sdpa_args(ok);
  ASSERT_TRUE(good) << good.error().message;
  EXPECT_EQ((*good)["layout"], "bshd_bshd_bshd");
  EXPECT_EQ((*good)["kv_heads"], 4);
  EXPECT_EQ((*good)["te_layout"], 9);
}

} // namespace

namespace {

gpuapi::TeFusedAttnQuery fake_te_query() {
  gpuapi::TeFusedAttnQuery q;
  q.bf16 = true, q.qkv_layout = 9, q.attn_mask_type = 2, q.num_heads = 16, q.num_gqa_groups = 4;
  q.max_seqlen_q = 512, q.max_seqlen_kv = 1024, q.head_dim_qk = 192, q.head_dim_v = 128, q.window_left = -1, q.window_right = 0;
  return q;
}

TEST(TeSelector, ArgumentsLandInTheRightPositionsForEachRelease) {
  for (auto [library, major, minor] : {std::tuple{FAKE_TE_A, 2, 3}, {FAKE_TE_C, 2, 8}, {FAKE_TE_F, 2, 18}}) {
    auto te = util::DlLibrary::open(library);
    ASSERT_TRUE(te) << te.error().message;
    auto backend = gpuapi::te_get_fused_attn_backend(*te, major, minor, fake_te_query());
    ASSERT_TRUE(backend) << backend.error().message;
    EXPECT_EQ(*backend, 1) << "TE " << major << "." << minor;
    auto changed = fake_te_query();
    changed.head_dim_v = 64; // one argument off: the fake answers 0
    EXPECT_EQ(*gpuapi::te_get_fused_attn_backend(*te, major, minor, changed), 0) << "TE " << major << "." << minor;
  }
  // The v2.4 renumbering of NVTEDType: a v2.3 library called as if it were v2.4 sees bf16 as 6.
  auto old = util::DlLibrary::open(FAKE_TE_A);
  ASSERT_TRUE(old);
  EXPECT_EQ(*gpuapi::te_get_fused_attn_backend(*old, 2, 4, fake_te_query()), 0);
  auto refused = gpuapi::te_get_fused_attn_backend(*old, 3, 0, fake_te_query());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, util::ErrorKind::unsupported);
}

// The real libtransformer_engine.so uses NVRTC symbols without a DT_NEEDED entry: TE's Python
// preloads NVRTC globally first. A bare dlopen fails as it did on the H100 with TE 2.15
// ("undefined symbol: nvrtcGetCUBINSize"); load_te_core preloads like TE and succeeds. One test,
// in this order: after a successful load the symbol could stay in the global scope.
TEST(TeSelector, CoreLibraryLoadsOnlyAfterTePreloadsNvrtcGlobally) {
  auto bare = selftest::load_te_core(FAKE_TE_NEEDS_NVRTC, "", "");
  ASSERT_FALSE(bare);
  EXPECT_NE(bare.error().message.find("nvrtcGetCUBINSize"), std::string::npos) << bare.error().message;

  auto te = selftest::load_te_core(FAKE_TE_NEEDS_NVRTC, "", FAKE_NVRTC_SYMBOL);
  ASSERT_TRUE(te) << te.error().message;
  ASSERT_FALSE(te->preloaded.empty());
  EXPECT_EQ(std::filesystem::path(te->preloaded.front()).filename(), std::filesystem::path(FAKE_NVRTC_SYMBOL).filename());
  auto backend = gpuapi::te_get_fused_attn_backend(te->core, 2, 18, fake_te_query());
  ASSERT_TRUE(backend) << backend.error().message;
  EXPECT_EQ(*backend, 1);
}

} // namespace

namespace {

TEST(CudnnGraph, BackwardOperationsFinalizeWithoutAGpu) {
  std::string path = toolkit_library("libcudnn.so.9");
  if (path.empty()) GTEST_SKIP() << "no cuDNN 9 in the CUDA toolkit on this machine";
  auto cudnn = gpuapi::Cudnn::load(std::vector<std::string>{path});
  ASSERT_TRUE(cudnn) << cudnn.error().message;
  for (auto [layout, causal, kv_heads, count] : {std::tuple{"bshd_bshd_bshd", true, 4, 24u}, {"sbhd_sbhd_sbhd", false, 16, 18u},
                                                 {"sbh3d", true, 16, 22u}}) {
    selftest::SdpaShape s;
    s.layout = layout, s.causal = causal, s.heads = 16, s.kv_heads = kv_heads;
    auto l = selftest::make_layout(s);
    ASSERT_TRUE(l);
    selftest::SdpaGraph graph(*cudnn);
    auto built = graph.build_backward_operations(s, *l, selftest::make_grad_layout(s, *l));
    EXPECT_TRUE(built) << s.label() << ": " << (built ? "" : built.error().message);
    EXPECT_EQ(graph.operation_count(), count) << s.label();
  }
}

} // namespace

namespace {

TEST(Sdpa, GradientComparisonRejectsZeroGradients) {
  selftest::SdpaShape s;
  s.batch = 1, s.heads = 4, s.kv_heads = 2, s.seq_q = s.seq_kv = 16, s.dim_qk = s.dim_v = 8, s.causal = true;
  auto l = selftest::make_layout(s);
  ASSERT_TRUE(l);
  auto inputs = selftest::make_inputs(s, *l);
  auto g = selftest::make_grad_layout(s, *l);
  std::vector<std::vector<std::uint16_t>> grads;
  for (auto n : g.buffer_elements) grads.emplace_back(static_cast<std::size_t>(n), std::uint16_t{0});
  for (std::size_t i = 0; i < grads[0].size(); ++i) grads[0][i] = selftest::to_bfloat16(i % 2 ? 0.5f : -0.25f); // dO
  auto c = selftest::compare_gradients(s, *l, inputs, g.d_o, g.dq, g.dk, g.dv, grads);
  EXPECT_FALSE(c.ok);
  EXPECT_NEAR(c.max_rel_err, 1.0, 1e-9); // every gradient is off by its own size
  EXPECT_FALSE(c.worst.empty());
}

} // namespace

// cuDNN 9.19's last-error text on the H100 for a backward graph at head dim 512 (docs/records/validation.md),
// shortened: the distinct, specific reasons survive; the generic frames do not.
TEST(CudnnReasons, KeepsTheDistinctSpecificReasons) {
  const std::string text =
      "{\"engineId\":0,\"smVersion\":900}\n"
      "Warning: CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN; Reason: Fused Attention graph was not given to the engine at: true\n"
      "Warning: CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN; Reason: check_for_support()\n"
      "Warning: CUDNN_STATUS_NOT_SUPPORTED; Reason: (CUDNN_STATUS_NOT_INITIALIZED == status) || (CUDNN_STATUS_NOT_SUPPORTED == ((status) / 1000 * 1000))\n"
      "Warning: CUDNN_STATUS_NOT_SUPPORTED; Reason: ptr->isSupported()\n"
      "Warning: CUDNN_STATUS_NOT_SUPPORTED; Reason: finalize_internal()\n"
      "{\"engineId\":1,\"smVersion\":900}\n"
      "Warning: CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN; Reason: Fused Flash Attention graph was not given to the engine at: true\n"
      "{\"engineId\":2,\"smVersion\":900}\n"
      "Warning: CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN; Reason: Fused Flash Attention graph was not given to the engine at: true\n"
      "Warning: CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH; Reason: only Blackwell is supported for this engine at: !(1000 <= deviceVer)\n";
  EXPECT_EQ(selftest::cudnn_reasons(text),
            "Fused Attention graph was not given to the engine; Fused Flash Attention graph was not given to the engine; "
            "only Blackwell is supported for this engine");
  EXPECT_EQ(selftest::cudnn_reasons("plain text"), "plain text");
  EXPECT_EQ(selftest::cudnn_reasons(""), "");
}

// The phase protocol (phases.hpp): what the child reported before it hung or crashed names where.
namespace {

TEST(Phases, StreamParsesEventsPartsAndTheResult) {
  std::string out =
      "{\"event\":\"begin\",\"phase\":\"load\",\"what\":\"cuDNN\",\"t\":0.01}\n"
      "{\"event\":\"begin\",\"phase\":\"init\",\"what\":\"cuInit\",\"t\":0.02}\n"
      "{\"event\":\"end\",\"phase\":\"load\",\"what\":\"cuDNN\",\"t\":0.21}\n"
      "{\"event\":\"begin\",\"phase\":\"plan\",\"what\":\"backward\",\"t\":0.30}\n"
      "{\"event\":\"part\",\"name\":\"forward\",\"t\":0.9,\"result\":{\"status\":\"ok\",\"max_abs_err\":0.001}}\n";
  auto stream = selftest::parse_child_stream(out);
  ASSERT_EQ(stream.phases.size(), 3u);
  EXPECT_FALSE(stream.phases[0].open);
  EXPECT_NEAR(stream.phases[0].seconds, 0.20, 1e-9);
  EXPECT_TRUE(stream.phases[1].open);
  ASSERT_NE(stream.current(), nullptr);
  EXPECT_EQ(stream.current()->phase, "plan") << "the open phase begun last";
  EXPECT_EQ(stream.open_phases(), "init (cuInit), plan (backward)");
  ASSERT_NE(stream.part("forward"), nullptr);
  EXPECT_EQ(stream.part("forward")->result["max_abs_err"], 0.001);
  EXPECT_EQ(stream.part("forward")->t, 0.9);
  EXPECT_FALSE(stream.result);
  auto finished = selftest::parse_child_stream(out + "{\"event\":\"end\",\"phase\":\"plan\",\"what\":\"backward\",\"t\":1}\nnot json\n{\"status\":\"ok\"}\n");
  ASSERT_TRUE(finished.result);
  EXPECT_EQ((*finished.result)["status"], "ok");
  EXPECT_EQ(finished.malformed, "not json");
  EXPECT_EQ(finished.current()->phase, "init");
}

TEST(Phases, ProgressWritesOneLinePerEventAndSumsRepeatedPhases) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  {
    selftest::Progress progress(fds[1]);
    {
      auto a = progress.phase("execute", "forward");
    }
    {
      auto b = progress.phase("execute", "forward");
      b.end();
    }
    progress.part("forward", Json{{"status", "ok"}});
    EXPECT_TRUE(progress.seconds().contains("execute forward"));
    EXPECT_EQ(progress.seconds().size(), 1u);
  }
  ::close(fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  ::close(fds[0]);
  auto stream = selftest::parse_child_stream(text);
  EXPECT_EQ(stream.phases.size(), 2u);
  EXPECT_EQ(stream.current(), nullptr);
  EXPECT_NE(stream.part("forward"), nullptr);
}

TEST(Runner, TimeoutNamesThePhaseItHappenedIn) {
  auto o = selftest::run_check(fake(std::chrono::milliseconds(600)), "phases_then_hang", Json{{"phase", "reference"}});
  EXPECT_EQ(o.status, "error");
  EXPECT_TRUE(o.timed_out);
  EXPECT_EQ(o.phase, "reference");
  EXPECT_NE(o.error.find("timed out after"), std::string::npos) << o.error;
  EXPECT_NE(o.error.find("during reference (forward)"), std::string::npos) << o.error;
  ASSERT_EQ(o.phases.size(), 3u);
  EXPECT_EQ(o.phases[1].name(), "plan forward");
  EXPECT_FALSE(o.phases[1].open);
  EXPECT_TRUE(o.phases[2].open);
  EXPECT_GT(o.phases[2].seconds, 0.3) << "an open phase lasts until the kill";

  // Two phases open at once (threads): the one begun last is where the child was.
  auto both = selftest::run_check(fake(std::chrono::milliseconds(600)), "phases_then_hang", Json{{"phase", "plan"}, {"beside", "compile"}});
  EXPECT_EQ(both.phase, "plan");
  EXPECT_NE(both.error.find("during compile, plan (forward)"), std::string::npos) << both.error;
}

TEST(Runner, CrashNamesThePhaseAndIsNoTimeout) {
  auto o = selftest::run_check(fake(), "phases_then_hang", Json{{"phase", "execute"}, {"crash", true}});
  EXPECT_EQ(o.status, "error");
  EXPECT_FALSE(o.timed_out);
  EXPECT_EQ(o.phase, "execute");
  EXPECT_NE(o.error.find("signal 11"), std::string::npos) << o.error;
}

TEST(Phases, OnlyPlanAndExecuteAreCudnnsToHangIn) {
  EXPECT_TRUE(selftest::is_cudnn_plan_or_execute("plan"));
  EXPECT_TRUE(selftest::is_cudnn_plan_or_execute("execute"));
  for (const char* other : {"reference", "compare", "init", "load", "graph", ""}) EXPECT_FALSE(selftest::is_cudnn_plan_or_execute(other)) << other;
  EXPECT_TRUE(selftest::is_cudnn_call("graph"));
  EXPECT_FALSE(selftest::is_cudnn_call("reference"));
}

// A hang in the backward's plan, after the forward was streamed: the forward stands, the backward
// is the timeout, and the facts say where it hung.
TEST(ForwardAndBackward, HangInTheBackwardPlanKeepsTheForward) {
  auto outcomes = selftest::run_forward_and_backward(fake(std::chrono::milliseconds(600)), Json{{"fake", "hang_in_backward_plan"}}, "d128");
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[0].check, "cudnn_sdpa");
  EXPECT_EQ(outcomes[0].status, "ok");
  EXPECT_EQ(outcomes[0].result["max_abs_err"], 0.004);
  EXPECT_EQ(outcomes[1].check, "cudnn_sdpa_bwd");
  EXPECT_EQ(outcomes[1].status, "error");
  EXPECT_EQ(outcomes[1].phase, "plan");
  EXPECT_TRUE(outcomes[1].timed_out);
  selftest::Results r{outcomes};
  model::Facts facts;
  selftest::add_facts(r, facts);
  EXPECT_EQ(facts.get_string("selftest.cudnn_sdpa.status"), "ok");
  EXPECT_EQ(facts.get_string("selftest.cudnn_sdpa_bwd.status"), "error");
  EXPECT_EQ(facts.get_string("selftest.cudnn_sdpa_bwd.phase"), "plan");
  EXPECT_EQ(facts.get_bool("selftest.cudnn_sdpa_bwd.timed_out"), true);
  auto replayed = model::Facts::from_json(facts.to_json(), "selftest facts");
  EXPECT_TRUE(replayed) << (replayed ? "" : replayed.error().message);
}

TEST(ForwardAndBackward, HangInTheReferenceIsFactsWithoutACudnnPhase) {
  auto outcomes = selftest::run_forward_and_backward(fake(std::chrono::milliseconds(600)), Json{{"fake", "x"}}, "d128");
  // An unknown fake answers status "error" in its result: not a timeout, no phase.
  ASSERT_EQ(outcomes.size(), 1u);
  auto hung = selftest::run_check(fake(std::chrono::milliseconds(600)), "phases_then_hang", Json{{"phase", "reference"}});
  selftest::Results r{{hung}};
  r.outcomes[0].check = "cudnn_sdpa";
  model::Facts facts;
  selftest::add_facts(r, facts);
  EXPECT_EQ(facts.get_string("selftest.cudnn_sdpa.phase"), "reference");
  EXPECT_EQ(facts.get_bool("selftest.cudnn_sdpa.timed_out"), true);
  EXPECT_EQ(facts.get_string("selftest.cudnn_sdpa.stage"), "child");
}

} // namespace

// The shape budget (budget.hpp): memory, chunks, scaling, time.
namespace {

selftest::SdpaShape deepseek_v3() {
  selftest::SdpaShape s;
  s.batch = 1, s.heads = s.kv_heads = 128, s.seq_q = s.seq_kv = 8192, s.dim_qk = 192, s.dim_v = 128, s.causal = true;
  return s;
}

TEST(Budget, KeptPairsFollowTheMask) {
  selftest::SdpaShape s;
  s.seq_q = s.seq_kv = 4;
  EXPECT_EQ(selftest::kept_pairs(s), 16);
  s.causal = true;
  EXPECT_EQ(selftest::kept_pairs(s), 10);
  s.window_left = 1; // keys i-1 and i
  EXPECT_EQ(selftest::kept_pairs(s), 7);
  s.causal = false, s.window_left = 0, s.window_right = 1; // keys i and i+1
  EXPECT_EQ(selftest::kept_pairs(s), 7);
  s.window_left = s.window_right = -1;
  s.seq_kv = 6, s.causal = true; // top-left: query i sees keys 0..i
  EXPECT_EQ(selftest::kept_pairs(s), 10);
}

TEST(Budget, ChunksAreWholeHeadsWhenTheyFitElseRowsOf128) {
  auto s = deepseek_v3();
  auto whole = selftest::plan_chunks(s, std::int64_t{2} << 30);
  EXPECT_EQ(whole.rows, 8192);
  EXPECT_EQ(whole.heads, 4); // 512 MiB of P and dS per head
  EXPECT_LE(whole.scratch_bytes(), std::int64_t{2} << 30);
  auto rows = selftest::plan_chunks(s, std::int64_t{64} << 20);
  EXPECT_EQ(rows.heads, 1);
  EXPECT_EQ(rows.rows, 1024);
  EXPECT_LE(rows.scratch_bytes(), std::int64_t{64} << 20);
  s.seq_q = s.seq_kv = 1 << 20; // 1M keys: one row block of 128 is the least
  EXPECT_EQ(selftest::plan_chunks(s, std::int64_t{64} << 20).rows, 128);
  EXPECT_EQ(selftest::scratch_budget(std::int64_t{80} << 30), std::int64_t{2} << 30);
  EXPECT_EQ(selftest::scratch_budget(std::int64_t{1} << 30), std::int64_t{128} << 20);
}

TEST(Budget, TheWholeWorkloadWhenItFitsElseBatchThenSeqlenScaledAndSaid) {
  const std::int64_t gib = std::int64_t{1} << 30;
  auto s = deepseek_v3();
  auto need = selftest::memory_need(s, 80 * gib);
  EXPECT_GT(need.total(), 5 * gib); // 0.4 GiB of Q alone, fp32 dQ and accumulator 0.8 GiB each, ...
  EXPECT_LT(need.total(), 12 * gib);
  auto fit = selftest::fit_to_memory(s, 79 * gib);
  EXPECT_TRUE(fit.fits);
  EXPECT_FALSE(fit.scaled);
  EXPECT_TRUE(fit.note.empty());
  EXPECT_EQ(fit.shape.seq_q, 8192);

  s.batch = 16; // 16 x as much: too much for 40 GiB, batch goes first
  auto batch = selftest::fit_to_memory(s, 40 * gib);
  EXPECT_TRUE(batch.fits);
  EXPECT_TRUE(batch.scaled);
  EXPECT_LT(batch.shape.batch, 16);
  EXPECT_GE(batch.shape.batch, 1);
  EXPECT_EQ(batch.shape.seq_q, 8192) << "the sequence is kept while the batch can shrink";
  EXPECT_NE(batch.note.find("instead of batch 16"), std::string::npos) << batch.note;
  EXPECT_LE(batch.need.total(), 40 * gib);

  auto seq = selftest::fit_to_memory(deepseek_v3(), 4 * gib);
  EXPECT_TRUE(seq.fits);
  EXPECT_EQ(seq.shape.batch, 1);
  EXPECT_LT(seq.shape.seq_q, 8192);
  EXPECT_EQ(seq.shape.seq_q, seq.shape.seq_kv);
  EXPECT_NE(seq.note.find("does not fit"), std::string::npos) << seq.note;

  auto none = selftest::fit_to_memory(deepseek_v3(), gib / 2);
  EXPECT_FALSE(none.fits);
  EXPECT_NE(none.note.find("does not fit even"), std::string::npos) << none.note;
}

TEST(Budget, TimeoutGrowsWithTheShapesWork) {
  selftest::SdpaShape small; // the default workload's size
  small.seq_q = small.seq_kv = 512, small.dim_qk = small.dim_v = 128, small.causal = true;
  auto base = selftest::shape_timeout(small);
  EXPECT_GE(base, selftest::k_default_timeout);
  EXPECT_LT(base, selftest::k_default_timeout + std::chrono::seconds(2));
  auto ds = selftest::shape_timeout(deepseek_v3());
  EXPECT_GT(ds, selftest::k_default_timeout + std::chrono::seconds(5)); // ~10 TFLOP of fp32 reference
  EXPECT_LT(ds, std::chrono::seconds(300));
  auto longer = deepseek_v3();
  longer.seq_q = longer.seq_kv = 32768;
  EXPECT_GT(selftest::shape_timeout(longer), ds);
  EXPECT_GT(selftest::reference_flops(deepseek_v3()), 5 * selftest::cudnn_forward_flops(deepseek_v3()) / 2);
}

} // namespace

// The GPU reference's kernels compile with the toolkit's NVRTC without a GPU, and their host
// counterparts agree with the masks.
namespace {

TEST(Reference, KernelsCompileForSm80AndSm90) {
  std::string path = toolkit_library("libnvrtc.so");
  if (path.empty()) GTEST_SKIP() << "no CUDA toolkit NVRTC on this machine";
  auto nvrtc = gpuapi::Nvrtc::load(std::vector<std::string>{path});
  ASSERT_TRUE(nvrtc) << nvrtc.error().message;
  for (auto [sm, kernel] : {std::pair{80, selftest::ReferenceKernel::tiled}, {90, selftest::ReferenceKernel::tiled},
                            {90, selftest::ReferenceKernel::simple}}) {
    auto cubin = selftest::compile_reference(*nvrtc, sm, kernel);
    ASSERT_TRUE(cubin) << cubin.error().message;
    ASSERT_GT(cubin->size(), 1000u);
    EXPECT_EQ(std::string(cubin->data(), 4), "\x7f" "ELF");
    std::string image(cubin->begin(), cubin->end());
    for (const char* name : {"nvte_ref_gemm", "nvte_ref_softmax", "nvte_ref_rowdot", "nvte_ref_dsoftmax", "nvte_ref_fill", "nvte_ref_compare"})
      EXPECT_NE(image.find(name), std::string::npos) << name << " for sm_" << sm;
  }
}

TEST(Reference, TheSimpleProductForSmallShapesOnly) {
  selftest::SdpaShape small;
  small.batch = 2, small.heads = small.kv_heads = 16, small.seq_q = small.seq_kv = 512, small.dim_qk = small.dim_v = 128, small.causal = true;
  EXPECT_EQ(selftest::reference_kernel_for(small), selftest::ReferenceKernel::simple); // the default workload: 7.5 GFLOP
  EXPECT_EQ(selftest::reference_kernel_for(deepseek_v3()), selftest::ReferenceKernel::tiled);
  EXPECT_NE(selftest::reference_source(selftest::ReferenceKernel::simple), selftest::reference_source(selftest::ReferenceKernel::tiled));
}

TEST(Reference, InputsAreExactInBothHalfFormats) {
  bool negative = false, positive = false;
  for (std::uint64_t i = 0; i < 4096; ++i) {
    float v = selftest::input_value(selftest::k_seed_inputs, i);
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    EXPECT_EQ(v * 256.0f, std::floor(v * 256.0f));
    EXPECT_EQ(selftest::from_bfloat16(selftest::to_bfloat16(v)), v);
    EXPECT_EQ(selftest::from_half(selftest::to_half(v)), v);
    negative = negative || v < -0.5f;
    positive = positive || v > 0.5f;
  }
  EXPECT_TRUE(negative && positive);
  EXPECT_NE(selftest::input_value(selftest::k_seed_inputs, 7), selftest::input_value(selftest::k_seed_d_o, 7));
}

TEST(Sdpa, SlidingWindowReferenceSeesOnlyTheWindow) {
  selftest::SdpaShape s;
  s.batch = 1, s.heads = s.kv_heads = 1, s.seq_q = s.seq_kv = 6, s.dim_qk = s.dim_v = 8, s.causal = true, s.window_left = 0;
  auto l = selftest::make_layout(s);
  ASSERT_TRUE(l);
  auto buffers = selftest::make_inputs(s, *l);
  auto out = selftest::reference_head(s, *l, buffers, 0, 0);
  // A window of 0 keys to the left with a causal mask: every query sees only its own key.
  for (int i = 0; i < 6; ++i)
    for (int d = 0; d < 8; ++d)
      EXPECT_FLOAT_EQ(out[static_cast<std::size_t>(i * 8 + d)], selftest::from_bfloat16(buffers[2][static_cast<std::size_t>(i * 8 + d)])) << i;
  EXPECT_EQ(s.label(), "bf16 bshd_bshd_bshd b1 h1/1 s6 d8 causal window 0,0");
  auto band = selftest::band_of(s);
  EXPECT_TRUE(band.keeps(3, 3));
  EXPECT_FALSE(band.keeps(3, 2));
  EXPECT_FALSE(band.keeps(3, 4));
}

TEST(Sdpa, WindowArgumentsParse) {
  auto s = selftest::parse_shape(Json{{"causal", true}, {"window_left", 4096}, {"window_right", 0}});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->window_left, 4096);
  EXPECT_EQ(selftest::band_of(*s).lo, -4096);
  EXPECT_EQ(selftest::band_of(*s).hi, 0);
  EXPECT_FALSE(selftest::parse_shape(Json{{"window_left", -2}}));
  EXPECT_FALSE(selftest::parse_shape(Json{{"window_left", "x"}}));
  auto none = selftest::parse_shape(Json{{"window_left", -1}, {"window_right", -1}});
  ASSERT_TRUE(none);
  EXPECT_FALSE(selftest::band_of(*none).bounded());
}

TEST(CudnnGraph, SlidingWindowOperationsFinalizeWithoutAGpu) {
  std::string path = toolkit_library("libcudnn.so.9");
  if (path.empty()) GTEST_SKIP() << "no cuDNN 9 in the CUDA toolkit on this machine";
  auto cudnn = gpuapi::Cudnn::load(std::vector<std::string>{path});
  ASSERT_TRUE(cudnn) << cudnn.error().message;
  selftest::SdpaShape s;
  s.layout = "bshd_bshd_bshd", s.causal = true, s.heads = 16, s.kv_heads = 4, s.dim_qk = s.dim_v = 128, s.window_left = 64;
  auto l = selftest::make_layout(s);
  ASSERT_TRUE(l);
  selftest::SdpaGraph fwd(*cudnn);
  auto built = fwd.build_operations(s, *l);
  ASSERT_TRUE(built) << built.error().message;
  EXPECT_EQ(fwd.operation_count(), 19u); // the causal graph's 14 and the left bound's 5
  std::vector<std::int64_t> uids;
  std::vector<void*> pointers;
  selftest::MaskScalars values;
  fwd.bind_scalars(values, uids, pointers);
  EXPECT_EQ(uids, (std::vector<std::int64_t>{selftest::k_uid_neg_inf, selftest::k_uid_left_bound, selftest::k_uid_window_neg_inf}));
  EXPECT_EQ(pointers[1], &values.left_bound);
  selftest::SdpaGraph bwd(*cudnn);
  auto back = bwd.build_backward_operations(s, *l, selftest::make_grad_layout(s, *l));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(bwd.operation_count(), 29u);
  // A window's right side without a causal mask shifts the row index.
  s.causal = false, s.window_left = 32, s.window_right = 16;
  selftest::SdpaGraph both(*cudnn);
  ASSERT_TRUE(both.build_operations(s, *l));
  EXPECT_EQ(both.operation_count(), 10u + 5u + 5u);
}

} // namespace

// The cuda child: driver, NVRTC and NCCL in one process, three outcomes from its parts.
namespace {

TEST(CudaChild, ThreeOutcomesFromOneChild) {
  auto outcomes = selftest::run_cuda_checks(fake(), Json::object(), Json::object());
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_EQ(outcomes[0].check, "driver");
  EXPECT_EQ(outcomes[1].check, "nvrtc");
  EXPECT_EQ(outcomes[2].check, "nccl");
  // Without a GPU (CI): the driver and NCCL say so, NVRTC still compiles; with one, all ok.
  EXPECT_TRUE(outcomes[0].status == "skipped" || outcomes[0].status == "ok") << outcomes[0].error;
  EXPECT_TRUE(outcomes[2].status == "skipped" || outcomes[2].status == "ok") << outcomes[2].error;
  if (outcomes[0].status == "skipped") {
    EXPECT_EQ(outcomes[0].error.rfind("no GPU", 0), 0u) << outcomes[0].error;
  }
  EXPECT_NE(outcomes[1].status, "error") << outcomes[1].error;
}

TEST(CudaChild, ACrashInNcclKeepsTheDriverAndNvrtcAnswers) {
  auto outcomes = selftest::run_cuda_checks(fake(), Json::object(), Json{{"fake", "crash_in_comm"}});
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_EQ(outcomes[0].status, "ok");
  EXPECT_EQ(outcomes[0].result["gpu_count"], 1);
  EXPECT_GE(outcomes[0].seconds, 0.1) << "the driver's part came after the fake's 0.1 s";
  EXPECT_LT(outcomes[0].seconds, 2.0);
  EXPECT_EQ(outcomes[1].status, "ok");
  EXPECT_EQ(outcomes[2].check, "nccl");
  EXPECT_EQ(outcomes[2].status, "error");
  EXPECT_EQ(outcomes[2].phase, "comm");
  EXPECT_NE(outcomes[2].error.find("signal 11"), std::string::npos) << outcomes[2].error;

  auto early = selftest::run_cuda_checks(fake(), Json::object(), Json{{"fake", "crash_before_nvrtc"}});
  ASSERT_EQ(early.size(), 3u);
  EXPECT_EQ(early[0].status, "ok");
  EXPECT_EQ(early[1].status, "error") << "NVRTC never answered: the child's end is its";
  EXPECT_EQ(early[1].phase, "compile");
  EXPECT_EQ(early[2].status, "error");
}

} // namespace

// cuDNN's support answer as the cudnn_support check (issue 38, item 4): what TE 2.20 asks cuDNN,
// held against the plan build from heuristics mode A.
namespace {

selftest::CheckOutcome pass(const char* check, const char* status, Json result, std::string error = {}) {
  selftest::CheckOutcome o;
  o.check = check;
  o.label = "bf16 bshd_bshd_bshd b1 h16/16 s512 d128 causal";
  o.status = status;
  o.error = std::move(error);
  o.result = std::move(result);
  return o;
}

Json engine(const char* mode) { return Json{{"index", 8}, {"runtime_compiled", true}, {"heuristics", mode}}; }

TEST(CudnnSupport, AgreesWhenCudnnSaysYesAndThePlanBuilds) {
  auto o = selftest::support_outcome(
      {pass("cudnn_sdpa", "ok",
            Json{{"status", "ok"}, {"support", {{"supported", true}, {"configs", 3}}}, {"engine", engine("heuristics A")}}),
       pass("cudnn_sdpa_bwd", "ok",
            Json{{"status", "ok"}, {"support", {{"supported", true}, {"configs", 1}}}, {"engine", engine("heuristics A")}})},
      "shape");
  EXPECT_EQ(o.check, "cudnn_support");
  EXPECT_EQ(o.status, "ok");
  EXPECT_EQ(o.result["agrees"], true);
  EXPECT_EQ(o.result["forward"]["plan"], "built");
  EXPECT_EQ(o.result["backward"]["configs"], 1);
}

TEST(CudnnSupport, ARefusalIsAFailureWithCudnnsReason) {
  auto o = selftest::support_outcome(
      {pass("cudnn_sdpa", "ok",
            Json{{"status", "ok"}, {"support", {{"supported", true}, {"configs", 2}}}, {"engine", engine("heuristics A")}}),
       pass("cudnn_sdpa_bwd", "failed",
            Json{{"status", "failed"},
                 {"stage", "plan"},
                 {"support", {{"supported", false}, {"configs", 0}, {"reason", "cuDNN: only Blackwell"}}}},
            "No valid execution plans built")},
      "shape");
  EXPECT_EQ(o.status, "failed");
  EXPECT_EQ(o.error, "cuDNN does not support the backward graph: cuDNN: only Blackwell");
  EXPECT_EQ(o.result["stage"], "support");
  EXPECT_EQ(o.result["agrees"], true); // refused, and no plan either
  selftest::Results r;
  r.outcomes.push_back(o);
  model::Facts facts;
  selftest::add_facts(r, facts);
  EXPECT_EQ(facts.get_string("selftest.cudnn_support.stage"), "support");
  EXPECT_EQ(facts.get_bool("selftest.cudnn_support.agrees"), true);
  EXPECT_TRUE(model::Facts::from_json(facts.to_json(), "support facts"));
}

TEST(CudnnSupport, AYesWithoutAModeAPlanDisagrees) {
  // cuDNN lists configurations for the graph, none builds a plan in mode A (the self-test found
  // one only in its fallback): TE 2.20 would select FusedAttention and fail at the plan.
  auto o = selftest::support_outcome(
      {pass("cudnn_sdpa", "ok",
            Json{{"status", "ok"}, {"support", {{"supported", true}, {"configs", 2}}}, {"engine", engine("fallback")}})},
      "shape");
  EXPECT_EQ(o.status, "ok");
  EXPECT_EQ(o.result["agrees"], false);
  EXPECT_EQ(o.result["forward"]["plan"], "built from fallback");
  auto refused_graph = selftest::support_outcome(
      {pass("cudnn_sdpa", "failed", Json{{"status", "failed"}, {"stage", "graph"}}, "cudnnBackendFinalize")}, "shape");
  EXPECT_EQ(refused_graph.status, "failed");
  auto skipped = selftest::support_outcome({pass("cudnn_sdpa", "skipped", Json{{"status", "skipped"}}, "no GPU")}, "shape");
  EXPECT_EQ(skipped.status, "skipped");
  auto crashed = selftest::support_outcome({pass("cudnn_sdpa", "error", Json(), "signal 11")}, "shape");
  EXPECT_EQ(crashed.status, "skipped");
}

} // namespace
