// The Hugging Face config.json importer, family by family, on fixtures written by hand from the
// published configs (tests/fixtures/hf/<model>/config.json): heads, GQA groups, head dims,
// sequence lengths, windows, masks, softmax type, bias, soft-capping, and the per-variant names
// of models whose layers attend differently.
#include "workload/hf_config.hpp"
#include "workload/workload_io.hpp"
#include "support/workload_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

using test_support::assumed;
using test_support::fixtures;
using test_support::i;
using test_support::mentions;
using test_support::s;

namespace {

// The completed workloads of a fixture; fails the test when it does not import.
std::vector<model::Workload> model_workloads(const std::string& name) {
  auto r = workload::load_hf_config(fixtures() / "hf" / name / "config.json");
  EXPECT_TRUE(r.ok()) << name << ": " << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return {};
  for (auto& w : *r) EXPECT_TRUE(workload::finish_workload(w).ok()) << w.name;
  return std::move(*r);
}

std::vector<model::Workload> inline_workloads(std::string_view json) {
  auto r = workload::parse_hf_config(json, "inline/config.json");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return {};
  for (auto& w : *r) EXPECT_TRUE(workload::finish_workload(w).ok()) << w.name;
  return std::move(*r);
}

std::string hf_error(std::string_view json) {
  auto r = workload::parse_hf_config(json, "inline/config.json");
  return r.ok() ? std::string("(imported)") : r.error().message;
}

// heads/groups, head dims qk/v, seqlen q/kv, mask, window.
void expect_shape(const model::Workload& w, std::int64_t heads, std::int64_t groups, std::int64_t dqk, std::int64_t dv,
                  std::int64_t seqlen, std::string_view mask, std::string_view window) {
  SCOPED_TRACE(w.name);
  EXPECT_EQ(i(w, "num_heads"), heads);
  EXPECT_EQ(i(w, "num_gqa_groups"), groups);
  EXPECT_EQ(i(w, "head_dim_qk"), dqk);
  EXPECT_EQ(i(w, "head_dim_v"), dv);
  EXPECT_EQ(i(w, "max_seqlen_q"), seqlen);
  EXPECT_EQ(i(w, "max_seqlen_kv"), seqlen);
  EXPECT_EQ(s(w, "attn_mask_type"), mask);
  EXPECT_EQ(s(w, "window_size"), window);
}

} // namespace

TEST(HfConfig, Llama3AndLlama31) {
  auto llama3 = model_workloads("llama-3-8b");
  ASSERT_EQ(llama3.size(), 1u);
  const auto& w = llama3[0];
  EXPECT_EQ(w.name, "llama-3-8b");
  expect_shape(w, 32, 8, 128, 128, 8192, "causal", "-1,0");
  EXPECT_EQ(s(w, "qkv_dtype"), "bf16");
  EXPECT_EQ(s(w, "qkv_layout"), "bshd_bshd_bshd");
  EXPECT_EQ(s(w, "softmax_type"), "vanilla");
  EXPECT_FALSE(assumed(w, "qkv_dtype")); // torch_dtype said so
  EXPECT_TRUE(assumed(w, "qkv_format"));
  EXPECT_TRUE(assumed(w, "attn_mask_type"));
  EXPECT_TRUE(assumed(w, "is_training"));
  EXPECT_FALSE(mentions(w, "max_position_embeddings")); // 8192 is not capped

  auto llama31 = model_workloads("llama-3.1-8b");
  ASSERT_EQ(llama31.size(), 1u);
  expect_shape(llama31[0], 32, 8, 128, 128, 8192, "causal", "-1,0");
  EXPECT_TRUE(mentions(llama31[0], "max_position_embeddings is 131072"));
}

TEST(HfConfig, Llama4ChunkedAndGlobalLayers) {
  auto r = model_workloads("llama-4-scout-17b-16e");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].name, "llama-4-scout-17b-16e/chunked");
  EXPECT_EQ(r[1].name, "llama-4-scout-17b-16e/global");
  expect_shape(r[0], 40, 8, 128, 128, 8192, "causal", "-1,0");
  EXPECT_EQ(i(r[0], "attention_chunk_size"), 8192);
  EXPECT_EQ(i(r[1], "attention_chunk_size"), 0);
  EXPECT_TRUE(mentions(r[0], "36 of 48 layers"));
  EXPECT_TRUE(mentions(r[1], "12 of 48 layers (3, 7, 11"));
  EXPECT_TRUE(mentions(r[0], "plain causal attention")); // 8192 tokens fit one chunk
  EXPECT_TRUE(mentions(r[0], "text_config"));
}

TEST(HfConfig, MistralWindowMixtralNone) {
  auto mistral = model_workloads("mistral-7b-v0.1");
  ASSERT_EQ(mistral.size(), 1u);
  expect_shape(mistral[0], 32, 8, 128, 128, 8192, "causal", "4096,0");
  EXPECT_EQ(i(mistral[0], "window_size_left"), 4096);
  EXPECT_EQ(i(mistral[0], "window_size_right"), 0);

  auto mixtral = model_workloads("mixtral-8x7b");
  ASSERT_EQ(mixtral.size(), 1u);
  expect_shape(mixtral[0], 32, 8, 128, 128, 8192, "causal", "-1,0"); // sliding_window: null
  EXPECT_TRUE(mentions(mixtral[0], "32768"));
}

TEST(HfConfig, QwenFamilies) {
  auto qwen25 = model_workloads("qwen2.5-7b");
  ASSERT_EQ(qwen25.size(), 1u);
  expect_shape(qwen25[0], 28, 4, 128, 128, 8192, "causal", "-1,0"); // use_sliding_window: false

  auto qwen3 = model_workloads("qwen3-4b");
  ASSERT_EQ(qwen3.size(), 1u);
  expect_shape(qwen3[0], 32, 8, 128, 128, 8192, "causal", "-1,0");
  EXPECT_TRUE(mentions(qwen3[0], "head_dim 128 is given explicitly (hidden_size / num_attention_heads would be 80)"));

  auto moe = model_workloads("qwen3-30b-a3b");
  ASSERT_EQ(moe.size(), 1u);
  expect_shape(moe[0], 32, 4, 128, 128, 8192, "causal", "-1,0");

  // Qwen2 with use_sliding_window: the window from layer max_window_layers on.
  auto windowed = inline_workloads(R"({"model_type": "qwen2", "num_attention_heads": 28, "num_key_value_heads": 4,
    "hidden_size": 3584, "num_hidden_layers": 28, "sliding_window": 4096, "use_sliding_window": true, "max_window_layers": 21,
    "max_position_embeddings": 32768})");
  ASSERT_EQ(windowed.size(), 2u);
  EXPECT_EQ(windowed[0].name, "inline/global");
  EXPECT_EQ(windowed[1].name, "inline/sliding");
  EXPECT_EQ(s(windowed[1], "window_size"), "4096,0");
  EXPECT_TRUE(mentions(windowed[1], "7 of 28 layers (21, 22"));
}

TEST(HfConfig, HybridsKeepTheirAttentionLayersOnly) {
  auto next = model_workloads("qwen3-next-80b-a3b");
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].name, "qwen3-next-80b-a3b");
  expect_shape(next[0], 16, 2, 256, 256, 8192, "causal", "-1,0");
  EXPECT_TRUE(mentions(next[0], "12 of 48 layers (3, 7, 11"));
  EXPECT_TRUE(mentions(next[0], "36 of 48 layers are Gated DeltaNet linear attention"));

  auto jamba = model_workloads("jamba-v0.1");
  ASSERT_EQ(jamba.size(), 1u);
  expect_shape(jamba[0], 32, 8, 128, 128, 8192, "causal", "-1,0");
  EXPECT_TRUE(mentions(jamba[0], "4 of 32 layers (4, 12, 20, 28)"));
  EXPECT_TRUE(mentions(jamba[0], "28 of 32 layers are Mamba"));

  auto zamba = model_workloads("zamba2-2.7b");
  ASSERT_EQ(zamba.size(), 1u);
  expect_shape(zamba[0], 32, 32, 160, 160, 4096, "causal", "-1,0"); // 2 * 2560 / 32, not kv_channels 80
  EXPECT_TRUE(mentions(zamba[0], "9 of 54 layers (6, 12"));

  auto nemotron = model_workloads("nemotron-h-8b");
  ASSERT_EQ(nemotron.size(), 1u);
  expect_shape(nemotron[0], 32, 8, 128, 128, 8192, "causal", "-1,0");
  EXPECT_TRUE(mentions(nemotron[0], "4 of 52 layers (7, 18, 29, 40)"));
  EXPECT_TRUE(mentions(nemotron[0], "hybrid_override_pattern"));

  EXPECT_NE(hf_error(R"({"model_type": "nemotron_h", "num_attention_heads": 32, "hidden_size": 4096,
    "hybrid_override_pattern": "M-M-M-"})")
                .find("none of the 6 layers attends"),
            std::string::npos);
}

TEST(HfConfig, Gemma2SlidingAndGlobalWithSoftcapping) {
  auto r = model_workloads("gemma-2-9b");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].name, "gemma-2-9b/sliding");
  EXPECT_EQ(r[1].name, "gemma-2-9b/global");
  expect_shape(r[0], 16, 8, 256, 256, 8192, "causal", "4096,0");
  expect_shape(r[1], 16, 8, 256, 256, 8192, "causal", "-1,0");
  for (const auto& w : r) {
    EXPECT_DOUBLE_EQ(w.get("attn_logit_softcapping")->as_double(), 50.0) << w.name;
    EXPECT_EQ(s(w, "qkv_dtype"), "bf16");
    EXPECT_TRUE(assumed(w, "qkv_dtype")) << "float32 storage, bf16 assumed";
    EXPECT_TRUE(mentions(w, "final_logit_softcapping 30.0 caps the LM head"));
  }
  EXPECT_TRUE(mentions(r[0], "21 of 42 layers (0, 2, 4"));
  EXPECT_TRUE(mentions(r[1], "21 of 42 layers (1, 3, 5"));
}

TEST(HfConfig, Gemma3FiveSlidingToOneGlobal) {
  auto r = model_workloads("gemma-3-12b");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].name, "gemma-3-12b/sliding");
  expect_shape(r[0], 16, 8, 256, 256, 8192, "causal", "1024,0");
  expect_shape(r[1], 16, 8, 256, 256, 8192, "causal", "-1,0");
  EXPECT_TRUE(mentions(r[0], "40 of 48 layers"));
  EXPECT_TRUE(mentions(r[1], "8 of 48 layers (5, 11, 17"));
  EXPECT_DOUBLE_EQ(r[0].get("attn_logit_softcapping")->as_double(), 0.0); // null in Gemma 3
  EXPECT_TRUE(mentions(r[0], "vision encoder's is not imported"));
}

TEST(HfConfig, Phi3WindowPhi4None) {
  auto phi3 = model_workloads("phi-3-mini-4k");
  ASSERT_EQ(phi3.size(), 1u);
  EXPECT_EQ(phi3[0].name, "Phi-3-mini-4k-instruct"); // _name_or_path
  expect_shape(phi3[0], 32, 32, 96, 96, 4096, "causal", "2047,0");

  auto phi4 = model_workloads("phi-4");
  ASSERT_EQ(phi4.size(), 1u);
  expect_shape(phi4[0], 40, 10, 128, 128, 8192, "causal", "-1,0");

  // A window as long as the context windows nothing (Phi-3-mini-128k).
  auto long_window = inline_workloads(R"({"model_type": "phi3", "num_attention_heads": 32, "hidden_size": 3072,
    "num_hidden_layers": 32, "max_position_embeddings": 131072, "sliding_window": 262144})");
  ASSERT_EQ(long_window.size(), 1u);
  EXPECT_EQ(s(long_window[0], "window_size"), "-1,0");
  EXPECT_TRUE(mentions(long_window[0], "not shorter than the context"));
}

TEST(HfConfig, MultiHeadLatentAttention) {
  auto v3 = model_workloads("deepseek-v3");
  ASSERT_EQ(v3.size(), 1u);
  expect_shape(v3[0], 128, 128, 192, 128, 8192, "causal", "-1,0");
  EXPECT_TRUE(mentions(v3[0], "latent"));
  EXPECT_TRUE(mentions(v3[0], "163840"));

  auto lite = model_workloads("deepseek-v2-lite");
  ASSERT_EQ(lite.size(), 1u);
  expect_shape(lite[0], 16, 16, 192, 128, 8192, "causal", "-1,0");

  auto kimi = model_workloads("kimi-k2");
  ASSERT_EQ(kimi.size(), 1u);
  expect_shape(kimi[0], 64, 64, 192, 128, 8192, "causal", "-1,0");
}

TEST(HfConfig, GptOssSinksAndAlternatingWindows) {
  auto r = model_workloads("gpt-oss-20b");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].name, "gpt-oss-20b/sliding");
  EXPECT_EQ(r[1].name, "gpt-oss-20b/global");
  expect_shape(r[0], 64, 8, 64, 64, 8192, "causal", "128,0");
  expect_shape(r[1], 64, 8, 64, 64, 8192, "causal", "-1,0");
  for (const auto& w : r) {
    EXPECT_EQ(s(w, "softmax_type"), "learnable") << w.name;
    EXPECT_TRUE(mentions(w, "attention sinks"));
  }
  EXPECT_TRUE(mentions(r[0], "12 of 24 layers"));
}

TEST(HfConfig, Glm4) {
  auto r = model_workloads("glm-4-9b-0414");
  ASSERT_EQ(r.size(), 1u);
  expect_shape(r[0], 32, 2, 128, 128, 8192, "causal", "-1,0");

  // The older ChatGLM config of GLM-4-9B: multi_query_group_num, kv_channels, seq_length.
  auto chatglm = inline_workloads(R"({"model_type": "chatglm", "num_attention_heads": 32, "hidden_size": 4096,
    "multi_query_attention": true, "multi_query_group_num": 2, "kv_channels": 128, "num_layers": 40, "seq_length": 131072})");
  ASSERT_EQ(chatglm.size(), 1u);
  expect_shape(chatglm[0], 32, 2, 128, 128, 8192, "causal", "-1,0");
}

TEST(HfConfig, EncodersAreBidirectional) {
  auto bert = model_workloads("bert-base-uncased");
  ASSERT_EQ(bert.size(), 1u);
  expect_shape(bert[0], 12, 12, 64, 64, 512, "no_mask", "-1,-1");
  EXPECT_DOUBLE_EQ(bert[0].get("attention_dropout")->as_double(), 0.1); // attention_probs_dropout_prob
  EXPECT_TRUE(mentions(bert[0], "bidirectional"));

  auto roberta = model_workloads("roberta-base");
  ASSERT_EQ(roberta.size(), 1u);
  expect_shape(roberta[0], 12, 12, 64, 64, 512, "no_mask", "-1,-1"); // 514 positions, 512 tokens
  EXPECT_TRUE(mentions(roberta[0], "514"));

  auto vit = model_workloads("vit-base-patch16-224");
  ASSERT_EQ(vit.size(), 1u);
  expect_shape(vit[0], 12, 12, 64, 64, 197, "no_mask", "-1,-1"); // (224/16)^2 + class token
  EXPECT_TRUE(mentions(vit[0], "(224 / 16)^2 + 1 = 197"));

  auto modernbert = inline_workloads(R"({"model_type": "modernbert", "num_attention_heads": 12, "hidden_size": 768,
    "num_hidden_layers": 22, "global_attn_every_n_layers": 3, "local_attention": 128, "max_position_embeddings": 8192})");
  ASSERT_EQ(modernbert.size(), 2u);
  EXPECT_EQ(modernbert[0].name, "inline/global");
  expect_shape(modernbert[1], 12, 12, 64, 64, 8192, "no_mask", "64,64");
}

TEST(HfConfig, T5EncoderDecoderAndCrossAttention) {
  auto r = model_workloads("t5-base");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].name, "t5-base/encoder");
  EXPECT_EQ(r[1].name, "t5-base/decoder");
  EXPECT_EQ(r[2].name, "t5-base/cross");
  expect_shape(r[0], 12, 12, 64, 64, 512, "no_mask", "-1,-1");
  expect_shape(r[1], 12, 12, 64, 64, 512, "causal", "-1,0");
  expect_shape(r[2], 12, 12, 64, 64, 512, "no_mask", "-1,-1");
  EXPECT_EQ(s(r[0], "core_attention_bias_type"), "post_scale_bias");
  EXPECT_EQ(s(r[1], "core_attention_bias_type"), "post_scale_bias");
  EXPECT_EQ(s(r[2], "core_attention_bias_type"), "no_bias");
  for (const auto& w : r) EXPECT_DOUBLE_EQ(w.get("attention_dropout")->as_double(), 0.1) << w.name;

  // Whisper: decoder queries (448) attend to the encoder's 1500 frames.
  auto whisper = inline_workloads(R"({"model_type": "whisper", "is_encoder_decoder": true, "d_model": 1280,
    "encoder_attention_heads": 20, "decoder_attention_heads": 20, "encoder_layers": 32, "decoder_layers": 32,
    "max_source_positions": 1500, "max_target_positions": 448, "torch_dtype": "float16"})");
  ASSERT_EQ(whisper.size(), 3u);
  EXPECT_EQ(i(whisper[2], "max_seqlen_q"), 448);
  EXPECT_EQ(i(whisper[2], "max_seqlen_kv"), 1500);
  EXPECT_EQ(s(whisper[2], "qkv_dtype"), "fp16");
  EXPECT_EQ(s(whisper[0], "core_attention_bias_type"), "no_bias");
}

TEST(HfConfig, AlibiAndMultiQuery) {
  auto bloom = model_workloads("bloom-560m");
  ASSERT_EQ(bloom.size(), 1u);
  expect_shape(bloom[0], 16, 16, 64, 64, 4096, "causal", "-1,0");
  EXPECT_EQ(s(bloom[0], "core_attention_bias_type"), "alibi");
  EXPECT_TRUE(assumed(bloom[0], "max_seqlen_q")); // BLOOM names no context length

  auto falcon = inline_workloads(R"({"model_type": "falcon", "num_attention_heads": 71, "hidden_size": 4544,
    "multi_query": true, "alibi": false, "max_position_embeddings": 2048})");
  ASSERT_EQ(falcon.size(), 1u);
  expect_shape(falcon[0], 71, 1, 64, 64, 2048, "causal", "-1,0");
  EXPECT_EQ(s(falcon[0], "core_attention_bias_type"), "no_bias");

  auto mpt = inline_workloads(R"({"model_type": "mpt", "n_heads": 32, "d_model": 4096, "max_seq_len": 2048,
    "attn_config": {"alibi": true, "attn_pdrop": 0.0}})");
  ASSERT_EQ(mpt.size(), 1u);
  EXPECT_EQ(s(mpt[0], "core_attention_bias_type"), "alibi");
  EXPECT_EQ(i(mpt[0], "max_seqlen_q"), 2048);
}

TEST(HfConfig, AttentionFreeAndUnknownLayersAreErrors) {
  auto mamba = workload::load_hf_config(fixtures() / "hf" / "mamba-130m" / "config.json");
  ASSERT_FALSE(mamba.ok());
  EXPECT_NE(mamba.error().message.find("mamba-130m/config.json: model_type \"mamba\" has no attention layers"), std::string::npos)
      << mamba.error().message;

  EXPECT_NE(hf_error(R"({"hidden_size": 768, "state_size": 16, "num_hidden_layers": 24})").find("attention-free"), std::string::npos);
  EXPECT_NE(hf_error(R"({"model_type": "x", "num_attention_heads": 8, "hidden_size": 512,
    "layer_types": ["full_attention", "banded_attention"]})")
                .find("layer 1 is of kind 'banded_attention'"),
            std::string::npos);
  EXPECT_NE(hf_error(R"({"model_type": "x", "num_attention_heads": 8, "hidden_size": 512,
    "layer_types": ["sliding_attention", "full_attention"]})")
                .find("no positive sliding_window"),
            std::string::npos);
  EXPECT_NE(hf_error(R"({"model_type": "zamba2", "num_attention_heads": 32, "hidden_size": 2560})").find("layers_block_type"),
            std::string::npos);
}

TEST(HfConfig, BadConfigsFailWithTheFileAndKey) {
  auto syntax = workload::parse_hf_config("{\n  \"num_attention_heads\": 32,\n  oops\n}", "bad.json");
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(syntax.error().message.rfind("bad.json:3:", 0), 0u) << syntax.error().message;

  EXPECT_NE(hf_error(R"({"hidden_size": 4096})").find("num_attention_heads"), std::string::npos);
  EXPECT_NE(hf_error(R"({"hidden_size": 4000, "num_attention_heads": 48})").find("divisible"), std::string::npos);
  EXPECT_NE(hf_error("[1, 2]").find("JSON object"), std::string::npos);
  // nlohmann throws out_of_range (not parse_error) for it; found by fuzzing.
  EXPECT_NE(hf_error(R"({"num_attention_heads": 32, "hidden_size": 1e99999})").find("inline/config.json"), std::string::npos);

  auto uncapped = workload::parse_hf_config(R"({"model_type": "qwen3", "num_attention_heads": 32, "num_key_value_heads": 8,
    "hidden_size": 4096, "head_dim": 128, "max_position_embeddings": 40960, "dtype": "bfloat16"})",
                                            "qwen3.json", workload::HfOptions{.max_seqlen_cap = 0});
  ASSERT_TRUE(uncapped.ok());
  ASSERT_TRUE(workload::finish_workload(uncapped->front()).ok());
  EXPECT_EQ(uncapped->front().get("max_seqlen_q")->as_int(), 40960);
  EXPECT_EQ(uncapped->front().name, "qwen3");
}



// config.json never says whether the trainer packs sequences: the first note says so and how to
// check the packed variant; an encoder (no causal packing question) has no such note.
TEST(HfConfig, PackingIsUnknownAndTheNoteSaysHowToCheckIt) {
  auto llama = model_workloads("llama-3-8b");
  ASSERT_FALSE(llama.empty());
  ASSERT_FALSE(llama[0].notes.empty());
  EXPECT_TRUE(llama[0].notes.front().starts_with("packing unknown")) << llama[0].notes.front();
  EXPECT_TRUE(mentions(llama[0], "--workload-set qkv_format=thd --workload-set attn_mask_type=padding_causal"));
  auto bert = model_workloads("bert-base-uncased");
  ASSERT_FALSE(bert.empty());
  EXPECT_FALSE(mentions(bert[0], "packing unknown"));
}
