#include "model/workload.hpp"

#include <gtest/gtest.h>

using model::Workload;

TEST(WorkloadModel, DefaultsFollowTeAndAreRecordedAsAssumed) {
  Workload w;
  ASSERT_TRUE(w.set_text("qkv_format", "bshd").ok());
  ASSERT_TRUE(w.set_text("attn_mask_type", "causal").ok());
  ASSERT_TRUE(w.set_text("head_dim_qk", "192").ok());
  ASSERT_TRUE(w.complete().ok());
  EXPECT_EQ(w.get("qkv_layout")->as_string(), "bshd_bshd_bshd");
  EXPECT_EQ(w.get("head_dim_v")->as_int(), 192);
  EXPECT_EQ(w.get("window_size")->as_string(), "-1,0");
  EXPECT_EQ(w.get("window_size_right")->as_int(), 0);
  EXPECT_EQ(w.get("qkv_dtype")->as_string(), "bf16");
  EXPECT_NE(std::find(w.assumed.begin(), w.assumed.end(), "qkv_dtype"), w.assumed.end());
}

TEST(WorkloadModel, LayoutGivesFormat) {
  Workload w;
  ASSERT_TRUE(w.set_text("qkv_layout", "sbh3d").ok());
  ASSERT_TRUE(w.complete().ok());
  EXPECT_EQ(w.get("qkv_format")->as_string(), "sbhd");
  Workload t;
  ASSERT_TRUE(t.set_text("qkv_layout", "thd_t2hd").ok());
  ASSERT_TRUE(t.complete().ok());
  EXPECT_EQ(t.get("qkv_format")->as_string(), "thd");
}

TEST(WorkloadModel, InvalidValuesAreClearErrors) {
  Workload zero;
  ASSERT_TRUE(zero.set_text("head_dim_qk", "0").ok());
  auto r = zero.complete();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("head_dim_qk"), std::string::npos);

  Workload mask;
  auto m = mask.set_text("attn_mask_type", "diagonal");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("diagonal"), std::string::npos);

  Workload gqa;
  ASSERT_TRUE(gqa.set_text("num_heads", "16").ok());
  ASSERT_TRUE(gqa.set_text("num_gqa_groups", "5").ok());
  auto g = gqa.complete();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("divisible"), std::string::npos);

  Workload window;
  EXPECT_FALSE(window.set_text("window_size", "128").ok());
  EXPECT_TRUE(window.set_text("window_size", "128,0").ok());
}

TEST(WorkloadModel, BhsdAndMixedLayoutsGiveTheirFormats) {
  Workload w;
  ASSERT_TRUE(w.set_text("qkv_layout", "bhsd_bhsd_bhsd").ok());
  ASSERT_TRUE(w.complete().ok()) << "bhsd (TE 2.15+) is a format";
  EXPECT_EQ(w.get("qkv_format")->as_string(), "bhsd");
  Workload mixed;
  ASSERT_TRUE(mixed.set_text("qkv_layout", "thd_bshd_bshd").ok());
  ASSERT_TRUE(mixed.complete().ok());
  EXPECT_EQ(mixed.get("qkv_format")->as_string(), "thd_2bshd");
}

// What DotProductAttention hands get_attention_backend, not AttentionParams' field defaults.
TEST(WorkloadModel, DerivedAsDotProductAttentionPassesThem) {
  Workload none;
  ASSERT_TRUE(none.complete().ok());
  EXPECT_FALSE(none.get("core_attention_bias_requires_grad")->as_bool()) << "no bias tensor, no gradient";
  Workload bias;
  ASSERT_TRUE(bias.set_text("core_attention_bias_type", "post_scale_bias").ok());
  ASSERT_TRUE(bias.complete().ok());
  EXPECT_TRUE(bias.get("core_attention_bias_requires_grad")->as_bool());
  // The diagonal forced by the mask is DotProductAttention's own step (dpa_inputs_test.cpp).
}

// Copies share their values until one of them changes (explain keeps a copy per explanation);
// a change to either side must never show in the other.
TEST(WorkloadModel, CopiesAreIndependentAfterAChange) {
  Workload original;
  ASSERT_TRUE(original.set_text("head_dim_qk", "128").ok());
  ASSERT_TRUE(original.complete().ok());

  Workload copy = original;
  ASSERT_TRUE(copy.set_text("head_dim_qk", "192").ok());
  EXPECT_EQ(original.get("head_dim_qk")->as_int(), 128);
  EXPECT_EQ(copy.get("head_dim_qk")->as_int(), 192);

  Workload second = original;
  original.values["num_heads"] = model::Value(std::int64_t{64});
  EXPECT_EQ(original.get("num_heads")->as_int(), 64);
  EXPECT_NE(second.get("num_heads")->as_int(), 64);
  EXPECT_EQ(second.values.size(), original.values.size());

  Workload empty;
  EXPECT_TRUE(empty.values.empty());
  EXPECT_EQ(empty.get("head_dim_qk"), nullptr);
  Workload from_empty = empty;
  from_empty.values["qkv_format"] = model::Value(std::string("thd"));
  EXPECT_TRUE(empty.values.empty());
}
