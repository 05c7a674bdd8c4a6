// What explain keeps from one explain to the next on a node (src/rules/engine.cpp, NodeMemo): a
// filter's reason that reads only the node is rendered once per node, one that reads the
// workload every time; workload values are read in one walk of the workload's map (through the
// last map's layout of keys); each rule's condition is folded with what the node decides, per
// group of GPUs that fold alike. Each explain must say what a first explain on that node and
// workload says.
#include "rules/rules.hpp"

#include <gtest/gtest.h>

namespace {

constexpr const char* k_rules = R"(rules:
  - id: fused-cudnn-too-old
    title: t
    severity: info
    backend: fused_attention
    when: cudnn.version < 9.9.0 and workload.head_dim_qk > 64
    message: "cuDNN {{cudnn.version}} is too old"
    fixes:
      - kind: pip
        command: "{{pip_install('nvidia-cudnn', '9.9.0')}}"
        description: a newer cuDNN
  - id: flash-head-dim
    title: t
    severity: info
    backend: flash_attention
    when: workload.head_dim_qk > 64 and not has(workload.alibi_slopes_shape)
    message: "head_dim {{workload.head_dim_qk}} with {{workload.num_heads}} heads"
)";

const rules::RuleSet& database() {
  static const rules::LoadResult loaded = rules::RuleSet::load_text(k_rules, "memo.yaml");
  if (!loaded.rules) ADD_FAILURE() << rules::render(loaded.diagnostics);
  return *loaded.rules;
}

// Facts from --set style overrides, derived.
model::Facts facts_from(const std::vector<std::string>& overrides) {
  model::Facts facts;
  for (const std::string& s : overrides) EXPECT_TRUE(facts.apply_override(s).ok()) << s;
  facts.derive();
  return facts;
}

model::Facts node(const std::string& cudnn, const std::string& python) {
  return facts_from({"te.version=2.8.0", "gpu.sm=90", "cudnn.version=" + cudnn, "python.executable=" + python});
}

model::Workload workload(const std::string& head_dim, const std::string& heads) {
  model::Workload w;
  EXPECT_TRUE(w.set_text("head_dim_qk", head_dim).ok());
  EXPECT_TRUE(w.set_text("head_dim_v", head_dim).ok());
  EXPECT_TRUE(w.set_text("num_heads", heads).ok());
  w.name = "w" + head_dim;
  EXPECT_TRUE(w.complete().ok());
  return w;
}

// "backend: message | fix commands" of every reason.
std::string reasons(const model::Explanation& e) {
  std::string out;
  for (const auto& [backend, verdict] : e.backends)
    for (const auto& r : verdict.reasons) {
      out += backend + ": " + r.message;
      for (const auto& f : r.fixes) out += " | " + f.command;
      out += "\n";
    }
  return out;
}

// The explanation of 40 explains in a row of the workload on the node: the engine folds the rules
// from the 32nd explain on a node on (NodeMemo::k_fold_after), and every explanation must say
// what the first said.
model::Explanation explained(const rules::RuleSet& db, const model::Facts& facts, const model::Workload& w) {
  auto said = [](const model::Explanation& e) {
    std::string out = reasons(e) + "selected " + e.selected.value_or("none") + "\n";
    for (const auto& f : e.findings) out += f.id + ": " + f.message + "\n";
    return out;
  };
  model::Explanation first = rules::explain(db, facts, w);
  for (int i = 1; i < 40; ++i) {
    model::Explanation again = rules::explain(db, facts, w);
    EXPECT_EQ(said(again), said(first)) << "explain #" << i + 1 << " of " << w.name;
    if (i == 39) return again;
  }
  return first;
}

TEST(ExplainMemo, ReasonsAreWhatTheNodeAndWorkloadSay) {
  const model::Facts a = node("9.1.0", "/opt/a/bin/python");
  const model::Facts b = node("9.5.0", "/opt/b/bin/python");
  const model::Workload w128 = workload("128", "32");
  const model::Workload w96 = workload("96", "16");
  const std::string a128 = reasons(explained(database(), a, w128));
  EXPECT_EQ(a128, "flash_attention: head_dim 128 with 32 heads\n"
                  "fused_attention: cuDNN 9.1.0 is too old | /opt/a/bin/python -m pip install nvidia-cudnn-cu12==9.9.0\n");
  // The same node, another workload: the node's reason as before, the workload's anew.
  EXPECT_EQ(reasons(explained(database(), a, w96)),
            "flash_attention: head_dim 96 with 16 heads\n"
            "fused_attention: cuDNN 9.1.0 is too old | /opt/a/bin/python -m pip install nvidia-cudnn-cu12==9.9.0\n");
  // Another node: nothing of the first node's.
  EXPECT_EQ(reasons(explained(database(), b, w128)),
            "flash_attention: head_dim 128 with 32 heads\n"
            "fused_attention: cuDNN 9.5.0 is too old | /opt/b/bin/python -m pip install nvidia-cudnn-cu12==9.9.0\n");
  // Back on the first node: what its first explain said.
  EXPECT_EQ(reasons(explained(database(), a, w128)), a128);
}

// A workload value present in one workload and absent in the next is read anew by each explain.
TEST(ExplainMemo, WorkloadValuesAreEachExplainsOwn) {
  const model::Facts a = node("9.1.0", "python3");
  model::Workload with_slopes = workload("128", "32");
  ASSERT_TRUE(with_slopes.set_text("alibi_slopes_shape", "[32]").ok());
  ASSERT_TRUE(with_slopes.complete().ok());
  const model::Workload without = workload("128", "32");
  for (int round = 0; round < 2; ++round) {
    EXPECT_TRUE(explained(database(), a, without).backends.at("flash_attention").reasons.size() == 1) << round;
    EXPECT_TRUE(explained(database(), a, with_slopes).backends.at("flash_attention").reasons.empty()) << round;
  }
}

// A per-GPU filter on a node of unlike GPUs: the GPUs that fold alike (0 and 2, SM 90) are one
// group evaluated once, GPU 1 (SM 80) another, and the reasons come in GPU order as when each GPU
// was evaluated in turn; a workload the SM 90 part refuses and the SM 80 part takes says only GPU 1.
TEST(ExplainMemo, FoldedPerGroupOfGpusInGpuOrder) {
  static const rules::LoadResult loaded = rules::RuleSet::load_text(R"(rules:
  - id: flash-per-gpu
    title: t
    severity: info
    backend: flash_attention
    when: (gpu.sm >= 90 and workload.head_dim_qk > 64) or (gpu.sm < 90 and workload.head_dim_qk > 96)
    message: "GPU {{gpu.index}} (SM {{gpu.sm}}) refuses head_dim {{workload.head_dim_qk}}"
)",
                                                                    "gpus.yaml");
  ASSERT_TRUE(loaded.rules) << rules::render(loaded.diagnostics);
  const model::Facts facts = facts_from({"te.version=2.8.0", "gpu[0].sm=90", "gpu[1].sm=80", "gpu[2].sm=90", "cudnn.version=9.5.0"});
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(reasons(explained(*loaded.rules, facts, workload("128", "32"))), "flash_attention: GPU 0 (SM 90) refuses head_dim 128\n"
                                                                               "flash_attention: GPU 1 (SM 80) refuses head_dim 128\n"
                                                                               "flash_attention: GPU 2 (SM 90) refuses head_dim 128\n")
        << round;
    EXPECT_EQ(reasons(explained(*loaded.rules, facts, workload("80", "32"))), "flash_attention: GPU 0 (SM 90) refuses head_dim 80\n"
                                                                              "flash_attention: GPU 2 (SM 90) refuses head_dim 80\n")
        << round;
    EXPECT_EQ(reasons(explained(*loaded.rules, facts, workload("64", "32"))), "") << round;
  }
  // The SM 80 GPU first: its group's test (head_dim > 96) says nothing of the SM 90 group's.
  const model::Facts mixed = facts_from({"te.version=2.8.0", "gpu[0].sm=80", "gpu[1].sm=90", "cudnn.version=9.5.0"});
  for (int round = 0; round < 2; ++round)
    EXPECT_EQ(reasons(explained(*loaded.rules, mixed, workload("80", "32"))), "flash_attention: GPU 1 (SM 90) refuses head_dim 80\n")
        << round;
}

// Two workloads whose maps have as many keys, but not the same ones: the second explain reads its
// own values, not the first map's layout of keys.
TEST(ExplainMemo, AnotherSetOfKeysOfTheSameSize) {
  const model::Facts a = node("9.1.0", "python3");
  model::Workload plain = workload("128", "32");
  model::Workload slopes = plain;
  slopes.values.insert_or_assign("alibi_slopes_shape", model::Value(std::string("[32]")));
  ASSERT_EQ(slopes.values.size(), plain.values.size() + 1);
  // As many keys as `slopes`, the slopes' key in place of another one the rules do not read.
  model::Workload other = plain;
  other.values.insert_or_assign("zzz_not_a_key", model::Value(std::string("x")));
  ASSERT_EQ(other.values.size(), slopes.values.size());
  for (int round = 0; round < 2; ++round) {
    EXPECT_TRUE(explained(database(), a, slopes).backends.at("flash_attention").reasons.empty()) << round;
    EXPECT_EQ(explained(database(), a, other).backends.at("flash_attention").reasons.size(), 1u) << round;
  }
}

// A test shared by several rules (a guard, NodeMemo::guards) is evaluated once per explain: each
// explain reads its own workload's value, and the workload phase its own selection.
TEST(ExplainMemo, GuardsAreEachExplainsOwn) {
  static const rules::LoadResult loaded = rules::RuleSet::load_text(R"(rules:
  - id: flash-big-head
    title: t
    severity: info
    backend: flash_attention
    when: workload.head_dim_qk > 64 and workload.qkv_format == "sbhd"
    message: "flash refuses {{workload.head_dim_qk}}"
  - id: unfused-big-head
    title: t
    severity: info
    backend: unfused_attention
    when: workload.head_dim_qk > 64
    message: "unfused refuses {{workload.head_dim_qk}}"
  - id: fused-picked
    title: t
    severity: warning
    when: explain.selected == "FusedAttention" and workload.head_dim_qk > 64
    message: "fused for {{workload.head_dim_qk}}"
)",
                                                                    "guards.yaml");
  ASSERT_TRUE(loaded.rules) << rules::render(loaded.diagnostics);
  const model::Facts a = node("9.5.0", "python3");
  auto said = [&](const model::Workload& w) {
    auto e = explained(*loaded.rules, a, w);
    std::string out = reasons(e) + "selected " + e.selected.value_or("none") + "\n";
    for (const auto& f : e.findings) out += f.id + ": " + f.message + "\n";
    return out;
  };
  // The small one first: a test's value kept from it would keep the big one's rules quiet.
  const std::string small = said(workload("64", "32"));
  const std::string big = said(workload("128", "32"));
  EXPECT_EQ(big, "flash_attention: flash refuses 128\nunfused_attention: unfused refuses 128\nselected FusedAttention\n"
                 "fused-picked: fused for 128\n");
  EXPECT_EQ(small.find("refuses"), std::string::npos) << small;
  EXPECT_EQ(small.find("fused-picked"), std::string::npos) << small;
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(said(workload("64", "32")), small) << round;
    EXPECT_EQ(said(workload("128", "32")), big) << round;
  }
}

// A reason whose message reads the workload and whose fixes read only the node: the fixes are
// kept per node, the message is each workload's own.
TEST(ExplainMemo, FixesKeptPerNodeMessagePerWorkload) {
  static const rules::LoadResult loaded = rules::RuleSet::load_text(R"(rules:
  - id: fused-head-dim
    title: t
    severity: info
    backend: fused_attention
    when: workload.head_dim_qk > 64
    message: "head_dim {{workload.head_dim_qk}} needs a newer cuDNN than {{cudnn.version}}"
    fixes:
      - kind: pip
        command: "{{pip_install('nvidia-cudnn', '9.9.0')}}"
        description: a newer cuDNN
)",
                                                                    "fixes.yaml");
  ASSERT_TRUE(loaded.rules) << rules::render(loaded.diagnostics);
  const model::Facts a = node("9.1.0", "/opt/a/bin/python");
  const model::Facts b = node("9.5.0", "/opt/b/bin/python");
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(reasons(explained(*loaded.rules, a, workload("128", "32"))),
              "fused_attention: head_dim 128 needs a newer cuDNN than 9.1.0 | /opt/a/bin/python -m pip install nvidia-cudnn-cu12==9.9.0\n")
        << round;
    EXPECT_EQ(reasons(explained(*loaded.rules, a, workload("96", "32"))),
              "fused_attention: head_dim 96 needs a newer cuDNN than 9.1.0 | /opt/a/bin/python -m pip install nvidia-cudnn-cu12==9.9.0\n")
        << round;
    EXPECT_EQ(reasons(explained(*loaded.rules, b, workload("96", "32"))),
              "fused_attention: head_dim 96 needs a newer cuDNN than 9.5.0 | /opt/b/bin/python -m pip install nvidia-cudnn-cu12==9.9.0\n")
        << round;
  }
}

} // namespace
