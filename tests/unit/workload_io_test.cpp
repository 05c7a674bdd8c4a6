// Workload importers: YAML/JSON workload files, Hugging Face config.json and --workload-set.
#include "workload/hf_config.hpp"
#include "workload/input_kind.hpp"
#include "workload/workload_io.hpp"
#include "support/workload_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using test_support::assumed;
using test_support::fixtures;

namespace {



} // namespace

TEST(WorkloadYaml, SingleMappingIsTypedAndCompleted) {
  auto loaded = workload::parse_workload_text("qkv_format: bshd\nhead_dim_qk: 192\nhead_dim_v: 128\n"
                                              "attn_mask_type: causal\nis_training: True\nwindow_size: [128, 0]\n",
                                              "w.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  ASSERT_EQ(loaded->size(), 1u);
  auto& w = loaded->front();
  ASSERT_TRUE(workload::finish_workload(w).ok());
  EXPECT_EQ(w.get("head_dim_qk")->as_int(), 192);
  EXPECT_EQ(w.get("head_dim_v")->as_int(), 128);
  EXPECT_EQ(w.get("qkv_layout")->as_string(), "bshd_bshd_bshd");
  EXPECT_EQ(w.get("window_size_left")->as_int(), 128);
  EXPECT_EQ(w.get("window_size_right")->as_int(), 0);
  EXPECT_TRUE(w.get("is_training")->as_bool());
  EXPECT_FALSE(assumed(w, "head_dim_v"));
  EXPECT_TRUE(assumed(w, "qkv_dtype"));
}

TEST(WorkloadYaml, WorkloadsListAndJson) {
  auto yaml = workload::parse_workload_text("workloads:\n  - {name: a, head_dim_qk: 64}\n  - name: b\n    num_heads: 8\n",
                                            "list.yaml");
  ASSERT_TRUE(yaml.ok()) << yaml.error().message;
  ASSERT_EQ(yaml->size(), 2u);
  EXPECT_EQ((*yaml)[0].name, "a");
  EXPECT_EQ((*yaml)[1].get("num_heads")->as_int(), 8);

  auto json = workload::parse_workload_text(R"({"workloads": [{"qkv_dtype": "float16", "cp_size": 2}]})", "w.json");
  ASSERT_TRUE(json.ok()) << json.error().message;
  auto& w = json->front();
  ASSERT_TRUE(workload::finish_workload(w).ok());
  EXPECT_EQ(w.get("qkv_dtype")->as_string(), "fp16");
  EXPECT_TRUE(w.get("context_parallel")->as_bool());
}

TEST(WorkloadYaml, UnknownKeyPointsAtLineAndColumnWithHint) {
  auto r = workload::parse_workload_text("qkv_format: bshd\n  \nhead_dim: 128\n", "model.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("model.yaml:3:1: unknown workload key 'head_dim'", 0), 0u) << r.error().message;
  EXPECT_NE(r.error().message.find("did you mean 'head_dim_qk'"), std::string::npos) << r.error().message;

  auto typo = workload::parse_workload_text("attn_mask_typ: causal\n", "t.yaml");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("did you mean 'attn_mask_type'"), std::string::npos) << typo.error().message;

  auto nothing_close = workload::parse_workload_text("zzzzzzzzzzzz: 1\n", "t.yaml");
  ASSERT_FALSE(nothing_close.ok());
  EXPECT_EQ(nothing_close.error().message.find("did you mean"), std::string::npos);
}

TEST(WorkloadYaml, BadValuesAndSyntaxCarryPositions) {
  auto value = workload::parse_workload_text("num_heads: 16\nhead_dim_qk: big\n", "v.yaml");
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.error().message.rfind("v.yaml:2:14: ", 0), 0u) << value.error().message;
  EXPECT_NE(value.error().message.find("head_dim_qk"), std::string::npos);

  auto syntax = workload::parse_workload_text("num_heads: [16\n", "s.yaml");
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(syntax.error().message.rfind("s.yaml:", 0), 0u) << syntax.error().message;
  EXPECT_EQ(syntax.error().kind, util::ErrorKind::parse);

  auto twice = workload::parse_workload_text("num_heads: 16\nnum_heads: 8\n", "d.yaml");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("d.yaml:2:1: workload key 'num_heads' is given twice"), std::string::npos)
      << twice.error().message;

  auto empty_value = workload::parse_workload_text("num_heads:\n", "e.yaml");
  ASSERT_FALSE(empty_value.ok());
  EXPECT_NE(empty_value.error().message.find("has no value"), std::string::npos);

  EXPECT_FALSE(workload::parse_workload_text("", "empty.yaml").ok());
  EXPECT_FALSE(workload::parse_workload_text("- 1\n- 2\n", "seq.yaml").ok());
  EXPECT_FALSE(workload::parse_workload_text("workloads: []\n", "none.yaml").ok());
  auto mixed = workload::parse_workload_text("workloads: [{num_heads: 8}]\nhead_dim_qk: 64\n", "mixed.yaml");
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.error().message.find("mixed.yaml:2:1:"), std::string::npos) << mixed.error().message;
}

TEST(WorkloadYaml, CompletionErrorsNameTheWorkload) {
  auto r = workload::parse_workload_text("name: gqa\nnum_heads: 16\nnum_gqa_groups: 5\n", "g.yaml");
  ASSERT_TRUE(r.ok());
  auto done = workload::finish_workload(r->front());
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.error().message.rfind("gqa: ", 0), 0u) << done.error().message;
}

TEST(WorkloadYaml, ShippedExamplesLoad) {
  auto dir = fixtures().parent_path().parent_path() / "packaging" / "workloads";
  auto llama = workload::load_workload_file(dir / "llama-3-8b.yaml");
  ASSERT_TRUE(llama.ok()) << llama.error().message;
  ASSERT_TRUE(workload::finish_workload(llama->front()).ok());
  EXPECT_EQ(llama->front().name, "llama-3-8b");
  EXPECT_EQ(llama->front().get("num_gqa_groups")->as_int(), 8);

  auto mla = workload::load_workload_file(dir / "deepseek-v3-mla.yaml");
  ASSERT_TRUE(mla.ok()) << mla.error().message;
  ASSERT_TRUE(workload::finish_workload(mla->front()).ok());
  EXPECT_EQ(mla->front().get("head_dim_qk")->as_int(), 192);
  EXPECT_EQ(mla->front().get("head_dim_v")->as_int(), 128);
}

TEST(WorkloadYaml, FileStemNamesUnnamedWorkloads) {
  auto dir = std::filesystem::temp_directory_path() / ("nvte-wl-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "two.yaml") << "workloads:\n  - {num_heads: 8}\n  - {num_heads: 4}\n";
  }
  auto r = workload::load_workload_file(dir / "two.yaml");
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)[0].name, "two[0]");
  EXPECT_EQ((*r)[1].name, "two[1]");
  auto missing = workload::load_workload_file(dir / "absent.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("absent.yaml"), std::string::npos);
}

TEST(WorkloadSettings, OverridesAndClearsAssumed) {
  auto r = workload::load_hf_config(fixtures() / "hf" / "deepseek-v3" / "config.json");
  ASSERT_TRUE(r.ok());
  auto& w = r->front();
  std::vector<std::string> settings = {"qkv_format=thd", "max_seqlen_q=16384", "window_size=128,0", "name=mine"};
  ASSERT_TRUE(workload::apply_workload_settings(w, settings).ok());
  EXPECT_FALSE(assumed(w, "qkv_format"));
  ASSERT_TRUE(workload::finish_workload(w).ok());
  EXPECT_EQ(w.name, "mine");
  EXPECT_EQ(w.get("qkv_layout")->as_string(), "thd_thd_thd");
  EXPECT_EQ(w.get("max_seqlen_q")->as_int(), 16384);
  EXPECT_EQ(w.get("window_size_left")->as_int(), 128);

  model::Workload empty;
  std::vector<std::string> no_eq = {"head_dim_qk"};
  auto e1 = workload::apply_workload_settings(empty, no_eq);
  ASSERT_FALSE(e1.ok());
  EXPECT_NE(e1.error().message.find("KEY=VALUE"), std::string::npos);
  std::vector<std::string> typo = {"num_head=4"};
  auto e2 = workload::apply_workload_settings(empty, typo);
  ASSERT_FALSE(e2.ok());
  EXPECT_NE(e2.error().message.find("did you mean 'num_heads'"), std::string::npos) << e2.error().message;
  std::vector<std::string> bad = {"is_training=maybe"};
  auto e3 = workload::apply_workload_settings(empty, bad);
  ASSERT_FALSE(e3.ok());
  EXPECT_NE(e3.error().message.find("is_training"), std::string::npos);
}

TEST(WorkloadSettings, SeqlenQMovesKvOfSelfAttentionOnly) {
  model::Workload self;
  std::vector<std::string> base = {"max_seqlen_q=8192", "max_seqlen_kv=8192"};
  ASSERT_TRUE(workload::apply_workload_settings(self, base).ok());
  std::vector<std::string> longer = {"max_seqlen_q=32768"};
  ASSERT_TRUE(workload::apply_workload_settings(self, longer).ok());
  EXPECT_EQ(self.get("max_seqlen_kv")->as_int(), 32768);

  model::Workload cross;
  std::vector<std::string> shapes = {"max_seqlen_q=448", "max_seqlen_kv=1500"};
  ASSERT_TRUE(workload::apply_workload_settings(cross, shapes).ok());
  std::vector<std::string> q_only = {"max_seqlen_q=512"};
  ASSERT_TRUE(workload::apply_workload_settings(cross, q_only).ok());
  EXPECT_EQ(cross.get("max_seqlen_kv")->as_int(), 1500);

  model::Workload both;
  ASSERT_TRUE(workload::apply_workload_settings(both, base).ok());
  std::vector<std::string> explicit_kv = {"max_seqlen_q=4096", "max_seqlen_kv=16384"};
  ASSERT_TRUE(workload::apply_workload_settings(both, explicit_kv).ok());
  EXPECT_EQ(both.get("max_seqlen_q")->as_int(), 4096);
  EXPECT_EQ(both.get("max_seqlen_kv")->as_int(), 16384);
}

TEST(WorkloadSettings, HeadDimQkMovesAnEqualHeadDimVOnly) {
  model::Workload mha;
  std::vector<std::string> base = {"head_dim_qk=64", "head_dim_v=64"};
  ASSERT_TRUE(workload::apply_workload_settings(mha, base).ok());
  std::vector<std::string> wider = {"head_dim_qk=128"};
  ASSERT_TRUE(workload::apply_workload_settings(mha, wider).ok());
  EXPECT_EQ(mha.get("head_dim_v")->as_int(), 128);

  model::Workload mla; // DeepSeek's 192/128 stays unequal
  std::vector<std::string> dims = {"head_dim_qk=192", "head_dim_v=128"};
  ASSERT_TRUE(workload::apply_workload_settings(mla, dims).ok());
  std::vector<std::string> qk = {"head_dim_qk=256"};
  ASSERT_TRUE(workload::apply_workload_settings(mla, qk).ok());
  EXPECT_EQ(mla.get("head_dim_v")->as_int(), 128);
}

// Each kind of workload input is told from its own markers, on the fixtures of each kind.
TEST(InputKind, SniffsEachKindOfWorkloadInput) {
  auto sniff = [](const std::string& relative) {
    std::ifstream in(fixtures() / relative);
    std::stringstream text;
    text << in.rdbuf();
    return workload::sniff_input_kind(text.str());
  };
  EXPECT_EQ(sniff("hf/llama-3-8b/config.json"), workload::InputKind::hf_config);
  EXPECT_EQ(sniff("megatron/llama3_8b.args"), workload::InputKind::megatron_args);
  EXPECT_EQ(sniff("megatron/deepseek_v3_cp.sh"), workload::InputKind::megatron_args);
  EXPECT_EQ(sniff("megatron/llama3_8b_nemo2.yaml"), workload::InputKind::megatron_args);
  EXPECT_EQ(sniff("te-logs/v2.12-hopper-post-scale-bias.log"), workload::InputKind::te_log);
  EXPECT_EQ(workload::sniff_input_kind("name: mla\nhead_dim_qk: 192\nqkv_dtype: bf16\n"), workload::InputKind::workload);
  EXPECT_EQ(workload::sniff_input_kind("hello\n"), workload::InputKind::unknown);
  EXPECT_EQ(workload::option_for(workload::InputKind::megatron_args), "--megatron-args");
}
