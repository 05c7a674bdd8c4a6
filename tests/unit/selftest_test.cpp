// The self-test without a GPU: the runner against children that crash, hang, exit non-zero or
// print noise; NVRTC compiling for sm_80/sm_90 with the toolkit's real libnvrtc; the cuDNN SDPA
// graph's operations finalized by the real libcudnn; layouts, conversions, the reference; facts.
#include "gpuapi/cudnn.hpp"
#include "gpuapi/te_attention.hpp"
#include "selftest/checks.hpp"
#include "selftest/sdpa.hpp"
#include "selftest/sdpa_graph.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>

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
  EXPECT_EQ(l->q.strides, (std::array<std::int64_t, 4>{8 * 4 * 16, 16, 4 * 16, 1}));
  s.layout = "sbhd_sbhd_sbhd";
  l = selftest::make_layout(s);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->k.strides, (std::array<std::int64_t, 4>{4 * 16, 16, 2 * 4 * 16, 1}));
  s.layout = "sbh3d";
  l = selftest::make_layout(s);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->v.offset, 32);
  EXPECT_EQ(l->q.strides, (std::array<std::int64_t, 4>{4 * 3 * 16, 3 * 16, 2 * 4 * 3 * 16, 1}));
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
  r.outcomes.push_back({"cudnn_sdpa", "a", "ok", "", 1.0, Json{{"status", "ok"}, {"max_abs_err", 0.01}}});
  r.outcomes.push_back({"cudnn_sdpa", "b", "failed", "No valid execution plans built", 2.0,
                        Json{{"status", "failed"}, {"stage", "plan"}, {"max_abs_err", 0.002}}});
  r.outcomes.push_back({"nccl", "NCCL", "skipped", "no GPU", 0.1, Json{{"status", "skipped"}}});
  r.outcomes.push_back({"nvrtc", "NVRTC", "ok", "", 0.3, Json{{"status", "ok"}, {"cuda_major", 13}}});
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

// cuDNN 9.19's last-error text on the H100 for a backward graph at head dim 512 (docs/validation.md),
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
