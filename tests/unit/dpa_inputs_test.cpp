// model::selector_inputs: what DotProductAttention does to its inputs before TE selects a backend.
#include "model/dpa_inputs.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>

using model::Facts;
using model::Version;
using model::Workload;

namespace {

Workload completed(std::initializer_list<std::pair<const char*, const char*>> keys) {
  Workload w;
  for (const auto& [key, value] : keys) EXPECT_TRUE(w.set_text(key, value).ok()) << key;
  EXPECT_TRUE(w.complete().ok());
  return w;
}

bool has_note(const Workload& w, std::string_view text) {
  for (const auto& note : w.notes)
    if (note.find(text) != std::string::npos) return true;
  return false;
}

} // namespace

TEST(DpaInputs, DiagonalFollowsTheMask) {
  Facts none;
  auto causal = model::selector_inputs(completed({{"attn_mask_type", "causal"}, {"bottom_right_diagonal", "true"}}), none, Version{2, 14});
  EXPECT_FALSE(causal.get("bottom_right_diagonal")->as_bool()) << "top-left causal mask";
  EXPECT_TRUE(has_note(causal, "as DotProductAttention does"));
  auto bottom_right = model::selector_inputs(
      completed({{"attn_mask_type", "padding_causal_bottom_right"}, {"bottom_right_diagonal", "false"}}), none, Version{2, 14});
  EXPECT_TRUE(bottom_right.get("bottom_right_diagonal")->as_bool());
  auto free = model::selector_inputs(completed({{"attn_mask_type", "no_mask"}, {"bottom_right_diagonal", "false"}}), none, Version{2, 14});
  EXPECT_FALSE(free.get("bottom_right_diagonal")->as_bool()) << "no_mask keeps the user's alignment";
  EXPECT_TRUE(free.notes.empty());
  auto assumed = model::selector_inputs(completed({{"attn_mask_type", "causal"}}), none, Version{2, 14});
  EXPECT_FALSE(assumed.get("bottom_right_diagonal")->as_bool());
  EXPECT_TRUE(assumed.notes.empty()) << "a default the user did not give changes silently";
}

TEST(DpaInputs, DeterministicFromTheEnvironment) {
  Facts env;
  env.set("env.NVTE_ALLOW_NONDETERMINISTIC_ALGO", model::Value(std::string("0")));
  auto w = model::selector_inputs(completed({}), env, Version{2, 12});
  EXPECT_TRUE(w.get("deterministic")->as_bool());
  EXPECT_TRUE(has_note(w, "NVTE_ALLOW_NONDETERMINISTIC_ALGO=0"));
  Facts allowed;
  allowed.set("env.NVTE_ALLOW_NONDETERMINISTIC_ALGO", model::Value(std::string("1")));
  EXPECT_FALSE(model::selector_inputs(completed({}), allowed, Version{2, 12}).get("deterministic")->as_bool());
  EXPECT_FALSE(model::selector_inputs(completed({}), Facts{}, Version{2, 12}).get("deterministic")->as_bool());
}

TEST(DpaInputs, WindowCorrectedForTheMask) {
  auto causal = model::selector_inputs(completed({{"attn_mask_type", "causal"}, {"window_size", "128,128"}}), Facts{}, Version{2, 12});
  EXPECT_EQ(causal.get("window_size")->as_string(), "128,0");
  EXPECT_EQ(causal.get("window_size_right")->as_int(), 0);
  auto full = model::selector_inputs(completed({{"attn_mask_type", "causal"}, {"window_size", "-1,-1"}}), Facts{}, Version{2, 12});
  EXPECT_EQ(full.get("window_size")->as_string(), "-1,0");
  auto none = model::selector_inputs(completed({{"attn_mask_type", "padding"}, {"window_size", "-1,0"}}), Facts{}, Version{2, 12});
  EXPECT_EQ(none.get("window_size")->as_string(), "-1,-1");
  auto refused = model::selector_inputs(completed({{"attn_mask_type", "no_mask"}, {"window_size", "-1,5"}}), Facts{}, Version{2, 12});
  EXPECT_EQ(refused.get("window_size")->as_string(), "-1,5");
  EXPECT_TRUE(has_note(refused, "TE refuses window_size"));
}

TEST(DpaInputs, KvCacheRewritesPerTeVersion) {
  auto given = completed({{"attn_mask_type", "padding_causal"}, {"qkv_layout", "sbhd_sbhd_sbhd"}, {"inference", "true"}});
  auto new_cache = model::selector_inputs(given, Facts{}, Version{2, 12});
  EXPECT_EQ(new_cache.get("attn_mask_type")->as_string(), "padding_causal_bottom_right");
  EXPECT_TRUE(new_cache.get("bottom_right_diagonal")->as_bool());
  EXPECT_EQ(new_cache.get("qkv_layout")->as_string(), "sbhd_bshd_bshd");
  EXPECT_EQ(new_cache.get("qkv_format")->as_string(), "sbhd_2bshd");
  auto old_cache = model::selector_inputs(given, Facts{}, Version{2, 1});
  EXPECT_EQ(old_cache.get("qkv_layout")->as_string(), "sbhd_sbhd_sbhd");
  EXPECT_EQ(old_cache.get("attn_mask_type")->as_string(), "padding_causal_bottom_right");

  auto causal = completed({{"attn_mask_type", "causal"}, {"qkv_layout", "bshd_bshd_bshd"}, {"inference", "true"}});
  auto old_causal = model::selector_inputs(causal, Facts{}, Version{1, 12});
  EXPECT_EQ(old_causal.get("attn_mask_type")->as_string(), "causal_bottom_right") << "TE < 2.2 rewrites causal too";
  auto refused = model::selector_inputs(causal, Facts{}, Version{2, 12});
  EXPECT_EQ(refused.get("attn_mask_type")->as_string(), "causal");
  EXPECT_TRUE(has_note(refused, "KV caching requires padding mask"));

  auto packed = completed({{"attn_mask_type", "padding"}, {"qkv_layout", "thd_t2hd"}, {"inference", "true"}});
  auto thd = model::selector_inputs(packed, Facts{}, Version{2, 18});
  EXPECT_EQ(thd.get("qkv_layout")->as_string(), "thd_bshd_bshd");
  EXPECT_EQ(thd.get("qkv_format")->as_string(), "thd_2bshd");
  EXPECT_TRUE(has_note(model::selector_inputs(packed, Facts{}, Version{2, 1}), "no KV cache for thd"));

  auto training = completed({{"attn_mask_type", "padding_causal"}, {"qkv_layout", "sbhd_sbhd_sbhd"}});
  EXPECT_EQ(model::selector_inputs(training, Facts{}, Version{2, 12}).get("qkv_layout")->as_string(), "sbhd_sbhd_sbhd");
}

TEST(DpaInputs, Fp8RecipeSwitchedByTheEnvironment) {
  auto recipe_env = [](const char* value) {
    Facts f;
    f.set("env.NVTE_DPA_FP8_RECIPE", model::Value(std::string(value)));
    return f;
  };
  auto current = completed({{"fp8", "true"}, {"fp8_dpa", "true"}, {"fp8_recipe", "current"}});
  auto delayed = model::selector_inputs(current, recipe_env("DelayedScaling"), Version{2, 10});
  EXPECT_EQ(delayed.get("fp8_recipe")->as_string(), "delayed");
  EXPECT_TRUE(has_note(delayed, "NVTE_DPA_FP8_RECIPE=DelayedScaling"));
  EXPECT_EQ(model::selector_inputs(current, recipe_env("DelayedScaling"), Version{2, 7}).get("fp8_recipe")->as_string(), "current")
      << "TE before 2.8 does not read NVTE_DPA_FP8_RECIPE";
  EXPECT_EQ(model::selector_inputs(current, Facts{}, Version{2, 18}).get("fp8_recipe")->as_string(), "current");

  auto mxfp8 = completed({{"fp8", "true"}, {"fp8_dpa", "true"}, {"fp8_recipe", "mxfp8"}});
  EXPECT_EQ(model::selector_inputs(mxfp8, recipe_env("Float8CurrentScaling"), Version{2, 18}).get("fp8_recipe")->as_string(), "current");
  auto old = model::selector_inputs(mxfp8, recipe_env("Float8CurrentScaling"), Version{2, 14});
  EXPECT_EQ(old.get("fp8_recipe")->as_string(), "mxfp8") << "the MXFP8 switches came with 2.15";
  EXPECT_TRUE(has_note(old, "refuses the mxfp8 recipe"));
  auto to_mxfp8 =
      model::selector_inputs(completed({{"fp8", "true"}, {"fp8_dpa", "true"}}), recipe_env("MXFP8BlockScaling"), Version{2, 15});
  EXPECT_EQ(to_mxfp8.get("fp8_recipe")->as_string(), "mxfp8");
  EXPECT_EQ(model::selector_inputs(completed({{"fp8", "true"}, {"fp8_dpa", "true"}}), recipe_env("MXFP8BlockScaling"), Version{2, 14})
                .get("fp8_recipe")
                ->as_string(),
            "delayed");

  auto f16 =
      model::selector_inputs(completed({{"fp8", "true"}, {"fp8_dpa", "true"}, {"fp8_mha", "true"}}), recipe_env("F16"), Version{2, 12});
  EXPECT_FALSE(f16.get("fp8_dpa")->as_bool());
  EXPECT_FALSE(f16.get("fp8_mha")->as_bool());
  EXPECT_TRUE(f16.get("fp8")->as_bool()) << "the autocast stays on";
  auto outside = model::selector_inputs(completed({{"fp8_recipe", "current"}}), recipe_env("DelayedScaling"), Version{2, 18});
  EXPECT_EQ(outside.get("fp8_recipe")->as_string(), "current") << "outside an FP8 autocast nothing changes";
}
