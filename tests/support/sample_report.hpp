// Test helper: a hand-built model::Report on the h100-node facts snapshot, with two workloads
// (one runs on FusedAttention, one has no backend: their verdicts) and findings whose text needs
// escaping; the node's own status is WARNING (a warning finding), the workloads' CRITICAL.
#pragma once

#include "model/report.hpp"
#include "util/file.hpp"

#include <cstdlib>
#include <string>

namespace test_support {

inline model::Facts h100_facts() {
  const char* env = std::getenv("NVTE_TEST_FIXTURES");
  std::string dir = env ? env : std::string(NVTE_SOURCE_DIR) + "/tests/fixtures";
  auto text = util::read_file(dir + "/snapshots/h100-node.json");
  if (!text) return {};
  auto facts = model::Facts::from_json(*text, "h100-node.json");
  return facts ? *facts : model::Facts{};
}

inline model::Report sample_report() {
  model::Report r;
  r.tool_version = "0.1.0";
  r.rules_digest = "0123456789abcdef0123";
  r.host = "h100-node";
  r.generated_at = "2026-11-22T04:00:00Z";
  r.fingerprint = "feedfacecafebeef";
  r.facts = h100_facts();

  model::Explanation ok;
  ok.workload.name = "llama-7b";
  ok.workload.values["head_dim_qk"] = model::Value(std::int64_t{128});
  ok.workload.values["qkv_format"] = model::Value(std::string("bshd"));
  ok.workload.values["is_training"] = model::Value(true);
  ok.te_version = "2.3.0";
  ok.selected = "FusedAttention";
  ok.backends["flash_attention"] = {false, std::nullopt, {{"flash-attn-missing", "flash-attn is not installed", {}}}};
  ok.backends["fused_attention"] = {true, std::string("F16_arbitrary_seqlen"), {}};
  ok.backends["unfused_attention"] = {true, std::nullopt, {}};
  ok.verdict.verdict = model::Verdict::runs;
  ok.verdict.backend = "FusedAttention";
  ok.verdict.sub_backend = "F16_arbitrary_seqlen";
  ok.verdict.evidence_text = "predicted from TE 2.3.0's selection code";

  model::Explanation none;
  none.workload.name = "deepseek-ai/DeepSeek-V3 \"mla\"";
  none.workload.values["head_dim_qk"] = model::Value(std::int64_t{192});
  none.workload.assumed = {"batch_size"};
  none.te_version = "2.3.0";
  none.backends["flash_attention"] = {false, std::nullopt, {{"env-flash-off", "NVTE_FLASH_ATTN=0", {model::Fix{"env", "unset NVTE_FLASH_ATTN", "re-enable", {{"env.NVTE_FLASH_ATTN", "(unset)"}}, model::FixOutcome{"FlashAttention", "", "attention-no-backend"}, {}, false}}}}};
  none.backends["fused_attention"] = {false, std::nullopt, {{"sm80-head-dim", "head_dim_qk 192 > 128 on sm80", {}}}};
  none.backends["unfused_attention"] = {false, std::nullopt, {{"env-unfused-off", "NVTE_UNFUSED_ATTN=0", {}}}};
  none.verdict.verdict = model::Verdict::no_backend;
  none.verdict.because = "TE selects no attention backend for this workload";
  none.verdict.finding = "workload-no-attention-backend";
  none.verdict.evidence_text = "predicted from TE 2.3.0's selection code";

  model::Finding cudnn;
  cudnn.id = "cudnn-copies-disagree";
  cudnn.severity = model::Severity::warning;
  cudnn.title = "Two cuDNN copies with different versions";
  cudnn.message = "9.14.0 in /usr/lib and 9.19.0 in site-packages;\nTE loads \"the first\" \\ one";
  cudnn.evidence = {{"cudnn.copy_count", "2"}};
  cudnn.fixes = {model::Fix{"pip", "python3 -m pip install nvidia-cudnn-cu12==9.19.0.56", "one copy", {}, std::nullopt, "with cuDNN 9.19.0.56 the finding still holds", false}};
  cudnn.references = {"https://docs.nvidia.com/deeplearning/cudnn/"};
  cudnn.area = "cudnn";

  model::Finding nobackend;
  nobackend.id = "workload-no-attention-backend";
  nobackend.severity = model::Severity::error;
  nobackend.title = "No attention backend";
  nobackend.message = "none";
  nobackend.workload = none.workload.name;
  nobackend.area = "attention";

  r.workloads = {ok, none};
  r.findings = {cudnn, nobackend};
  r.summarize();
  return r;
}

} // namespace test_support
