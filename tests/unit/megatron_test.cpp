// Megatron-LM launch scripts, argument files and Megatron-Bridge / NeMo 2 recipes as workloads:
// the fixtures under tests/fixtures/megatron/ are written the way Megatron-LM's own example
// scripts write their arguments (arrays, variables with defaults, strings, sbatch heredocs).
#include "workload/megatron.hpp"
#include "workload/workload_io.hpp"
#include "support/workload_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

using test_support::i;
using test_support::mentions;
using test_support::s;

namespace {

std::filesystem::path megatron_fixture(const std::string& name) {
  const char* dir = std::getenv("NVTE_TEST_FIXTURES");
  return (dir ? std::filesystem::path(dir) : std::filesystem::path("tests/fixtures")) / "megatron" / name;
}

workload::ScriptEnvironment env_of(std::map<std::string, std::string> values) {
  return [values = std::move(values)](std::string_view name) -> std::optional<std::string> {
    auto it = values.find(std::string(name));
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

std::vector<model::Workload> load(const std::string& name, std::map<std::string, std::string> env = {}) {
  auto r = workload::load_megatron_args(megatron_fixture(name), env_of(std::move(env)));
  EXPECT_TRUE(r.ok()) << name << ": " << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return {};
  for (auto& w : *r) EXPECT_TRUE(workload::finish_workload(w).ok()) << w.name;
  return std::move(*r);
}

std::vector<model::Workload> script(std::string_view text, std::map<std::string, std::string> env = {}) {
  auto r = workload::parse_megatron_script(text, "run.sh", env_of(std::move(env)), "run");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return {};
  for (auto& w : *r) EXPECT_TRUE(workload::finish_workload(w).ok()) << w.name;
  return std::move(*r);
}

std::string script_error(std::string_view text) {
  auto r = workload::parse_megatron_script(text, "run.sh", env_of({}), "run");
  return r.ok() ? std::string("(imported)") : r.error().message;
}

std::string yaml_error(std::string_view text) {
  auto r = workload::parse_megatron_yaml(text, "recipe.yaml", "recipe");
  return r.ok() ? std::string("(imported)") : r.error().message;
}

constexpr std::string_view k_gpt = "torchrun pretrain_gpt.py --num-attention-heads 32 --hidden-size 4096 --seq-length 4096 --bf16 ";

} // namespace

TEST(MegatronArgs, Llama3LaunchScriptWithFp8AndFusedBackend) {
  auto r = load("llama3_8b_fp8.sh");
  ASSERT_EQ(r.size(), 1u);
  const auto& w = r[0];
  EXPECT_EQ(w.name, "llama3_8b_fp8");
  EXPECT_EQ(i(w, "num_heads"), 32);
  EXPECT_EQ(i(w, "num_gqa_groups"), 8);
  EXPECT_EQ(i(w, "head_dim_qk"), 128);
  EXPECT_EQ(i(w, "max_seqlen_q"), 8192);
  EXPECT_EQ(s(w, "qkv_format"), "sbhd");
  EXPECT_EQ(s(w, "qkv_dtype"), "bf16");
  EXPECT_EQ(s(w, "attn_mask_type"), "causal");
  EXPECT_TRUE(w.get("fp8")->as_bool());                // --fp8-format hybrid, from the quoted array element
  EXPECT_EQ(s(w, "fp8_recipe"), "delayed");
  EXPECT_FALSE(w.get("fp8_dpa")->as_bool());           // attention itself stays bf16
  EXPECT_EQ(s(w, "attention_backend"), "fused");
  EXPECT_DOUBLE_EQ(w.get("attention_dropout")->as_double(), 0.0);
  EXPECT_FALSE(w.get("context_parallel")->as_bool());  // --context-parallel-size 1
  EXPECT_TRUE(mentions(w, "NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=1 NVTE_UNFUSED_ATTN=0"));
  EXPECT_TRUE(mentions(w, "ignored (--"));
}

TEST(MegatronArgs, MixtralScriptWithPositionalsAndEnvironmentDefaults) {
  auto r = load("mixtral_8x7b.sh");
  ASSERT_EQ(r.size(), 1u);
  const auto& w = r[0];
  EXPECT_EQ(i(w, "num_heads"), 32);
  EXPECT_EQ(i(w, "num_gqa_groups"), 8);
  EXPECT_EQ(i(w, "head_dim_qk"), 128); // --hidden-size 4096 / 32
  EXPECT_EQ(i(w, "max_seqlen_q"), 4096);
  EXPECT_EQ(s(w, "attention_backend"), "auto");
  EXPECT_TRUE(mentions(w, "not given") || mentions(w, "not set"));
}

TEST(MegatronArgs, DeepSeekV3MlaWithContextParallelism) {
  auto r = load("deepseek_v3_cp.sh");
  ASSERT_EQ(r.size(), 1u);
  const auto& w = r[0];
  EXPECT_EQ(i(w, "num_heads"), 128);
  EXPECT_EQ(i(w, "num_gqa_groups"), 128);
  EXPECT_EQ(i(w, "head_dim_qk"), 192);
  EXPECT_EQ(i(w, "head_dim_v"), 128);
  EXPECT_EQ(i(w, "max_seqlen_q"), 4096);
  EXPECT_EQ(i(w, "cp_size"), 2);
  EXPECT_EQ(s(w, "cp_comm_type"), "a2a");
  EXPECT_TRUE(w.get("context_parallel")->as_bool());
  EXPECT_TRUE(mentions(w, "each holding 2048 tokens in two chunks of 1024"));

  // The script's ${SEQ:-4096} and ${CP:-2} read the environment first.
  auto longer = load("deepseek_v3_cp.sh", {{"SEQ", "16384"}, {"CP", "4"}});
  ASSERT_EQ(longer.size(), 1u);
  EXPECT_EQ(i(longer[0], "max_seqlen_q"), 16384);
  EXPECT_EQ(i(longer[0], "cp_size"), 4);

  auto odd = workload::load_megatron_args(megatron_fixture("deepseek_v3_cp.sh"), env_of({{"CP", "3"}}));
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("deepseek_v3_cp.sh:15: --seq-length 4096 is not a multiple of 2 * --context-parallel-size 3"),
            std::string::npos)
      << odd.error().message;
}

TEST(MegatronArgs, BareArgumentFile) {
  auto r = load("llama3_8b.args");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].name, "llama3_8b");
  EXPECT_EQ(i(r[0], "batch_size"), 2);
  EXPECT_EQ(i(r[0], "cp_size"), 2);
  EXPECT_EQ(s(r[0], "cp_comm_type"), "all_gather");
}

TEST(MegatronArgs, WindowSkipFrequencyGivesSlidingAndGlobalVariants) {
  auto r = load("gpt_oss_windows.sh");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].name, "gpt_oss_windows/sliding");
  EXPECT_EQ(r[1].name, "gpt_oss_windows/global");
  EXPECT_EQ(s(r[0], "window_size"), "127,0");
  EXPECT_EQ(s(r[1], "window_size"), "-1,0");
  for (const auto& w : r) EXPECT_EQ(s(w, "softmax_type"), "learnable") << w.name;
  EXPECT_TRUE(mentions(r[0], "12 of 24 layers (1, 3, 5"));

  // An explicit pattern and per-layer CP communication types.
  auto layered = script(std::string(k_gpt) + "--num-layers 4 --window-size 64,0 --window-attn-skip-freq '[1,1,0,0]' "
                                             "--context-parallel-size 2 --cp-comm-type p2p p2p a2a a2a");
  ASSERT_EQ(layered.size(), 2u);
  EXPECT_EQ(layered[0].name, "run/sliding-cp-p2p");
  EXPECT_EQ(layered[1].name, "run/global-cp-a2a");
  EXPECT_EQ(s(layered[1], "cp_comm_type"), "a2a");
}

TEST(MegatronArgs, BridgeAndNemo2Recipes) {
  auto bridge = load("deepseek_v3_bridge.yaml");
  ASSERT_EQ(bridge.size(), 1u);
  const auto& w = bridge[0];
  EXPECT_EQ(i(w, "head_dim_qk"), 192);
  EXPECT_EQ(i(w, "num_gqa_groups"), 128);
  EXPECT_EQ(i(w, "cp_size"), 4);
  EXPECT_EQ(s(w, "cp_comm_type"), "p2p");
  EXPECT_TRUE(w.get("fp8")->as_bool()); // mixed_precision.fp8 wins over model.fp8: null
  EXPECT_EQ(s(w, "fp8_recipe"), "block");
  EXPECT_EQ(s(w, "qkv_dtype"), "bf16");
  EXPECT_TRUE(mentions(w, "model.seq_length 4096 over 4 ranks"));

  auto nemo = load("llama3_8b_nemo2.yaml");
  ASSERT_EQ(nemo.size(), 1u);
  EXPECT_EQ(i(nemo[0], "num_gqa_groups"), 8);
  EXPECT_EQ(i(nemo[0], "cp_size"), 2);
  EXPECT_EQ(s(nemo[0], "qkv_dtype"), "bf16"); // trainer.plugins.precision: bf16-mixed
  EXPECT_EQ(i(nemo[0], "max_seqlen_q"), 8192);
}

TEST(MegatronArgs, ModelKinds) {
  auto t5 = script("python pretrain_t5.py --num-attention-heads 12 --kv-channels 64 --encoder-seq-length 512 "
                   "--decoder-seq-length 128 --seq-length 512 --fp16");
  ASSERT_EQ(t5.size(), 3u);
  EXPECT_EQ(t5[0].name, "run/encoder");
  EXPECT_EQ(s(t5[0], "attn_mask_type"), "padding");
  EXPECT_EQ(s(t5[1], "attn_mask_type"), "padding_causal");
  EXPECT_EQ(i(t5[2], "max_seqlen_q"), 128);
  EXPECT_EQ(i(t5[2], "max_seqlen_kv"), 512);
  EXPECT_EQ(s(t5[0], "qkv_dtype"), "fp16");

  auto bert = script("python pretrain_bert.py --num-attention-heads 16 --hidden-size 1024 --seq-length 512");
  ASSERT_EQ(bert.size(), 1u);
  EXPECT_EQ(s(bert[0], "attn_mask_type"), "padding");
  EXPECT_EQ(s(bert[0], "qkv_dtype"), "fp32"); // neither --bf16 nor --fp16
  EXPECT_DOUBLE_EQ(bert[0].get("attention_dropout")->as_double(), 0.1); // Megatron's default

  auto hybrid = script("python pretrain_mamba.py --num-attention-heads 32 --hidden-size 4096 --seq-length 8192 --bf16 "
                       "--hybrid-override-pattern 'M-M*|-M-M*-/*-'");
  ASSERT_EQ(hybrid.size(), 1u);
  EXPECT_TRUE(mentions(hybrid[0], "2 of 10 layers (4, 9")); // '|' separates stages, '/' starts the MTP layers
  EXPECT_NE(script_error("python pretrain_mamba.py --num-attention-heads 32 --hidden-size 4096 --seq-length 8192 "
                         "--hybrid-override-pattern 'M-M-'").find("none of the 4 layers is attention"),
            std::string::npos);
}

TEST(MegatronArgs, MalformedValuesNameTheArgument) {
  EXPECT_NE(script_error(std::string(k_gpt) + "--kv-channels 4k").find("run.sh:1: --kv-channels: '4k' is not an integer"), std::string::npos)
      << script_error(std::string(k_gpt) + "--kv-channels 4k");
  EXPECT_NE(script_error(std::string(k_gpt) + "--attention-backend fastest").find("--attention-backend: 'fastest' is not one of flash"),
            std::string::npos);
  EXPECT_NE(script_error(std::string(k_gpt) + "--micro-batch-size").find("--micro-batch-size: has no value"), std::string::npos);
  EXPECT_NE(script_error(std::string(k_gpt) + "--micro-batch-size --lr 1").find("--micro-batch-size: has no value"), std::string::npos);
  EXPECT_NE(script_error(std::string(k_gpt) + "--window-size 128").find("--window-size: '128' is not LEFT,RIGHT"), std::string::npos);
  EXPECT_NE(script_error(std::string(k_gpt) + "--bf16=1").find("--bf16: takes no value"), std::string::npos);
  EXPECT_NE(script_error(std::string(k_gpt) + "--micro-batch-size $MBS").find("--micro-batch-size: its value is unknown: $MBS is set neither"),
            std::string::npos)
      << script_error(std::string(k_gpt) + "--micro-batch-size $MBS");
  EXPECT_NE(script_error("if [ -f /x ]; then A=(--context-parallel-size 2); fi\n" + std::string(k_gpt) + "${A[@]}")
                .find("--context-parallel-size: inside the if at line 1"),
            std::string::npos);
}

TEST(MegatronArgs, CombinationsMegatronRefusesAreErrors) {
  EXPECT_NE(script_error(std::string(k_gpt) + "--attention-backend local").find("Megatron-Core's own PyTorch attention"), std::string::npos);
  EXPECT_NE(script_error(std::string(k_gpt) + "--transformer-impl local").find("not TransformerEngine's"), std::string::npos);
  EXPECT_NE(script_error(std::string(k_gpt) + "--fp16").find("refuses --fp16 together with --bf16"), std::string::npos);
  EXPECT_NE(script_error(std::string(k_gpt) + "--context-parallel-size 2 --cp-comm-type a2a+p2p").find("--hierarchical-context-parallel-sizes"),
            std::string::npos);
  EXPECT_NE(script_error(std::string(k_gpt) + "--context-parallel-size 4 --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 3")
                .find("the sizes multiply to 6, not --context-parallel-size 4"),
            std::string::npos);
  auto hierarchical = script(std::string(k_gpt) + "--context-parallel-size 4 --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 2");
  ASSERT_EQ(hierarchical.size(), 1u);
  EXPECT_EQ(s(hierarchical[0], "cp_comm_type"), "a2a+p2p");
  EXPECT_NE(script_error("python pretrain_mamba.py --num-attention-heads 32 --hidden-size 4096 --seq-length 8192 "
                         "--hybrid-override-pattern 'M*X'").find("'X' is not a layer symbol"),
            std::string::npos);
  EXPECT_NE(script_error("python pretrain_gpt.py --hidden-size 4096 --seq-length 4096").find("no --num-attention-heads"), std::string::npos);
  EXPECT_NE(script_error("echo nothing here").find("no Megatron-LM arguments found"), std::string::npos);
  EXPECT_NE(script_error(std::string(k_gpt) + "--multi-latent-attention --group-query-attention").find("refuses group query attention"),
            std::string::npos);
  // --num-query-groups without --group-query-attention does nothing, as in Megatron.
  auto mha = script(std::string(k_gpt) + "--num-query-groups 8");
  ASSERT_EQ(mha.size(), 1u);
  EXPECT_EQ(i(mha[0], "num_gqa_groups"), 32);
}

TEST(MegatronArgs, RecipeErrorsPointAtTheKey) {
  const char* bad_length = "model:\n  num_attention_heads: 32\n  hidden_size: 4096\n  seq_length: long\n";
  EXPECT_NE(yaml_error(bad_length).find("recipe.yaml:4:15: model.seq_length: 'long' is not an integer"), std::string::npos)
      << yaml_error(bad_length);
  EXPECT_NE(yaml_error("model:\n  num_attention_heads: 32\n  seq_length: 4096\n").find("neither kv_channels nor hidden_size"),
            std::string::npos);
  EXPECT_NE(yaml_error("model: [unclosed\n").find("recipe.yaml:"), std::string::npos);
  EXPECT_NE(yaml_error("- a\n- b\n").find("a recipe must be a YAML mapping"), std::string::npos);
  EXPECT_NE(yaml_error("model:\n  _target_: x.Llama3Config8B\n").find("no Megatron-LM arguments found"), std::string::npos);
}



// Packed sequences: a recipe that says so gives thd with a padding causal mask; arguments that
// do not say so leave the layout unpacked and a note on how to check the packed variant.
TEST(MegatronArgs, PackedSequencesFromRecipesAndUnknownPackingElsewhere) {
  auto bridge = load("llama3_8b_packed_bridge.yaml");
  ASSERT_EQ(bridge.size(), 1u);
  EXPECT_EQ(bridge[0].get("qkv_format")->to_string(), "thd");
  EXPECT_EQ(bridge[0].get("attn_mask_type")->to_string(), "padding_causal");
  EXPECT_TRUE(std::any_of(bridge[0].notes.begin(), bridge[0].notes.end(),
                          [](const std::string& n) { return n.find("packed_sequence_size") != std::string::npos; }));
  auto verl = load("qwen2_7b_verl.yaml");
  ASSERT_EQ(verl.size(), 1u);
  EXPECT_EQ(verl[0].get("qkv_format")->to_string(), "thd");
  EXPECT_EQ(verl[0].get("attn_mask_type")->to_string(), "padding_causal");
  EXPECT_TRUE(std::any_of(verl[0].notes.begin(), verl[0].notes.end(),
                          [](const std::string& n) { return n.find("use_remove_padding") != std::string::npos; }));

  auto plain = load("llama3_8b.args");
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(plain[0].get("qkv_format")->to_string(), "sbhd");
  EXPECT_EQ(plain[0].get("attn_mask_type")->to_string(), "causal");
  ASSERT_FALSE(plain[0].notes.empty());
  EXPECT_TRUE(plain[0].notes.front().starts_with("packing unknown")) << plain[0].notes.front();
  EXPECT_NE(plain[0].notes.front().find("--workload-set qkv_format=thd --workload-set attn_mask_type=padding_causal"), std::string::npos);
  // A recipe that turns packing off (size -1) leaves the batch unpacked.
  auto off = workload::parse_megatron_yaml("model:\n  num_attention_heads: 8\n  kv_channels: 64\n  seq_length: 1024\n"
                                           "dataset:\n  packed_sequence_specs:\n    packed_sequence_size: -1\n",
                                           "off.yaml", "off");
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_EQ((*off)[0].get("qkv_format")->to_string(), "sbhd");
}
