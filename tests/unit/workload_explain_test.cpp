// The workload importers feeding the shipped rules: a Hugging Face config.json and a workload
// YAML become the workloads of DESIGN.md's incident 1, and explain() gives TE's verdict on them.
#include "rules/rules.hpp"
#include "workload/workload_io.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace {

std::filesystem::path fixtures() {
  const char* dir = std::getenv("NVTE_TEST_FIXTURES");
  return dir ? std::filesystem::path(dir) : std::filesystem::path("tests/fixtures");
}

const rules::RuleSet& shipped_rules() {
  static const rules::LoadResult result = rules::RuleSet::load({NVTE_RULES_DIR});
  if (!result.rules) ADD_FAILURE() << rules::render(result.diagnostics);
  return *result.rules;
}

model::Facts incident_1_node(bool env_disabled) {
  model::Facts facts;
  std::vector<std::string> sets = {"te.version=2.3.0", "gpu.sm=80", "cudnn.version=9.1.0", "flash_attn.version=2.7.4"};
  if (env_disabled) {
    sets.push_back("env.NVTE_FLASH_ATTN=0");
    sets.push_back("env.NVTE_UNFUSED_ATTN=0");
  }
  for (const auto& s : sets) EXPECT_TRUE(facts.apply_override(s).ok()) << s;
  facts.derive();
  return facts;
}

bool has_reason(const model::BackendVerdict& verdict, std::string_view rule) {
  for (const auto& r : verdict.reasons)
    if (r.rule == rule) return true;
  return false;
}

} // namespace

TEST(WorkloadExplain, DeepSeekV3ConfigOnA100Te23IsIncident1) {
  auto hf = workload::load_hf_config(fixtures() / "hf" / "deepseek-v3" / "config.json");
  ASSERT_TRUE(hf.ok()) << hf.error().message;
  ASSERT_TRUE(workload::finish_workload(hf->workload).ok());

  auto ex = rules::explain(shipped_rules(), incident_1_node(true), hf->workload);
  EXPECT_FALSE(ex.selected.has_value());
  EXPECT_TRUE(has_reason(ex.backends["fused_attention"], "cudnn-f16-head-dim-te-1x"));
  EXPECT_TRUE(has_reason(ex.backends["flash_attention"], "flash-attention-disabled-by-env"));
  EXPECT_TRUE(has_reason(ex.backends["unfused_attention"], "unfused-attention-disabled-by-env"));

  auto unset = rules::explain(shipped_rules(), incident_1_node(false), hf->workload);
  ASSERT_TRUE(unset.selected.has_value());
  EXPECT_EQ(*unset.selected, "UnfusedDotProductAttention");
}

TEST(WorkloadExplain, ShippedWorkloadYamlsAndSettings) {
  auto dir = fixtures().parent_path().parent_path() / "packaging" / "workloads";
  auto mla = workload::load_workload_file(dir / "deepseek-v3-mla.yaml");
  ASSERT_TRUE(mla.ok()) << mla.error().message;
  auto& w = mla->front();
  // Equal head dims of 192 let flash-attn 2 take the shape on sm80 in TE 2.3.
  std::vector<std::string> settings = {"head_dim_v=192"};
  ASSERT_TRUE(workload::apply_workload_settings(w, settings).ok());
  ASSERT_TRUE(workload::finish_workload(w).ok());
  auto ex = rules::explain(shipped_rules(), incident_1_node(false), w);
  ASSERT_TRUE(ex.selected.has_value());
  EXPECT_EQ(*ex.selected, "FlashAttention");

  auto llama = workload::load_workload_file(dir / "llama-3-8b.yaml");
  ASSERT_TRUE(llama.ok()) << llama.error().message;
  ASSERT_TRUE(workload::finish_workload(llama->front()).ok());
  auto on_a100 = rules::explain(shipped_rules(), incident_1_node(false), llama->front());
  ASSERT_TRUE(on_a100.selected.has_value());
  EXPECT_EQ(*on_a100.selected, "FlashAttention");
  EXPECT_TRUE(on_a100.backends["fused_attention"].available);
}
