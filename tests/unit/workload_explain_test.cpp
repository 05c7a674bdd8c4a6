// The workload importers feeding the shipped rules: a Hugging Face config.json and a workload
// YAML become the workloads of ARCHITECTURE.md's incident 1, and explain() gives TE's verdict on them.
#include "rules/rules.hpp"
#include "util/file.hpp"
#include "workload/hf_config.hpp"
#include "workload/workload_io.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>

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
    sets.emplace_back("env.NVTE_FLASH_ATTN=0");
    sets.emplace_back("env.NVTE_UNFUSED_ATTN=0");
  }
  for (const auto& s : sets) EXPECT_TRUE(facts.apply_override(s).ok()) << s;
  facts.derive();
  return facts;
}

model::Facts snapshot(const std::string& name) {
  auto text = util::read_file(fixtures() / "snapshots" / (name + ".json"));
  EXPECT_TRUE(text.ok());
  auto facts = model::Facts::from_json(text.ok() ? *text : "{}", name);
  EXPECT_TRUE(facts.ok()) << (facts.ok() ? "" : facts.error().message);
  model::Facts out = facts.ok() ? std::move(*facts) : model::Facts{};
  out.derive();
  return out;
}

// Every variant of a fixture model, explained on a node, by variant name.
std::map<std::string, model::Explanation> explain_model(const std::string& model_name, const model::Facts& node,
                                                        const std::vector<std::string>& settings = {}) {
  std::map<std::string, model::Explanation> out;
  auto variants = workload::load_hf_config(fixtures() / "hf" / model_name / "config.json");
  EXPECT_TRUE(variants.ok()) << (variants.ok() ? "" : variants.error().message);
  if (!variants.ok()) return out;
  for (auto& w : *variants) {
    EXPECT_TRUE(workload::apply_workload_settings(w, settings).ok());
    EXPECT_TRUE(workload::finish_workload(w).ok());
    out.emplace(w.name, rules::explain(shipped_rules(), node, w));
  }
  return out;
}

std::string selected(const model::Explanation& e) { return e.selected.value_or("none"); }

bool has_finding(const model::Explanation& e, std::string_view id) {
  for (const auto& f : e.findings)
    if (f.id == id) return true;
  return false;
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
  ASSERT_TRUE(workload::finish_workload(hf->front()).ok());

  auto ex = rules::explain(shipped_rules(), incident_1_node(true), hf->front());
  EXPECT_FALSE(ex.selected.has_value());
  EXPECT_TRUE(has_reason(ex.backends["fused_attention"], "cudnn-f16-head-dim-te-1x"));
  EXPECT_TRUE(has_reason(ex.backends["flash_attention"], "flash-attention-disabled-by-env"));
  EXPECT_TRUE(has_reason(ex.backends["unfused_attention"], "unfused-attention-disabled-by-env"));

  auto unset = rules::explain(shipped_rules(), incident_1_node(false), hf->front());
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

// Per-variant verdicts on the H100 snapshot (TE absent: 2.18 assumed, cuDNN 9.19, no flash-attn)
// and the A100 snapshot (TE 2.8.0, cuDNN 9.10.2, flash-attn 2.7.4.post1).
TEST(WorkloadExplain, Gemma2SoftcappingHasNoBackendOnEitherNode) {
  for (const char* node : {"h100-node", "a100-node"}) {
    auto ex = explain_model("gemma-2-9b", snapshot(node));
    ASSERT_EQ(ex.size(), 2u) << node;
    for (auto& [name, e] : ex) {
      SCOPED_TRACE(std::string(node) + " " + name);
      EXPECT_EQ(selected(e), "none");
      EXPECT_TRUE(has_reason(e.backends["flash_attention"], "flash-attention-no-logit-softcapping"));
      EXPECT_TRUE(has_reason(e.backends["fused_attention"], "fused-attention-no-logit-softcapping"));
      EXPECT_TRUE(has_reason(e.backends["unfused_attention"], "unfused-attention-no-logit-softcapping"));
      EXPECT_TRUE(has_finding(e, "attention-logit-softcapping-unsupported"));
    }
  }
  // Without the cap the same shapes run: the cap, not the shape, is what TE lacks.
  auto uncapped = explain_model("gemma-2-9b", snapshot("h100-node"), {"attn_logit_softcapping=0"});
  EXPECT_EQ(selected(uncapped["gemma-2-9b/sliding"]), "FusedAttention");
  EXPECT_EQ(selected(uncapped["gemma-2-9b/global"]), "FusedAttention");
}

TEST(WorkloadExplain, GptOssSinksNeedCudnn9131ForFusedAttention) {
  auto h100 = explain_model("gpt-oss-20b", snapshot("h100-node"));
  ASSERT_EQ(h100.size(), 2u);
  EXPECT_EQ(selected(h100["gpt-oss-20b/sliding"]), "FusedAttention");
  EXPECT_EQ(selected(h100["gpt-oss-20b/global"]), "FusedAttention");
  EXPECT_TRUE(has_reason(h100["gpt-oss-20b/sliding"].backends["flash_attention"], "flash-attention-softmax-type"));

  auto a100 = explain_model("gpt-oss-20b", snapshot("a100-node"));
  for (auto& [name, e] : a100) {
    SCOPED_TRACE(name);
    EXPECT_EQ(selected(e), "UnfusedDotProductAttention"); // cuDNN 9.10.2 < 9.13.1, no FlashAttention for sinks
    EXPECT_TRUE(has_reason(e.backends["fused_attention"], "cudnn-f16-softmax-type"));
    EXPECT_TRUE(has_reason(e.backends["flash_attention"], "flash-attention-softmax-type"));
  }
}

TEST(WorkloadExplain, Llama4ChunkedLayersBeyondOneChunk) {
  for (const char* node : {"h100-node", "a100-node"}) {
    auto fits = explain_model("llama-4-scout-17b-16e", snapshot(node));
    EXPECT_NE(selected(fits["llama-4-scout-17b-16e/chunked"]), "none") << node << ": 8192 tokens are one chunk";
    auto longer = explain_model("llama-4-scout-17b-16e", snapshot(node), {"max_seqlen_q=32768"});
    const auto& chunked = longer["llama-4-scout-17b-16e/chunked"];
    EXPECT_EQ(selected(chunked), "none") << node;
    EXPECT_TRUE(has_finding(chunked, "attention-chunked-unsupported")) << node;
    EXPECT_NE(selected(longer["llama-4-scout-17b-16e/global"]), "none") << node;
    // The way out the finding names: each chunk as a sequence of its own.
    auto packed = explain_model("llama-4-scout-17b-16e", snapshot(node),
                                {"max_seqlen_q=8192", "qkv_format=thd", "attn_mask_type=padding_causal"});
    EXPECT_NE(selected(packed["llama-4-scout-17b-16e/chunked"]), "none") << node;
  }
}

TEST(WorkloadExplain, EncodersAndT5OnTheA100) {
  auto a100 = snapshot("a100-node");
  auto bert = explain_model("bert-base-uncased", a100);
  EXPECT_EQ(selected(bert["bert-base-uncased"]), "FlashAttention");
  auto t5 = explain_model("t5-base", a100);
  ASSERT_EQ(t5.size(), 3u);
  EXPECT_EQ(selected(t5["t5-base/encoder"]), "FusedAttention"); // the relative bias keeps flash-attn out
  EXPECT_TRUE(has_reason(t5["t5-base/encoder"].backends["flash_attention"], "flash-attention-bias"));
  EXPECT_EQ(selected(t5["t5-base/cross"]), "FlashAttention");
  auto mla = explain_model("deepseek-v3", a100);
  EXPECT_EQ(selected(mla["deepseek-v3"]), "UnfusedDotProductAttention");
}

// explain() remembers what it read from a node's facts between calls (the engine's node memo);
// a Facts changed in place must be read afresh. Each step changes the same object and compares
// its explanation with one of a fresh copy, which no memo can have seen.
TEST(WorkloadExplain, FactsChangedInPlaceAreReadAfresh) {
  auto hf = workload::load_hf_config(fixtures() / "hf" / "deepseek-v3" / "config.json");
  ASSERT_TRUE(hf.ok()) << hf.error().message;
  ASSERT_TRUE(workload::finish_workload(hf->front()).ok());
  const model::Workload& w = hf->front();

  auto summary = [](const model::Explanation& e) {
    std::string out = e.selected.value_or("none");
    for (const auto& [backend, verdict] : e.backends) {
      out += " | " + backend + ":";
      for (const auto& r : verdict.reasons) out += " " + r.rule;
    }
    for (const auto& f : e.findings) out += " | finding " + f.id;
    return out;
  };

  model::Facts node = incident_1_node(true);
  std::vector<std::string> seen;
  auto step = [&](const std::string& what) {
    std::string in_place = summary(rules::explain(shipped_rules(), node, w));
    model::Facts copy = node; // NOLINT(performance-unnecessary-copy-initialization): a new stamp, no memo
    EXPECT_EQ(in_place, summary(rules::explain(shipped_rules(), copy, w))) << "after " << what;
    seen.push_back(in_place);
  };
  step("nothing");
  node.erase("env.NVTE_UNFUSED_ATTN");
  step("unsetting NVTE_UNFUSED_ATTN");
  ASSERT_TRUE(node.apply_override("te.version=2.18.0").ok());
  step("TE 2.18 (rule ranges)");
  ASSERT_TRUE(node.apply_override("gpu.compute_capability=9.0").ok());
  node.derive();
  step("an sm90 GPU (collection elements)");
  ASSERT_TRUE(node.apply_override("cudnn.version=9.10.0").ok());
  node.derive();
  step("cuDNN 9.10");
  // The steps must have changed the verdict, or the comparison proved nothing.
  EXPECT_NE(seen.front(), seen.back());
  EXPECT_NE(seen[0], seen[1]);
}

// After a first explain, explain() walks on one node only the rules that node did not rule out
// (the engine's live lists), with one frame for both phases. Workloads explained in turn on one
// Facts object must get what each gets on a fresh copy, which starts with every rule: a rule a
// workload kept quiet is not out for the next workload, and explain.* is read after the selection.
TEST(WorkloadExplain, WorkloadsInTurnOnOneNodeMatchAFreshNode) {
  std::vector<model::Workload> workloads;
  for (const char* name : {"llama-3-8b", "deepseek-v3", "gemma-2-9b", "gpt-oss-20b", "mixtral-8x7b", "t5-base", "qwen3-next-80b-a3b"}) {
    auto hf = workload::load_hf_config(fixtures() / "hf" / name / "config.json");
    ASSERT_TRUE(hf.ok()) << hf.error().message;
    for (auto& w : *hf) {
      ASSERT_TRUE(workload::finish_workload(w).ok());
      workloads.push_back(std::move(w));
    }
  }
  auto summary = [](const model::Explanation& e) {
    std::string out = e.selected.value_or("none");
    for (const auto& [backend, verdict] : e.backends) {
      out += " | " + backend + ":";
      for (const auto& r : verdict.reasons) out += " " + r.rule + " " + r.message;
    }
    for (const auto& f : e.findings) out += " | finding " + f.id + " " + f.message;
    return out;
  };
  std::size_t differ = 0;
  for (const char* name : {"h100-node", "a100-node"}) {
    model::Facts node = snapshot(name);
    // Forwards, then backwards, all on `node` (a fresh copy in between would take the memo).
    std::vector<const model::Workload*> order;
    order.reserve(2 * workloads.size());
    for (const auto& w : workloads) order.push_back(&w);
    for (auto it = workloads.rbegin(); it != workloads.rend(); ++it) order.push_back(&*it);
    std::vector<std::string> in_turn;
    in_turn.reserve(order.size());
    for (const auto* w : order) in_turn.push_back(summary(rules::explain(shipped_rules(), node, *w)));
    for (std::size_t i = 0; i < order.size(); ++i) {
      model::Facts fresh = node; // NOLINT(performance-unnecessary-copy-initialization): a new stamp, no memo
      EXPECT_EQ(in_turn[i], summary(rules::explain(shipped_rules(), fresh, *order[i]))) << name << ", " << order[i]->name;
      differ += in_turn[i] != in_turn.front();
    }
  }
  // The workloads must differ in what fires, or the comparison proved nothing.
  EXPECT_GT(differ, 4u);
}

// The memo belongs to one rules database: two databases that number the same facts in another
// order, read in turn against one facts object, must each see their own facts (a memo shared by
// slot number would hand each the other's values, and neither rule would fire).
TEST(WorkloadExplain, TwoDatabasesOnTheSameFactsDoNotShareTheMemo) {
  auto database = [](const std::string& id, const std::string& when) {
    auto loaded = rules::RuleSet::load_text("rules:\n  - id: " + id + "\n    title: t\n    severity: warning\n    when: " + when +
                                                "\n    message: m\n    fixes:\n      - {kind: config, command: \"\", description: d}\n"
                                                "    references: [https://docs.nvidia.com/deeplearning/cudnn/]\n",
                                            id + ".yaml");
    EXPECT_TRUE(loaded.rules) << rules::render(loaded.diagnostics);
    return std::move(*loaded.rules);
  };
  // cuDNN 9.1.0 and flash-attn 2.7.4 on the node: each condition holds only with the right values.
  rules::RuleSet a = database("test-a", "cudnn.version < 9.3 and flash_attn.version < 3");
  rules::RuleSet b = database("test-b", "flash_attn.version >= 2.7 and cudnn.version >= 9.0");
  model::Facts node = incident_1_node(false);
  for (int round = 0; round < 3; ++round) {
    auto from_a = rules::evaluate_node(a, node);
    auto from_b = rules::evaluate_node(b, node);
    ASSERT_EQ(from_a.size(), 1u) << "round " << round;
    ASSERT_EQ(from_b.size(), 1u) << "round " << round;
    EXPECT_EQ(from_a[0].id, "test-a");
    EXPECT_EQ(from_b[0].id, "test-b");
  }
}

namespace {

model::Facts node_of(const std::vector<std::string>& sets) {
  model::Facts facts;
  for (const auto& s : sets) EXPECT_TRUE(facts.apply_override(s).ok()) << s;
  facts.derive();
  return facts;
}

model::Workload workload_of(const std::vector<std::string>& settings) {
  model::Workload w;
  w.name = "command line";
  EXPECT_TRUE(workload::apply_workload_settings(w, settings).ok());
  EXPECT_TRUE(workload::finish_workload(w).ok());
  return w;
}

} // namespace

// TE checks a top-left window in cross-attention only inside `if use_flash_attention_2 and ...`:
// once flash-attn 2 is out (switched off, outside TE's range), flash-attn 3/4 runs the window.
TEST(WorkloadExplain, WindowCheckOnlyWhileFlashAttn2IsIn) {
  auto w = workload_of({"attn_mask_type=no_mask", "window_size=128,128", "bottom_right_diagonal=false", "max_seqlen_q=128",
                        "max_seqlen_kv=256", "qkv_layout=bshd_bshd_bshd"});
  const std::string rule = "flash-attention-window-top-left-cross-attention";
  auto with_fa2 = rules::explain(
      shipped_rules(),
      node_of({"te.version=2.18.0", "gpu.sm=90", "cudnn.version=9.10.2", "flash_attn.version=2.8.3", "flash_attn_3.version=3.0.0b1"}), w);
  EXPECT_TRUE(has_reason(with_fa2.backends["flash_attention"], rule));
  auto switched_off = rules::explain(shipped_rules(),
                                     node_of({"te.version=2.18.0", "gpu.sm=90", "cudnn.version=9.10.2", "flash_attn.version=2.8.3",
                                              "flash_attn_3.version=3.0.0b1", "env.NVTE_FLASH_ATTN_V2=0"}),
                                     w);
  EXPECT_FALSE(has_reason(switched_off.backends["flash_attention"], rule));
  auto below_floor = rules::explain(shipped_rules(),
                                    node_of({"te.version=2.18.0", "gpu.sm=100", "cudnn.version=9.13.1", "flash_attn.version=2.7.0",
                                             "flash_attn_4.version=4.0.0b24", "package.nvidia_cutlass_dsl.version=4.3.0"}),
                                    w);
  EXPECT_FALSE(has_reason(below_floor.backends["flash_attention"], rule)) << "flash-attn 2.7.0 is below TE's Blackwell floor";
}

// DotProductAttention turns NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 into deterministic=True before it
// selects: flash-attn older than 2.4.1 has no deterministic backward.
TEST(WorkloadExplain, NondeterministicAlgoZeroIsDeterministic) {
  auto w = workload_of({"attn_mask_type=causal", "head_dim_qk=128", "max_seqlen_q=2048"});
  auto node = node_of(
      {"te.version=2.12.0", "gpu.sm=89", "cudnn.version=9.5.1", "flash_attn.version=2.3.3", "env.NVTE_ALLOW_NONDETERMINISTIC_ALGO=0"});
  auto ex = rules::explain(shipped_rules(), node, w);
  EXPECT_TRUE(ex.workload.get("deterministic")->as_bool());
  EXPECT_FALSE(ex.backends["flash_attention"].available);
  auto allowed =
      rules::explain(shipped_rules(), node_of({"te.version=2.12.0", "gpu.sm=89", "cudnn.version=9.5.1", "flash_attn.version=2.3.3"}), w);
  EXPECT_FALSE(allowed.workload.get("deterministic")->as_bool());
  EXPECT_TRUE(allowed.backends["flash_attention"].available);
}
