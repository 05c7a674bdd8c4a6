// A failed self-test check classified, joined to the finding that explains it, and its
// environment fix verified by re-running the check alone (selftest::verify_env_fixes) — the
// decision with a fake re-runner, the re-run itself through the fake child and the fake Python
// tier; the Python tier's per-workload checks and its reasons for not running.
#include "model/selftest_summary.hpp"
#include "rules/verdict.hpp"
#include "selftest/selftest.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>

namespace {

using selftest::Json;

model::SelftestCheck failed_check(std::string check, std::string error, std::string backend = "FusedAttention", int workload = 0) {
  model::SelftestCheck c;
  c.check = std::move(check);
  c.label = "bf16 bshd_bshd_bshd d128";
  c.status = "failed";
  c.error = std::move(error);
  c.workload = workload;
  c.backend = std::move(backend);
  c.failure_class = model::classify_selftest_failure(c.status, c.error, false, "");
  c.rerun = Json{{"kind", "python"}, {"honours", Json::array({"CUDNN_PATH", "CUDNN_HOME", "NVTE_", "LD_LIBRARY_PATH"})}};
  return c;
}

model::Finding two_copies_finding() {
  model::Finding f;
  f.id = "cudnn-te-import-first-breaks-torch";
  f.severity = model::Severity::error;
  f.verdict = model::VerdictEffect::at_risk;
  f.verdict_backends = {"FusedAttention"};
  f.explains = {"sublibrary_load"};
  f.fixes.push_back(model::Fix{"env", "export CUDNN_PATH=/venv/nvidia/cudnn", "point TE at torch's cuDNN", {}, std::nullopt, {}, false});
  return f;
}

TEST(SelftestClassify, EachFailureKindHasItsClass) {
  using model::classify_selftest_failure;
  EXPECT_EQ(classify_selftest_failure("failed", "FusedAttention failed: cuDNN Error: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED", false, ""),
            "sublibrary_load");
  EXPECT_EQ(classify_selftest_failure("failed", "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (9, 19, 0)",
                                      false, ""),
            "sublibrary_load");
  EXPECT_EQ(classify_selftest_failure("failed", "cudnnBackendFinalize: No valid execution plans built", false, ""), "plan_build");
  EXPECT_EQ(classify_selftest_failure("failed", "head dim", false, "plan"), "plan_build");
  EXPECT_EQ(classify_selftest_failure("failed", "FusedAttention differs from the fp32 math reference: forward 6.19", false, ""),
            "numerics");
  EXPECT_EQ(classify_selftest_failure("failed", "off", false, "numerics"), "numerics");
  EXPECT_EQ(classify_selftest_failure("error", "the check's child process timed out after 120.0 s during plan", true, ""), "timeout");
  EXPECT_EQ(classify_selftest_failure("error", "the check's child process killed by signal 11 (Segmentation fault)", false, ""), "crash");
  EXPECT_EQ(classify_selftest_failure("failed", "ncclCommInitAll: unhandled system error", false, "init"), "other");
  EXPECT_EQ(classify_selftest_failure("ok", "", false, ""), "");
  EXPECT_EQ(classify_selftest_failure("skipped", "no GPU", false, ""), "");
}

TEST(SelftestJoin, SublibraryFailureNamesTheTwoCopiesFindingAndItsFix) {
  model::SelftestSummary summary;
  summary.checks.push_back(failed_check("python_te", "FusedAttention failed: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"));
  summary.checks.push_back(failed_check("python_te", "FusedAttention differs from the fp32 math reference: forward 6.19"));
  summary.checks.push_back(failed_check("python_te", "FlashAttention failed: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED", "FlashAttention"));
  rules::join_selftest_failures(summary, {two_copies_finding()}, {});
  EXPECT_EQ(summary.checks[0].explained_by, "cudnn-te-import-first-breaks-torch");
  ASSERT_TRUE(summary.checks[0].fix);
  EXPECT_EQ(summary.checks[0].fix->command, "export CUDNN_PATH=/venv/nvidia/cudnn");
  EXPECT_EQ(summary.checks[1].explained_by, ""); // numerics: not what two copies explain
  EXPECT_EQ(summary.checks[2].explained_by, ""); // another backend than the finding concerns
}

TEST(SelftestEnvFix, AssignmentsAreParsedOnlyFromPureAssignments) {
  auto a = selftest::env_assignments("export CUDNN_PATH='/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn'");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->size(), 1U);
  EXPECT_EQ((*a)[0].first, "CUDNN_PATH");
  EXPECT_EQ((*a)[0].second, "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn");
  auto two = selftest::env_assignments("NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=1");
  ASSERT_TRUE(two);
  EXPECT_EQ(two->size(), 2U);
  EXPECT_FALSE(selftest::env_assignments("unset CUDNN_HOME && export CUDNN_PATH=/x"));
  EXPECT_FALSE(selftest::env_assignments("python3 -m pip install nvidia-cudnn-cu12"));
  EXPECT_FALSE(selftest::env_assignments("export CUDNN_PATH=$(pwd)"));
  EXPECT_FALSE(selftest::env_assignments(""));
}

// The decision, with a re-runner that passes only when CUDNN_PATH is set to the fix's value.
struct FakeRerun {
  int calls = 0;
  std::map<std::string, std::string> last;
  selftest::CheckOutcome operator()(const model::SelftestCheck& c, const std::map<std::string, std::string>& env) {
    ++calls;
    last = env;
    selftest::CheckOutcome o;
    o.check = c.check;
    auto it = env.find("CUDNN_PATH");
    o.status = it != env.end() && it->second == "/venv/nvidia/cudnn" ? "ok" : "failed";
    if (o.status != "ok") o.error = "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED";
    return o;
  }
};

model::SelftestSummary explained(std::string fix_command) {
  model::SelftestSummary summary;
  summary.checks.push_back(failed_check("python_te", "FusedAttention failed: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"));
  auto finding = two_copies_finding();
  finding.fixes.front().command = std::move(fix_command);
  rules::join_selftest_failures(summary, {finding}, {});
  return summary;
}

TEST(SelftestEnvFix, PassingReRunMarksTheFixVerifiedHere) {
  auto summary = explained("export CUDNN_PATH=/venv/nvidia/cudnn");
  FakeRerun fake;
  selftest::verify_env_fixes(summary, std::ref(fake), true);
  EXPECT_EQ(fake.calls, 1);
  EXPECT_EQ(fake.last.at("CUDNN_PATH"), "/venv/nvidia/cudnn");
  EXPECT_EQ(summary.checks[0].fix_verified, "here");
  // Once tried, never again.
  selftest::verify_env_fixes(summary, std::ref(fake), true);
  EXPECT_EQ(fake.calls, 1);
}

TEST(SelftestEnvFix, FailingReRunSaysItDidNotHelp) {
  auto summary = explained("export CUDNN_PATH=/elsewhere");
  FakeRerun fake;
  selftest::verify_env_fixes(summary, std::ref(fake), true);
  EXPECT_EQ(fake.calls, 1);
  EXPECT_EQ(summary.checks[0].fix_verified, "did_not_help");
  EXPECT_NE(summary.checks[0].fix_note.find("CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"), std::string::npos);
}

TEST(SelftestEnvFix, NothingIsTriedWithoutAGpuOrForOtherFixes) {
  FakeRerun fake;
  auto no_gpu = explained("export CUDNN_PATH=/venv/nvidia/cudnn");
  selftest::verify_env_fixes(no_gpu, std::ref(fake), false);
  EXPECT_EQ(no_gpu.checks[0].fix_verified, "");
  EXPECT_NE(no_gpu.checks[0].fix_note.find("no GPU"), std::string::npos);
  auto pip = explained("python3 -m pip install nvidia-cudnn-cu13");
  selftest::verify_env_fixes(pip, std::ref(fake), true);
  EXPECT_EQ(pip.checks[0].fix_verified, "");
  auto other_variable = explained("export PATH=/x");
  selftest::verify_env_fixes(other_variable, std::ref(fake), true);
  EXPECT_EQ(other_variable.checks[0].fix_verified, "");
  // A C++ child loads cuDNN by path: CUDNN_PATH cannot change it, so it is not an experiment.
  auto by_path = explained("export CUDNN_PATH=/venv/nvidia/cudnn");
  by_path.checks[0].rerun["honours"] = Json::array();
  selftest::verify_env_fixes(by_path, std::ref(fake), true);
  EXPECT_EQ(by_path.checks[0].fix_verified, "");
  EXPECT_NE(by_path.checks[0].fix_note.find("by path"), std::string::npos);
  EXPECT_EQ(fake.calls, 0);
}

// The real re-run: the fake child passes only with the variable the parent sets for it.
TEST(SelftestEnvFix, ReRunAppliesTheEnvironmentToTheChild) {
  ::unsetenv("NVTE_TEST_FIX");
  model::SelftestCheck c = failed_check("needs_env", "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED");
  c.rerun = Json{{"kind", "child"},      {"executable", FAKE_CHILD},
                 {"check", "needs_env"}, {"args", {{"var", "NVTE_TEST_FIX"}, {"value", "1"}}},
                 {"timeout_ms", 10000},  {"honours", Json::array({"NVTE_"})}};
  EXPECT_EQ(selftest::rerun_check(c, {}).status, "failed");
  EXPECT_EQ(selftest::rerun_check(c, {{"NVTE_TEST_FIX", "1"}}).status, "ok");
  EXPECT_EQ(selftest::rerun_check(c, {{"NVTE_TEST_FIX", "0"}}).status, "failed");
}

// The Python tier's re-run of one workload, through the fake tier that fails without CUDNN_PATH.
TEST(SelftestEnvFix, PythonTierReRunOfOneWorkload) {
  ::setenv("FAKE_TE_SUBLIBRARY", "1", 1);
  ::unsetenv("CUDNN_PATH");
  Json shape{{"dtype", "bf16"}, {"layout", "bshd_bshd_bshd"}, {"dim_qk", 128}};
  model::SelftestCheck c = failed_check("python_te", "FusedAttention failed: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED", "FusedAttention", 3);
  c.rerun = Json{{"kind", "python"},
                 {"interpreter", "python3"},
                 {"script", FAKE_PYTHON_TIER},
                 {"shapes", Json::array({shape})},
                 {"predicted", Json::array({"FusedAttention"})},
                 {"timeout_ms", 20000},
                 {"pick", "python_te"},
                 {"honours", Json::array({"CUDNN_PATH"})}};
  auto without = selftest::rerun_check(c, {});
  EXPECT_EQ(without.status, "failed") << without.error;
  EXPECT_EQ(without.workload, 3);
  auto with = selftest::rerun_check(c, {{"CUDNN_PATH", "/venv/nvidia/cudnn"}});
  EXPECT_EQ(with.status, "ok") << with.error;
  ::unsetenv("FAKE_TE_SUBLIBRARY");
}

TEST(PythonTier, PerWorkloadChecksCarryTheBackendTeRan) {
  selftest::CheckOutcome tier;
  tier.check = "python";
  tier.label = "/venv/bin/python3";
  tier.status = "failed";
  tier.result = Json{
      {"status", "failed"},
      {"te_present", true},
      {"selections", Json::array({Json{{"label", "a"}, {"chosen", "FusedAttention (F16_arbitrary_seqlen)"}},
                                  Json{{"label", "b"}, {"chosen", "FlashAttention"}}})},
      {"cases", Json::array({Json{{"label", "a"},
                                  {"backend", "default"},
                                  {"status", "failed"},
                                  {"ran", "FusedAttention (F16_arbitrary_seqlen)"},
                                  {"error", "FusedAttention failed: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"}},
                             Json{{"label", "a"}, {"backend", "FlashAttention"}, {"status", "ok"}},
                             Json{{"label", "b"}, {"backend", "default"}, {"status", "ok"}, {"ran", "FlashAttention"}, {"ms", 2.0}}})}};
  auto checks = selftest::python_te_outcomes(tier, {0, 2});
  ASSERT_EQ(checks.size(), 2U);
  EXPECT_EQ(checks[0].check, "python_te");
  EXPECT_EQ(checks[0].workload, 0);
  EXPECT_EQ(checks[0].backend, "FusedAttention");
  EXPECT_EQ(checks[0].status, "failed");
  EXPECT_EQ(checks[1].workload, 2);
  EXPECT_EQ(checks[1].backend, "FlashAttention");
  EXPECT_EQ(checks[1].status, "ok");
}

TEST(PythonTier, TorchWithoutTeIsASkippedCheckWithItsReason) {
  selftest::CheckOutcome tier;
  tier.check = "python";
  tier.label = "/usr/bin/python3";
  tier.status = "ok";
  tier.result = Json{{"status", "ok"}, {"te_present", false}, {"cases", Json::array()}};
  auto checks = selftest::python_te_outcomes(tier, {0});
  ASSERT_EQ(checks.size(), 1U);
  EXPECT_EQ(checks[0].status, "skipped");
  EXPECT_NE(checks[0].error.find("TransformerEngine is not installed"), std::string::npos);
}

TEST(PythonTier, ReasonsItCannotStart) {
  EXPECT_NE(selftest::python_tier_unavailable("python3", "").find("selftest.py was not found"), std::string::npos);
  EXPECT_NE(selftest::python_tier_unavailable("python3", "/nonexistent/selftest.py").find("does not exist"), std::string::npos);
  EXPECT_NE(selftest::python_tier_unavailable("/nonexistent/python3", FAKE_PYTHON_TIER).find("does not exist"), std::string::npos);
  EXPECT_NE(selftest::python_tier_unavailable("no-such-python-xyz", FAKE_PYTHON_TIER).find("on PATH"), std::string::npos);
  EXPECT_EQ(selftest::python_tier_unavailable("python3", FAKE_PYTHON_TIER), "");
}

} // namespace
