// The fix search against the shipped rules and catalog: the five seed incidents of ARCHITECTURE.md at
// every TE release get a fix the model verifies (and that this test re-applies on its own), the
// #2285-like Blackwell MLA case gets cuDNN >= 9.11 first, an environment switch that alone brings
// a backend back ranks first, a wheel shadowed by a system cuDNN gets the load-order step, and
// rule-written commands that cannot be verified say why; the ranking (a Megatron argument before a
// counterfactual, upgrades before downgrades), one pin per package for a whole report, and
// debugging hints kept apart from fixes.
#include "support/build_factors.hpp"
#include "support/shipped_rules.hpp"
#include "probe/relink.hpp"
#include "rules/fix_commands.hpp"
#include "rules/fix_search.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace {

const rules::RuleSet& shipped() { return test_support::shipped_rules(); }

rules::SearchOptions options() {
  rules::SearchOptions o;
  o.relink = [](model::Facts& f, std::string_view lib) { probe::relink_from_facts(f, lib); };
  return o;
}

model::Facts facts_of(const std::vector<std::string>& sets) {
  model::Facts f;
  for (const auto& s : sets) {
    auto r = f.apply_override(s);
    EXPECT_TRUE(r.ok()) << s << ": " << (r.ok() ? "" : r.error().message);
  }
  f.derive();
  return f;
}

model::Workload workload_of(const std::vector<std::pair<std::string, std::string>>& keys) {
  model::Workload w;
  w.name = "test";
  for (const auto& [k, v] : keys) EXPECT_TRUE(w.set_text(k, v).ok()) << k;
  EXPECT_TRUE(w.complete().ok());
  return w;
}

// Applies a fix's `changes` independently of the search and asks the model again.
model::Explanation reapply(const model::Facts& facts, const model::Workload& workload, const model::Fix& fix) {
  model::Facts f = facts;
  model::Workload w = workload;
  for (const auto& [name, value] : fix.changes) {
    if (name.starts_with("workload.")) {
      EXPECT_TRUE(w.set_text(name.substr(9), value).ok()) << name;
      if (name == "workload.qkv_format") (void)w.set_text("qkv_layout", value == "thd" ? "thd_thd_thd" : value + "_" + value + "_" + value);
    } else if (value == "(unset)") {
      f.erase(name);
    } else if (name == "gpu.sm") {
      EXPECT_TRUE(f.apply_override("gpu.compute_capability=" + std::to_string(std::stoi(value) / 10) + "." + std::to_string(std::stoi(value) % 10)).ok());
      for (std::size_t i = 0; i < f.count("gpu"); ++i) f.set("gpu[" + std::to_string(i) + "].sm", model::Value(std::stol(value)));
    } else {
      EXPECT_TRUE(f.apply_override(name + "=" + value).ok()) << name << "=" << value;
    }
  }
  f.derive();
  return rules::explain(shipped(), f, w);
}

const model::Finding* finding(const model::Explanation& e, std::string_view id) {
  for (const auto& f : e.findings)
    if (f.id == id) return &f;
  return nullptr;
}

std::vector<const model::Fix*> verified(const model::Finding& f) {
  std::vector<const model::Fix*> out;
  for (const auto& fix : f.fixes)
    if (fix.verified) out.push_back(&fix);
  return out;
}

std::string change(const model::Fix& fix, std::string_view name) {
  for (const auto& [n, v] : fix.changes)
    if (n == name) return v;
  return {};
}

// Every TE release the catalog lists, and 1.10 (the oldest the model covers).
std::vector<std::string> te_versions() {
  std::vector<std::string> out{"1.10.0"};
  for (const auto* p : shipped().catalog().for_fact("te.version"))
    for (const auto& r : p->releases) out.push_back(r.version.to_string());
  return out;
}

struct Incident {
  std::string name;
  std::string finding;
  std::vector<std::string> facts;
  std::vector<std::pair<std::string, std::string>> workload;
};

std::vector<Incident> incidents() {
  return {
      {"1-a100-deepseek-env-disabled", "attention-no-backend",
       {"gpu.compute_capability=8.0", "cudnn.version=9.1.0", "torch.version=2.6.0", "torch.cuda_version=12.4",
        "flash_attn.version=2.7.4", "env.NVTE_FLASH_ATTN=0", "env.NVTE_UNFUSED_ATTN=0"},
       {{"qkv_format", "bshd"}, {"attn_mask_type", "causal"}, {"num_heads", "128"}, {"head_dim_qk", "192"}, {"head_dim_v", "128"}, {"max_seqlen_q", "4096"}}},
      {"2-all-gather-cp-cudnn-9.1", "attention-cp-all-gather-bottom-right-cudnn",
       {"gpu.compute_capability=9.0", "cudnn.version=9.1.0", "torch.cuda_version=12.4"},
       {{"qkv_format", "bshd"}, {"attn_mask_type", "causal"}, {"num_heads", "32"}, {"head_dim_qk", "128"}, {"max_seqlen_q", "4096"},
        {"cp_size", "2"}, {"cp_comm_type", "all_gather"}}},
      {"3-transformer-layer-bsh-as-sbhd", "incident-3-transformerlayer-bsh-input-as-sbhd",
       {"gpu.compute_capability=9.0", "cudnn.version=9.2.1"},
       {{"api", "TransformerLayer"}, {"input_shape", "bsh"}, {"qkv_format", "sbhd"}, {"attn_mask_type", "causal"}, {"num_heads", "32"},
        {"head_dim_qk", "128"}, {"max_seqlen_q", "2048"}}},
      {"4-interleaved-gqa-qkv", "incident-4-gqa-interleaved-qkv-misread",
       {"gpu.compute_capability=9.0", "cudnn.version=9.2.1", "torch.cuda_version=12.5"},
       {{"qkv_format", "sbhd"}, {"attn_mask_type", "causal"}, {"num_heads", "32"}, {"num_gqa_groups", "8"}, {"head_dim_qk", "128"},
        {"max_seqlen_q", "2048"}, {"qkv_interleaved", "true"}}},
      {"5-fp8-reselection", "incident-5-fp8-backend-reselected-every-step",
       {"gpu.compute_capability=9.0", "cudnn.version=9.2.1"},
       {{"qkv_format", "bshd"}, {"attn_mask_type", "causal"}, {"num_heads", "32"}, {"head_dim_qk", "128"}, {"max_seqlen_q", "2048"}, {"fp8", "true"}}},
  };
}

TEST(FixSearch, SeedIncidentsGetAVerifiedFixAtEveryTeRelease) {
  for (const auto& incident : incidents()) {
    int fired = 0;
    for (const auto& te : te_versions()) {
      SCOPED_TRACE(incident.name + " at TE " + te);
      auto sets = incident.facts;
      sets.push_back("te.version=" + te);
      model::Facts facts = facts_of(sets);
      model::Workload w = workload_of(incident.workload);
      model::Explanation e = rules::explain(shipped(), facts, w);
      if (!finding(e, incident.finding)) continue; // the incident does not happen at this release
      ++fired;
      rules::verify_explanation(shipped(), facts, e, options());
      const model::Finding* f = finding(e, incident.finding);
      ASSERT_NE(f, nullptr);
      auto fixes = verified(*f);
      ASSERT_FALSE(fixes.empty()) << "no verified fix";
      for (const auto* fix : fixes) {
        model::Explanation after = reapply(facts, w, *fix);
        EXPECT_EQ(finding(after, incident.finding), nullptr) << fix->command << " / " << fix->description;
        EXPECT_TRUE(after.selected.has_value()) << fix->description;
        EXPECT_EQ(after.selected.value_or(""), fix->verified->backend) << fix->description;
      }
      if (incident.name.starts_with("2-")) {
        auto cudnn = std::find_if(fixes.begin(), fixes.end(), [](const auto* x) { return !change(*x, "cudnn.version").empty(); });
        ASSERT_NE(cudnn, fixes.end()) << "no cuDNN fix";
        auto v = *model::Version::parse(change(**cudnn, "cudnn.version"));
        if (*model::Version::parse(te) < model::Version{2, 12}) {
          EXPECT_EQ((*cudnn)->command, "python3 -m pip install nvidia-cudnn-cu12==9.3.0.75");
        } else {
          EXPECT_GE(v, (model::Version{9, 6})) << (*cudnn)->command;
        }
      }
    }
    EXPECT_GT(fired, 0) << incident.name << " fired at no TE release";
  }
}

TEST(FixSearch, SeedIncident2KeepsItsCommandAndNamesTheNodesInterpreter) {
  model::Workload w = workload_of(incidents()[1].workload);
  model::Facts plain = facts_of({"te.version=2.3.0", "gpu.compute_capability=9.0", "cudnn.version=9.1.0", "torch.cuda_version=12.4"});
  model::Explanation e = rules::explain(shipped(), plain, w);
  rules::verify_explanation(shipped(), plain, e, options());
  const auto* f = finding(e, "attention-cp-all-gather-bottom-right-cudnn");
  ASSERT_NE(f, nullptr);
  auto fixes = verified(*f);
  ASSERT_GE(fixes.size(), 2u);
  EXPECT_EQ(change(*fixes[0], "workload.cp_comm_type"), "p2p"); // a TE argument before an install
  EXPECT_EQ(fixes[1]->command, "python3 -m pip install nvidia-cudnn-cu12==9.3.0.75");
  EXPECT_EQ(fixes[1]->verified->backend, "FusedAttention");
  EXPECT_EQ(fixes[1]->verified->sub_backend, "F16_arbitrary_seqlen");

  model::Facts venv = facts_of({"te.version=2.3.0", "gpu.compute_capability=9.0", "cudnn.version=9.1.0", "torch.cuda_version=12.4",
                                "python.executable=/opt/my env/bin/python3", "python.env_kind=venv"});
  e = rules::explain(shipped(), venv, w);
  rules::verify_explanation(shipped(), venv, e, options());
  f = finding(e, "attention-cp-all-gather-bottom-right-cudnn");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(verified(*f)[1]->command, "'/opt/my env/bin/python3' -m pip install nvidia-cudnn-cu12==9.3.0.75");
}

TEST(FixSearch, BlackwellMlaThdGetsCudnn911First) {
  // NVIDIA/TransformerEngine#2285: DeepSeek-V3 on B200, TE 2.8, cuDNN 9.10.1, packed sequences.
  model::Facts facts = facts_of({"te.version=2.8.0", "gpu.compute_capability=10.0", "cudnn.version=9.10.1", "torch.cuda_version=12.8"});
  model::Workload w = workload_of({{"qkv_format", "thd"}, {"attn_mask_type", "padding_causal"}, {"num_heads", "128"}, {"head_dim_qk", "192"},
                                   {"head_dim_v", "128"}, {"max_seqlen_q", "8192"}});
  model::Explanation e = rules::explain(shipped(), facts, w);
  ASSERT_FALSE(e.selected.has_value());
  rules::verify_explanation(shipped(), facts, e, options());
  const auto* f = finding(e, "attention-no-backend");
  ASSERT_NE(f, nullptr);
  auto fixes = verified(*f);
  ASSERT_FALSE(fixes.empty());
  auto v = model::Version::parse(change(*fixes[0], "cudnn.version"));
  ASSERT_TRUE(v.ok()) << fixes[0]->description;
  EXPECT_GE(*v, (model::Version{9, 11}));
  EXPECT_EQ(fixes[0]->verified->backend, "FusedAttention");
  // The reason that asked for cuDNN 9.10.2 cannot make the workload run, and says so.
  const auto& fused = e.backends.at("fused_attention");
  bool labelled = false;
  for (const auto& reason : fused.reasons)
    for (const auto& fix : reason.fixes)
      if (fix.command.find("9.10.2") != std::string::npos) labelled = !fix.verified && !fix.unverified_reason.empty();
  EXPECT_TRUE(labelled);
}

TEST(FixSearch, UnsettingTheSwitchThatAloneWorksRanksFirst) {
  model::Facts facts = facts_of({"te.version=2.3.0", "gpu.compute_capability=8.0", "cudnn.version=9.1.0", "flash_attn.version=2.7.4",
                                 "env.NVTE_FLASH_ATTN=0", "env.NVTE_UNFUSED_ATTN=0"});
  model::Workload w = workload_of({{"qkv_format", "bshd"}, {"attn_mask_type", "causal"}, {"num_heads", "16"}, {"head_dim_qk", "192"}, {"max_seqlen_q", "4096"}});
  model::Explanation e = rules::explain(shipped(), facts, w);
  ASSERT_FALSE(e.selected.has_value());
  rules::verify_explanation(shipped(), facts, e, options());
  const auto* f = finding(e, "attention-no-backend");
  ASSERT_NE(f, nullptr);
  auto fixes = verified(*f);
  ASSERT_FALSE(fixes.empty());
  EXPECT_EQ(fixes[0]->command, "unset NVTE_FLASH_ATTN");
  EXPECT_EQ(fixes[0]->verified->backend, "FlashAttention");
  ASSERT_EQ(fixes[0]->changes.size(), 1u);
  EXPECT_EQ(fixes[0]->changes[0], (std::pair<std::string, std::string>{"env.NVTE_FLASH_ATTN", "(unset)"}));
}

TEST(FixSearch, AWheelShadowedByASystemCudnnGetsTheLoadOrderStep) {
  // TE 2.11 searches CUDA_HOME before the wheels: the wheel alone would change nothing.
  const std::string site = "/opt/my env/lib/python3.12/site-packages";
  model::Facts facts = facts_of({"te.version=2.11.0", "gpu.compute_capability=9.0", "torch.cuda_version=12.4",
                                 "python.executable=/opt/my env/bin/python3", "python.env_kind=venv", "python.site_packages=" + site,
                                 "env.CUDA_HOME=/usr/local/cuda"});
  facts.set("cudnn.copies[0].path", "/usr/local/cuda/lib64/libcudnn.so.9.1.0");
  facts.set("cudnn.copies[0].version", *model::Version::parse("9.1.0"));
  facts.set("cudnn.copies[0].source", "cuda_home");
  facts.set("te.cudnn.path", "/usr/local/cuda/lib64/libcudnn.so.9.1.0");
  facts.set("te.cudnn.version", *model::Version::parse("9.1.0"));
  facts.set("cudnn.path", "/usr/local/cuda/lib64/libcudnn.so.9.1.0");
  facts.set("cudnn.version", *model::Version::parse("9.1.0"));
  facts.derive();
  model::Workload w = workload_of(incidents()[1].workload);
  model::Explanation e = rules::explain(shipped(), facts, w);
  rules::verify_explanation(shipped(), facts, e, options());
  const auto* f = finding(e, "attention-cp-all-gather-bottom-right-cudnn");
  ASSERT_NE(f, nullptr);
  const model::Fix* cudnn = nullptr;
  for (const auto* fix : verified(*f))
    if (!change(*fix, "cudnn.version").empty()) cudnn = fix;
  ASSERT_NE(cudnn, nullptr);
  EXPECT_EQ(cudnn->command, "'/opt/my env/bin/python3' -m pip install nvidia-cudnn-cu12==9.3.0.75 && export CUDNN_PATH='" + site + "/nvidia/cudnn'");
  EXPECT_EQ(change(*cudnn, "env.CUDNN_PATH"), site + "/nvidia/cudnn");

  // Without the step the model itself says the wheel would not be loaded.
  model::Facts installed = facts;
  installed.set("cudnn.copies[1].path", site + "/nvidia/cudnn/lib/libcudnn.so.9");
  installed.set("cudnn.copies[1].version", *model::Version::parse("9.3.0.75"));
  installed.set("cudnn.copies[1].source", "site_packages");
  probe::relink_from_facts(installed, "cudnn");
  EXPECT_EQ(installed.get_string("cudnn.version"), "9.1.0");
}

TEST(FixSearch, CommandsTheModelCannotCheckSayWhy) {
  model::Finding f;
  f.id = "cuda-compat-installed-older-than-driver";
  f.severity = model::Severity::warning;
  f.fixes = {model::Fix{"config", "sudo apt-get remove -y 'cuda-compat-*'", "remove it", {}, std::nullopt, {}, false},
             model::Fix{"pip", "python3 -m pip install nvidia-cudnn-cu12==9.4.1.1", "not a published release", {}, std::nullopt, {}, false},
             model::Fix{"config", "", "keep it off LD_LIBRARY_PATH", {}, std::nullopt, {}, false}};
  model::Facts facts = facts_of({"gpu.compute_capability=9.0", "driver.version=580.159.04", "cuda.compat.libcuda_version=580.95.05",
                                 "cuda.compat.in_use=true"});
  auto fixes = rules::search_fixes(shipped(), facts, nullptr, f, options());
  for (const auto& fix : fixes) {
    if (fix.command.empty()) continue;
    EXPECT_TRUE(fix.verified || !fix.unverified_reason.empty()) << fix.command;
    if (fix.command.find("9.4.1.1") != std::string::npos) {
      EXPECT_NE(fix.unverified_reason.find("not a release the catalog lists"), std::string::npos) << fix.unverified_reason;
    }
    if (fix.command.find("apt-get") != std::string::npos) {
      EXPECT_FALSE(fix.verified);
    }
  }
  EXPECT_TRUE(std::any_of(fixes.begin(), fixes.end(), [](const auto& x) { return x.command.empty() && x.description == "keep it off LD_LIBRARY_PATH"; }));
}

TEST(FixSearch, TheBudgetBoundsTheSearch) {
  model::Facts facts = facts_of({"te.version=2.8.0", "gpu.compute_capability=10.0", "cudnn.version=9.10.1", "torch.cuda_version=12.8"});
  model::Workload w = workload_of({{"qkv_format", "thd"}, {"attn_mask_type", "padding_causal"}, {"num_heads", "128"}, {"head_dim_qk", "192"},
                                   {"head_dim_v", "128"}, {"max_seqlen_q", "8192"}});
  model::Explanation e = rules::explain(shipped(), facts, w);
  const auto* f = finding(e, "attention-no-backend");
  ASSERT_NE(f, nullptr);
  rules::SearchOptions tiny = options();
  tiny.budget = 3;
  auto few = rules::search_fixes(shipped(), facts, &w, *f, tiny);
  auto all = rules::search_fixes(shipped(), facts, &w, *f, options());
  auto count = [](const std::vector<model::Fix>& v) { return std::count_if(v.begin(), v.end(), [](const auto& x) { return x.verified.has_value(); }); };
  EXPECT_LT(count(few), count(all));
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) (void)rules::search_fixes(shipped(), facts, &w, *f, options());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 5;
  // A generous bound: the default budget costs milliseconds (times the build's factor under ASan).
  EXPECT_LT(seconds, 0.5 * test_support::k_time_factor);
}

// A node finding is searched only with the changes that can move what its rule reads: an NCCL
// rule is cleared by the nearest NCCL wheel within a budget that the 29 cuDNN wheels listed
// before it (none of which can clear it) would use up.
TEST(FixSearch, ChangesThatCannotMoveTheRulesFactsAreNotSpentOn) {
  auto dir = std::filesystem::temp_directory_path() / ("nvte-fix-search-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "old-nccl.yaml");
    out << R"(rules:
  - id: test-nccl-before-2-20
    title: NCCL older than 2.20
    severity: warning
    when: nccl.version < 2.20
    message: NCCL {{nccl.version}} is older than 2.20.
    fixes:
      - kind: config
        command: ""
        description: a newer NCCL
    references: [https://docs.nvidia.com/deeplearning/nccl/release-notes/]
    tests:
      fires: [{nccl.version: 2.19.3}]
      quiet: [{nccl.version: 2.20.3}]
)";
  }
  auto loaded = rules::RuleSet::load({NVTE_RULES_DIR, dir.string()});
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(loaded.rules) << rules::render(loaded.diagnostics);

  model::Facts facts = facts_of({"gpu.compute_capability=9.0", "cudnn.version=9.1.0", "nccl.version=2.19.3", "torch.version=2.6.0",
                                 "torch.cuda_version=12.4"});
  const model::Finding* old = nullptr;
  auto findings = rules::evaluate_node(*loaded.rules, facts);
  for (const auto& f : findings)
    if (f.id == "test-nccl-before-2-20") old = &f;
  ASSERT_NE(old, nullptr);
  rules::SearchOptions tight = options();
  tight.budget = 3;
  auto fixes = rules::search_fixes(*loaded.rules, facts, nullptr, *old, tight);
  auto nccl = std::find_if(fixes.begin(), fixes.end(), [](const model::Fix& x) { return x.verified.has_value() && !change(x, "nccl.version").empty(); });
  ASSERT_NE(nccl, fixes.end()) << "no verified NCCL wheel within a budget of 3";
  EXPECT_EQ(change(*nccl, "nccl.version"), "2.20.3");
}

bool counterfactual(const model::Fix& fix) { return fix.kind == "hardware" || fix.kind == "model"; }

// Megatron-LM's --attention-backend fused with an MLA model on A100 (head_dim_qk 192): Megatron
// turned FlashAttention and UnfusedDotProductAttention off, and FusedAttention on sm80 takes head
// dims up to 128. The first fix is a Megatron argument; a GPU or head-dim change is no fix.
TEST(FixSearch, MegatronMlaOnA100FusedGetsAMegatronArgumentFirst) {
  for (std::string te : {"2.3.0", "2.8.0", "2.18.0"}) {
    SCOPED_TRACE("TE " + te);
    model::Facts facts = facts_of({"te.version=" + te, "gpu.compute_capability=8.0", "cudnn.version=9.1.0", "torch.version=2.6.0",
                                   "torch.cuda_version=12.4", "flash_attn.version=2.7.4"});
    model::Workload w = workload_of({{"qkv_format", "sbhd"}, {"attn_mask_type", "causal"}, {"num_heads", "128"}, {"head_dim_qk", "192"},
                                     {"head_dim_v", "128"}, {"max_seqlen_q", "4096"}, {"attention_backend", "fused"}});
    model::Explanation e = rules::explain(shipped(), facts, w);
    ASSERT_FALSE(e.selected.has_value());
    rules::verify_explanation(shipped(), facts, e, options());
    const auto* f = finding(e, "attention-no-backend");
    ASSERT_NE(f, nullptr);
    auto fixes = verified(*f);
    ASSERT_FALSE(fixes.empty());
    EXPECT_FALSE(counterfactual(*fixes[0])) << fixes[0]->description;
    EXPECT_FALSE(change(*fixes[0], "workload.attention_backend").empty()) << fixes[0]->description;
    EXPECT_NE(fixes[0]->description.find("--attention-backend"), std::string::npos) << fixes[0]->description;
    // Counterfactuals rank after every change the user can make.
    bool seen_counterfactual = false;
    for (const auto* fix : fixes) {
      bool moves_shape = !change(*fix, "gpu.sm").empty() || !change(*fix, "workload.head_dim_qk").empty() ||
                         !change(*fix, "workload.head_dim_v").empty();
      EXPECT_EQ(moves_shape, counterfactual(*fix)) << fix->description;
      if (counterfactual(*fix)) {
        seen_counterfactual = true;
      } else {
        EXPECT_FALSE(seen_counterfactual) << fix->description << " ranks after a counterfactual";
      }
    }
  }
}

TEST(FixSearch, DebugHintsAreNotFixes) {
  model::Facts facts = facts_of({"te.version=2.8.0", "gpu.compute_capability=9.0", "cudnn.version=9.1.0", "env.NVTE_FLASH_ATTN=0",
                                 "env.NVTE_FUSED_ATTN=0", "env.NVTE_UNFUSED_ATTN=0"});
  model::Workload w = workload_of({{"qkv_format", "bshd"}, {"attn_mask_type", "causal"}, {"max_seqlen_q", "2048"}});
  model::Explanation e = rules::explain(shipped(), facts, w);
  rules::verify_explanation(shipped(), facts, e, options());
  const auto* f = finding(e, "attention-no-backend");
  ASSERT_NE(f, nullptr);
  bool debug = false;
  for (const auto& fix : f->fixes) {
    if (fix.command.find("NVTE_DEBUG") == std::string::npos) continue;
    debug = true;
    EXPECT_EQ(fix.kind, "debug");
    EXPECT_FALSE(fix.verified);
  }
  EXPECT_TRUE(debug);
}

TEST(FixSearch, UpgradesRankBeforeDowngradesAndAMajorDowngradeLast) {
  model::Facts facts = facts_of({"te.version=2.3.0", "cudnn.version=9.1.0", "flash_attn.version=2.7.4"});
  auto fix = [](std::string name, std::string value) {
    model::Fix f;
    f.changes = {{std::move(name), std::move(value)}};
    f.verified = model::FixOutcome{"FusedAttention", "", "x"};
    return f;
  };
  auto te_upgrade = rules::detail::fix_rank(fix("te.version", "2.5.0"), facts);
  auto cudnn_downgrade = rules::detail::fix_rank(fix("cudnn.version", "9.0.0"), facts);
  auto te_major_downgrade = rules::detail::fix_rank(fix("te.version", "1.13.0"), facts);
  auto flash_downgrade = rules::detail::fix_rank(fix("flash_attn.version", "2.6.3"), facts);
  auto gpu = rules::detail::fix_rank(fix("gpu.sm", "90"), facts);
  EXPECT_LT(te_upgrade, cudnn_downgrade);      // an upgrade of a costlier kind before a downgrade
  EXPECT_LT(cudnn_downgrade, te_major_downgrade);
  EXPECT_LT(flash_downgrade, te_major_downgrade);
  EXPECT_LT(te_major_downgrade, gpu);           // a counterfactual after everything
}

// The cuDNN pins of every fix in a report (node findings and the workload's).
std::set<std::string> cudnn_pins(const std::vector<model::Finding>& node, const std::vector<model::Explanation>& explanations,
                                 std::set<std::string>* commands = nullptr) {
  std::set<std::string> pins;
  auto scan = [&](const std::vector<model::Fix>& fixes) {
    for (const auto& fix : fixes) {
      if (!fix.verified) continue;
      if (auto v = change(fix, "cudnn.version"); !v.empty()) {
        pins.insert(v);
        if (commands) commands->insert(fix.command);
      }
    }
  };
  for (const auto& f : node) scan(f.fixes);
  for (const auto& e : explanations) {
    for (const auto& f : e.findings) scan(f.fixes);
    for (const auto& [key, verdict] : e.backends)
      for (const auto& reason : verdict.reasons) scan(reason.fixes);
  }
  return pins;
}

TEST(FixSearch, OnePinPerPackageForTheWholeReport) {
  for (std::string te : {"2.3.0", "2.11.0", "2.12.0", "2.18.0"}) {
    SCOPED_TRACE("TE " + te);
    model::Facts facts = facts_of({"te.version=" + te, "gpu.compute_capability=9.0", "cudnn.version=9.1.0", "torch.cuda_version=12.4",
                                   "torch.version=2.6.0"});
    std::vector<model::Finding> node = rules::evaluate_node(shipped(), facts);
    rules::verify_node_findings(shipped(), facts, node, options());
    std::vector<model::Explanation> explanations{rules::explain(shipped(), facts, workload_of(incidents()[1].workload))};
    rules::verify_explanation(shipped(), facts, explanations[0], options());
    rules::unify_pins(shipped(), facts, explanations, &node, options());
    std::set<std::string> commands;
    auto pins = cudnn_pins(node, explanations, &commands);
    ASSERT_EQ(pins.size(), 1u) << testing::PrintToString(pins);
    auto v = *model::Version::parse(*pins.begin());
    if (*model::Version::parse(te) < model::Version{2, 12}) {
      EXPECT_TRUE(commands.count("python3 -m pip install nvidia-cudnn-cu12==9.3.0.75")) << testing::PrintToString(commands);
    } else {
      EXPECT_GE(v, (model::Version{9, 6}));
    }
    // The finding keeps a verified cuDNN fix, and no fix the model refuted is shown as one.
    const auto* f = finding(explanations[0], "attention-cp-all-gather-bottom-right-cudnn");
    ASSERT_NE(f, nullptr);
    for (const auto& fix : f->fixes)
      if (fix.command.find("nvidia-cudnn") != std::string::npos && !fix.verified) {
        EXPECT_TRUE(fix.refuted) << fix.command;
      }
  }
  // B200 with cuDNN 9.10.1 and DeepSeek's packed MLA: one cuDNN release for the workload and the node.
  model::Facts facts = facts_of({"te.version=2.8.0", "gpu.compute_capability=10.0", "cudnn.version=9.10.1", "torch.cuda_version=12.8",
                                 "torch.version=2.7.0"});
  std::vector<model::Finding> node = rules::evaluate_node(shipped(), facts);
  rules::verify_node_findings(shipped(), facts, node, options());
  std::vector<model::Explanation> explanations{rules::explain(
      shipped(), facts, workload_of({{"qkv_format", "thd"}, {"attn_mask_type", "padding_causal"}, {"num_heads", "128"}, {"head_dim_qk", "192"},
                                     {"head_dim_v", "128"}, {"max_seqlen_q", "8192"}}))};
  rules::verify_explanation(shipped(), facts, explanations[0], options());
  rules::unify_pins(shipped(), facts, explanations, &node, options());
  auto pins = cudnn_pins(node, explanations);
  EXPECT_EQ(pins.size(), 1u) << testing::PrintToString(pins);
}

// ---- issue 36: fixes ranked by the outcome -------------------------------------------------

// Packed DeepSeek MLA on an A100 with TE 2.8: TE 2.11 is the smallest TE step that gives a backend
// (UnfusedDotProductAttention takes thd from 2.11), TE 2.17 the first that runs FlashAttention
// (it pads 192/128 for flash-attn 2). The search goes on past the first release that works, and
// the faster outcome ranks first.
TEST(FixSearch, AVersionFamilyGoesOnToTheReleaseThatRunsAFasterBackend) {
  model::Facts facts = facts_of({"te.version=2.8.0", "gpu.compute_capability=8.0", "cudnn.version=9.10.2", "torch.version=2.7.1",
                                 "torch.cuda_version=12.6", "flash_attn.version=2.7.4"});
  model::Workload w = workload_of({{"qkv_format", "thd"},
                                   {"attn_mask_type", "padding_causal"},
                                   {"num_heads", "128"},
                                   {"head_dim_qk", "192"},
                                   {"head_dim_v", "128"},
                                   {"max_seqlen_q", "8192"}});
  model::Explanation e = rules::explain(shipped(), facts, w);
  ASSERT_FALSE(e.selected.has_value());
  rules::verify_explanation(shipped(), facts, e, options());
  const auto* f = finding(e, "attention-no-backend");
  ASSERT_NE(f, nullptr);
  auto fixes = verified(*f);
  ASSERT_FALSE(fixes.empty());
  EXPECT_EQ(change(*fixes[0], "te.version"), "2.17.0") << fixes[0]->description;
  EXPECT_EQ(fixes[0]->verified->backend, "FlashAttention");
  EXPECT_EQ(reapply(facts, w, *fixes[0]).selected.value_or(""), "FlashAttention");
  // Every verified fix a user can make ranks by its outcome: no faster one after a slower one.
  int last = 0;
  for (const auto* fix : fixes) {
    if (counterfactual(*fix)) continue;
    int tier = rules::detail::fix_tier(*fix);
    EXPECT_GE(tier, last) << fix->description;
    last = tier;
  }
}

// Megatron-LM's --attention-backend fused on an A100 with MLA: --attention-backend auto alone
// leaves UnfusedDotProductAttention, no TE release alone helps (Megatron keeps flash-attn off);
// the pair of the two runs FlashAttention, and ranks first.
TEST(FixSearch, APairReachesTheFasterBackendWhereNoSingleChangeDoes) {
  model::Facts facts = facts_of({"te.version=2.8.0", "gpu.compute_capability=8.0", "cudnn.version=9.10.2", "torch.version=2.7.1",
                                 "torch.cuda_version=12.6", "flash_attn.version=2.7.4"});
  model::Workload w = workload_of({{"qkv_format", "sbhd"},
                                   {"attn_mask_type", "causal"},
                                   {"num_heads", "128"},
                                   {"head_dim_qk", "192"},
                                   {"head_dim_v", "128"},
                                   {"max_seqlen_q", "4096"},
                                   {"attention_backend", "fused"}});
  model::Explanation e = rules::explain(shipped(), facts, w);
  ASSERT_FALSE(e.selected.has_value());
  rules::verify_explanation(shipped(), facts, e, options());
  const auto* f = finding(e, "attention-no-backend");
  ASSERT_NE(f, nullptr);
  auto fixes = verified(*f);
  ASSERT_GE(fixes.size(), 2u);
  EXPECT_EQ(fixes[0]->changes.size(), 2u) << fixes[0]->description;
  EXPECT_EQ(change(*fixes[0], "workload.attention_backend"), "auto");
  EXPECT_EQ(change(*fixes[0], "te.version"), "2.17.0");
  EXPECT_EQ(fixes[0]->verified->backend, "FlashAttention");
  EXPECT_EQ(reapply(facts, w, *fixes[0]).selected.value_or(""), "FlashAttention");
  EXPECT_EQ(fixes[1]->changes, (std::vector<std::pair<std::string, std::string>>{{"workload.attention_backend", "auto"}}));
  EXPECT_EQ(fixes[1]->verified->backend, "UnfusedDotProductAttention");
}

// Turning off the backend TE picks (NVTE_FUSED_ATTN=0) reaches another one TE passes over: a fix
// that keeps TE's own pick ranks first, whatever it costs; unfused after both.
TEST(FixSearch, AFixThatKeepsTePickRanksBeforeTurningItOff) {
  model::Facts facts = facts_of({"te.version=2.18.0", "cudnn.version=9.10.2"});
  auto fix = [](std::vector<std::pair<std::string, std::string>> changes, std::string backend) {
    model::Fix f;
    f.changes = std::move(changes);
    f.verified = model::FixOutcome{std::move(backend), "", "x"};
    return f;
  };
  auto off = rules::detail::fix_rank(fix({{"env.NVTE_FUSED_ATTN", "0"}}, "FlashAttention"), facts);
  auto cudnn = rules::detail::fix_rank(fix({{"cudnn.version", "9.12.0.46"}}, "FusedAttention"), facts);
  auto te = rules::detail::fix_rank(fix({{"te.version", "2.19.0"}}, "FusedAttention"), facts);
  auto unfused = rules::detail::fix_rank(fix({{"env.NVTE_FLASH_ATTN", "(unset)"}}, "UnfusedDotProductAttention"), facts);
  auto megatron_fused = rules::detail::fix_rank(fix({{"workload.attention_backend", "fused"}}, "FusedAttention"), facts);
  EXPECT_LT(cudnn, off);
  EXPECT_LT(te, off);
  EXPECT_LT(off, unfused);
  EXPECT_LT(te, megatron_fused);
  EXPECT_EQ(rules::detail::fix_tier(fix({{"workload.attention_backend", "auto"}}, "FusedAttention")), 0);
}

// FP8 attention without a backend (DeepSeek MLA with fp8_dpa on an H100, TE 2.10): the FP8
// switches are verified candidates, cheapest first, the emulation in higher precision last.
TEST(FixSearch, Fp8AttentionWithoutABackendGetsTheFp8Switches) {
  model::Facts facts = facts_of(
      {"te.version=2.10.0", "gpu.compute_capability=9.0", "cudnn.version=9.10.2", "torch.version=2.7.1", "torch.cuda_version=12.6"});
  model::Workload w = workload_of({{"qkv_format", "bshd"},
                                   {"attn_mask_type", "causal"},
                                   {"num_heads", "128"},
                                   {"head_dim_qk", "192"},
                                   {"head_dim_v", "128"},
                                   {"max_seqlen_q", "8192"},
                                   {"fp8", "true"},
                                   {"fp8_dpa", "true"}});
  model::Explanation e = rules::explain(shipped(), facts, w);
  ASSERT_FALSE(e.selected.has_value());
  rules::verify_explanation(shipped(), facts, e, options());
  const auto* f = finding(e, "attention-no-backend");
  ASSERT_NE(f, nullptr);
  auto fixes = verified(*f);
  ASSERT_GE(fixes.size(), 3u);
  EXPECT_EQ(fixes[0]->command, "export NVTE_DPA_FP8_RECIPE=F16");
  EXPECT_EQ(change(*fixes[1], "workload.fp8_dpa"), "false");
  EXPECT_EQ(fixes[1]->kind, "config");
  for (const auto* fix : fixes) {
    if (counterfactual(*fix)) continue;
    EXPECT_EQ(reapply(facts, w, *fix).selected.value_or(""), fix->verified->backend) << fix->description;
  }
  auto emulate =
      std::find_if(fixes.begin(), fixes.end(), [](const auto* x) { return !change(*x, "env.NVTE_UnfusedDPA_Emulate_FP8").empty(); });
  ASSERT_NE(emulate, fixes.end());
  EXPECT_EQ((*emulate)->verified->backend, "UnfusedDotProductAttention");
  for (auto it = emulate + 1; it != fixes.end(); ++it) EXPECT_TRUE(counterfactual(**it)) << (*it)->description << " after the emulation";
  // The dtype switch that would turn FP8 attention off unsaid is no candidate.
  EXPECT_TRUE(std::none_of(fixes.begin(), fixes.end(), [](const auto* x) { return !change(*x, "workload.qkv_dtype").empty(); }));
}

// FP8 on an A100 (fp8-needs-sm89: TE aborts at the first FP8 autocast): training in BF16 is a
// verified change of the workload, not only "another GPU"; the rule's words for the same change
// are not printed beside it.
TEST(FixSearch, Fp8BelowSm89GetsBf16TrainingAsAVerifiedFix) {
  model::Facts facts = facts_of({"te.version=2.8.0", "gpu.compute_capability=8.0", "cudnn.version=9.10.2", "torch.version=2.7.1",
                                 "torch.cuda_version=12.6", "flash_attn.version=2.7.4"});
  model::Workload w = workload_of({{"qkv_format", "bshd"},
                                   {"attn_mask_type", "causal"},
                                   {"num_heads", "32"},
                                   {"num_gqa_groups", "8"},
                                   {"head_dim_qk", "128"},
                                   {"max_seqlen_q", "8192"},
                                   {"fp8", "true"}});
  model::Explanation e = rules::explain(shipped(), facts, w);
  rules::verify_explanation(shipped(), facts, e, options());
  const auto* f = finding(e, "fp8-needs-sm89");
  ASSERT_NE(f, nullptr);
  auto fixes = verified(*f);
  ASSERT_FALSE(fixes.empty());
  EXPECT_EQ(change(*fixes[0], "workload.fp8"), "false") << fixes[0]->description;
  EXPECT_FALSE(counterfactual(*fixes[0]));
  EXPECT_EQ(finding(reapply(facts, w, *fixes[0]), "fp8-needs-sm89"), nullptr);
  for (const auto& fix : f->fixes)
    EXPECT_EQ(fix.description.find("Train in BF16"), std::string::npos) << "the rule's words for the verified change, again";
}

// Seed incident 2 on TE 2.18: the rule's "or use cp_comm_type="p2p"" is the search's verified
// cp_comm_type=p2p, shown once; packing sequences is a counterfactual, no fix; no command twice.
TEST(FixSearch, NoFixTwiceAndPackingIsACounterfactual) {
  model::Facts facts = facts_of(
      {"te.version=2.18.0", "gpu.compute_capability=9.0", "cudnn.version=9.3.0", "torch.cuda_version=12.8", "flash_attn.version=2.5.8"});
  model::Workload w = workload_of({{"qkv_format", "bshd"},
                                   {"attn_mask_type", "causal"},
                                   {"num_heads", "32"},
                                   {"head_dim_qk", "128"},
                                   {"max_seqlen_q", "2048"},
                                   {"cp_size", "2"},
                                   {"cp_comm_type", "all_gather"}});
  model::Explanation e = rules::explain(shipped(), facts, w);
  rules::verify_explanation(shipped(), facts, e, options());
  ASSERT_FALSE(e.findings.empty());
  for (const auto& f : e.findings) {
    SCOPED_TRACE(f.id);
    std::set<std::string> commands;
    int p2p = 0;
    for (const auto& fix : f.fixes) {
      if (!fix.command.empty()) {
        EXPECT_TRUE(commands.insert(fix.command).second) << fix.command << " twice";
      }
      if (fix.description.find("cp_comm_type=\"p2p\"") != std::string::npos || change(fix, "workload.cp_comm_type") == "p2p") ++p2p;
      if (!change(fix, "workload.qkv_format").empty() && change(fix, "workload.qkv_format") == "thd") {
        EXPECT_EQ(fix.kind, "model") << fix.description;
      }
    }
    EXPECT_LE(p2p, 1);
  }
}

// The hint to turn TE's debug logging on is no hint where it is on (the input is that log).
TEST(FixSearch, TheDebugHintIsLeftOutWhereItsVariablesAreSet) {
  for (bool logging : {false, true}) {
    std::vector<std::string> sets{"te.version=2.8.0",      "gpu.compute_capability=9.0", "cudnn.version=9.1.0",
                                  "env.NVTE_FLASH_ATTN=0", "env.NVTE_FUSED_ATTN=0",      "env.NVTE_UNFUSED_ATTN=0"};
    if (logging) sets.insert(sets.end(), {"env.NVTE_DEBUG=1", "env.NVTE_DEBUG_LEVEL=2"});
    model::Facts facts = facts_of(sets);
    model::Workload w = workload_of({{"qkv_format", "bshd"}, {"attn_mask_type", "causal"}, {"max_seqlen_q", "2048"}});
    model::Explanation e = rules::explain(shipped(), facts, w);
    rules::verify_explanation(shipped(), facts, e, options());
    const auto* f = finding(e, "attention-no-backend");
    ASSERT_NE(f, nullptr);
    bool debug = std::any_of(f->fixes.begin(), f->fixes.end(), [](const model::Fix& x) { return x.kind == "debug"; });
    EXPECT_EQ(debug, !logging);
  }
}

// explain unifies pins over the workloads' findings, check over those and the node's: both must
// print the same pin for the workload (gpt-oss's sliding window on an A100 with TE 2.3 and cuDNN
// 9.1: the window's reason asks cuDNN 9.6, the node's cudnn-below-te-minimum 9.3).
TEST(FixSearch, ExplainAndCheckPinTheSameRelease) {
  model::Facts facts = facts_of({"te.version=2.3.0", "gpu.compute_capability=8.0", "cudnn.version=9.1.0", "torch.version=2.7.1",
                                 "torch.cuda_version=12.6", "flash_attn.version=2.7.4"});
  model::Workload w = workload_of({{"qkv_format", "bshd"},
                                   {"attn_mask_type", "causal"},
                                   {"num_heads", "64"},
                                   {"num_gqa_groups", "8"},
                                   {"head_dim_qk", "64"},
                                   {"max_seqlen_q", "8192"},
                                   {"softmax_type", "learnable"},
                                   {"window_size", "128,0"}});
  std::vector<model::Explanation> explain_side{rules::explain(shipped(), facts, w)};
  rules::verify_explanation(shipped(), facts, explain_side[0], options());
  rules::unify_pins(shipped(), facts, explain_side, nullptr, options());
  std::vector<model::Finding> node = rules::evaluate_node(shipped(), facts);
  ASSERT_TRUE(std::any_of(node.begin(), node.end(), [](const model::Finding& f) { return f.id == "cudnn-below-te-minimum"; }));
  rules::verify_node_findings(shipped(), facts, node, options());
  std::vector<model::Explanation> check_side{rules::explain(shipped(), facts, w)};
  rules::verify_explanation(shipped(), facts, check_side[0], options());
  rules::unify_pins(shipped(), facts, check_side, &node, options());
  auto explained = cudnn_pins({}, explain_side);
  ASSERT_FALSE(explained.empty());
  EXPECT_EQ(explained, cudnn_pins({}, check_side));
  EXPECT_EQ(explained, cudnn_pins(node, check_side)); // and the node's finding pins it too
}

} // namespace

// ---- The node can load what it is told to install (issue 38, item 2) ---------------------------

const rules::PackageRelease* release_of(std::string_view package, std::string_view version) {
  const rules::Package* p = shipped().catalog().find(package);
  if (!p) return nullptr;
  auto v = model::Version::parse(version);
  for (const auto& r : p->releases)
    if (v && r.version == *v) return &r;
  return nullptr;
}

rules::NodeAbi node_abi(long cuda, std::string_view python, std::string_view glibc, std::string_view driver, long sm) {
  rules::NodeAbi node;
  node.cuda_major = cuda;
  node.python = *model::Version::parse(python);
  node.torch = *model::Version::parse("2.9.0");
  node.glibc = *model::Version::parse(glibc);
  node.driver = *model::Version::parse(driver);
  node.max_sm = sm;
  return node;
}

TEST(FixSearchNodeFit, EachReleaseSaysWhatItNeedsOfTheNode) {
  const auto* te = release_of("transformer-engine", "2.18.0");
  const auto* cudnn = release_of("nvidia-cudnn-cu12", "9.11.0.98");
  const auto* cudnn13 = release_of("nvidia-cudnn-cu13", "9.28.1.4");
  const auto* frontend = release_of("nvidia-cudnn-frontend", "1.32.0");
  const auto* fa4 = release_of("flash-attn-4", "4.0.0b24");
  const auto* fa2 = release_of("flash-attn", "2.8.3");
  ASSERT_TRUE(te && cudnn && cudnn13 && frontend && fa4 && fa2);
  const auto& catalog = shipped().catalog();

  // TE's wheels are manylinux_2_28.
  EXPECT_NE(rules::misfit(*te, node_abi(12, "3.12", "2.27", "570.172.08", 90)).find("glibc 2.28"), std::string::npos);
  EXPECT_EQ(rules::misfit(*te, node_abi(12, "3.12", "2.35", "570.172.08", 90)), "");
  // cuDNN's CUDA 12 wheel: 525.60.13, and 570.26 for its Blackwell kernels; CUDA 13: 580.65.06.
  EXPECT_EQ(rules::misfit(*cudnn, node_abi(12, "3.12", "2.35", "550.54.15", 90)), "");
  EXPECT_NE(rules::misfit(*cudnn, node_abi(12, "3.12", "2.35", "550.54.15", 100)).find("570.26"), std::string::npos);
  EXPECT_NE(rules::misfit(*cudnn, node_abi(12, "3.12", "2.35", "520.61.05", 80)).find("525.60.13"), std::string::npos);
  EXPECT_NE(rules::misfit(*cudnn13, node_abi(13, "3.12", "2.35", "570.172.08", 90)).find("580.65.06"), std::string::npos);
  // The frontend's wheels are per CPython from 3.10.
  EXPECT_NE(rules::misfit(*frontend, node_abi(12, "3.9", "2.35", "570.172.08", 90)).find("Python 3.9"), std::string::npos);
  // flash-attn 2.8.3's prebuilt wheel was built on ubuntu-22.04; with no prebuilt wheel for the
  // node's torch, pip compiles it and the node's glibc is what it links against.
  rules::NodeAbi old_glibc = node_abi(12, "3.12", "2.31", "570.172.08", 90);
  old_glibc.torch = *model::Version::parse("2.8.0");
  EXPECT_NE(rules::misfit(*fa2, old_glibc).find("glibc 2.35"), std::string::npos);
  old_glibc.torch = *model::Version::parse("2.10.0");
  EXPECT_EQ(rules::misfit(*fa2, old_glibc), "");
  // What a release requires must have a release for the node: flash-attn-4 beta24 pins the CUTLASS
  // DSL 4.6.0.dev0, whose wheels are manylinux_2_28.
  EXPECT_EQ(rules::misfit(*fa4, node_abi(12, "3.12", "2.27", "570.172.08", 100)), "");
  EXPECT_NE(rules::misfit(catalog, *fa4, node_abi(12, "3.12", "2.27", "570.172.08", 100)).find("nvidia-cutlass-dsl==4.6.0.dev0"),
            std::string::npos);
  EXPECT_EQ(rules::misfit(catalog, *fa4, node_abi(12, "3.12", "2.28", "570.172.08", 100)), "");
}

TEST(FixSearchNodeFit, NoCudnnWheelIsProposedToABlackwellNodeWhoseDriverCannotLoadIt) {
  // The #2285 case of BlackwellMlaThdGetsCudnn911First, on a 550 driver: cuDNN's CUDA 12 wheel
  // needs 570.26 for its Blackwell kernels, so no cuDNN release is a fix, and a TE release
  // (manylinux_2_28) is none on glibc 2.27 either.
  model::Workload w = workload_of({{"qkv_format", "thd"},
                                   {"attn_mask_type", "padding_causal"},
                                   {"num_heads", "128"},
                                   {"head_dim_qk", "192"},
                                   {"head_dim_v", "128"},
                                   {"max_seqlen_q", "8192"}});
  for (std::string driver : {"570.172.08", "550.54.15"}) {
    model::Facts facts = facts_of({"te.version=2.8.0", "gpu.compute_capability=10.0", "cudnn.version=9.10.1", "torch.cuda_version=12.8",
                                   "driver.version=" + driver, "system.glibc_version=2.27"});
    model::Explanation e = rules::explain(shipped(), facts, w);
    rules::verify_explanation(shipped(), facts, e, options());
    const auto* f = finding(e, "attention-no-backend");
    ASSERT_NE(f, nullptr);
    bool cudnn_fix = false;
    for (const auto& fix : f->fixes) {
      if (!fix.verified) continue;
      EXPECT_EQ(change(fix, "te.version"), "") << "a TE wheel needs glibc 2.28: " << fix.command;
      cudnn_fix = cudnn_fix || !change(fix, "cudnn.version").empty();
    }
    EXPECT_EQ(cudnn_fix, driver == "570.172.08") << driver;
  }
}

TEST(FixSearchNodeFit, ARuleWrittenInstallTheNodeCannotLoadIsUnverifiedWithTheReason) {
  model::Finding f;
  f.id = "cudnn-below-te-minimum";
  f.severity = model::Severity::warning;
  f.fixes = {model::Fix{"pip", "python3 -m pip install nvidia-cudnn-cu12==9.27.0.42", "a current cuDNN", {}, std::nullopt, {}, false}};
  model::Facts facts = facts_of(
      {"te.version=2.3.0", "cudnn.version=9.1.0", "gpu.compute_capability=9.0", "torch.cuda_version=12.4", "system.glibc_version=2.17"});
  auto fixes = rules::search_fixes(shipped(), facts, nullptr, f, options());
  ASSERT_FALSE(fixes.empty());
  bool said = false, manylinux2014 = false;
  for (const auto& fix : fixes) {
    // Only the manylinux2014 wheels (9.1, 9.3) load on glibc 2.17.
    if (fix.verified && !change(fix, "cudnn.version").empty()) {
      EXPECT_EQ(change(fix, "cudnn.version"), "9.3.0.75") << fix.command;
      manylinux2014 = true;
    }
    if (fix.command.find("9.27.0.42") != std::string::npos) {
      EXPECT_FALSE(fix.verified);
      said = fix.unverified_reason.find("glibc 2.27") != std::string::npos;
    }
  }
  EXPECT_TRUE(said);
  EXPECT_TRUE(manylinux2014);
}

TEST(FixSearchNodeFit, TheFrontendFixOfTe218VerifiesAndRanksBeforeATeDowngrade) {
  model::Facts facts = facts_of({"te.version=2.18.0", "te.cuda_major=12", "te.distribution=transformer-engine-cu12", "torch.version=2.9.0",
                                 "torch.cuda_version=12.8", "python.version=3.12.3", "gpu.compute_capability=9.0", "cudnn.version=9.19.0",
                                 "system.glibc_version=2.35", "driver.version=570.172.08", "te.requirements.missing_count=1",
                                 "te.requirements.missing[0].requirement=nvidia-cudnn-frontend>=1.25.0",
                                 "te.requirements.missing[0].name=nvidia_cudnn_frontend",
                                 "te.requirements.missing[0].required_by=transformer_engine_torch"});
  auto findings = rules::evaluate_node(shipped(), facts);
  EXPECT_TRUE(std::none_of(findings.begin(), findings.end(), [](const auto& x) { return x.id == "te-requirement-missing"; }));
  rules::verify_node_findings(shipped(), facts, findings, options());
  const model::Finding* f = nullptr;
  for (const auto& x : findings)
    if (x.id == "te-cudnn-frontend-missing") f = &x;
  ASSERT_NE(f, nullptr);
  auto fixes = verified(*f);
  ASSERT_FALSE(fixes.empty());
  // The rule's own fix, its range resolved to the catalog's newest release for this node.
  EXPECT_EQ(fixes[0]->command, "python3 -m pip install nvidia-cudnn-frontend==1.32.0");
  EXPECT_EQ(change(*fixes[0], "cudnn_frontend.version"), "1.32.0");
  EXPECT_NE(fixes[0]->description.find("frontend wheel TE requires"), std::string::npos) << fixes[0]->description;
  EXPECT_EQ(change(*fixes[0], "te.version"), "");
}

TEST(FixSearchNodeFit, InstallingAReleaseInstallsWhatItRequires) {
  const auto& catalog = shipped().catalog();
  const rules::Package* fa4 = catalog.find("flash-attn-4");
  const rules::Package* te = catalog.find("transformer-engine");
  ASSERT_TRUE(fa4 && te);
  model::Workload w;
  std::string why;
  // flash-attn-4 beta24 brings the CUTLASS DSL it pins, replacing a newer one (pip does).
  model::Facts facts = facts_of({"python.version=3.12.3", "package.nvidia_cutlass_dsl.version=4.6.2"});
  rules::detail::Change b24{rules::detail::ChangeKind::package, "flash_attn_4.version", "4.0.0b24", fa4,
                            release_of("flash-attn-4", "4.0.0b24")};
  ASSERT_TRUE(rules::detail::apply_change(b24, facts, w, why, &catalog)) << why;
  EXPECT_EQ(facts.get_string("package.nvidia_cutlass_dsl.version"), "4.6.0.dev0");
  // beta27 asks for >=4.6.2: an installed 4.6.2 stays.
  model::Facts newer = facts_of({"python.version=3.12.3", "package.nvidia_cutlass_dsl.version=4.6.2"});
  rules::detail::Change b27{rules::detail::ChangeKind::package, "flash_attn_4.version", "4.0.0b27", fa4,
                            release_of("flash-attn-4", "4.0.0b27")};
  ASSERT_TRUE(rules::detail::apply_change(b27, newer, w, why, &catalog)) << why;
  EXPECT_EQ(newer.get_string("package.nvidia_cutlass_dsl.version"), "4.6.2");
  // TE 2.18 installs the frontend first, in a command of its own, and meets the requirement.
  model::Facts te_facts = facts_of({"python.version=3.12.3", "te.version=2.17.1", "te.requirements.missing_count=1",
                                    "te.requirements.missing[0].requirement=onnxscript", "te.requirements.missing[0].name=onnxscript"});
  rules::detail::Change te218{rules::detail::ChangeKind::package, "te.version", "2.18.0", te, release_of("transformer-engine", "2.18.0")};
  ASSERT_TRUE(rules::detail::apply_change(te218, te_facts, w, why, &catalog)) << why;
  EXPECT_EQ(te_facts.get_string("cudnn_frontend.version"), "1.32.0");
  EXPECT_EQ(te_facts.get_int("te.requirements.missing_count"), 0);
  model::Fix fix = rules::detail::render_changes({te218}, te_facts);
  EXPECT_EQ(fix.command, "python3 -m pip install 'nvidia-cudnn-frontend>=1.25.0' && python3 -m pip install --no-build-isolation "
                         "'transformer_engine[pytorch]==2.18.0'");
}

TEST(FixSearchNodeFit, PipInstallOfAnUnmetRequirementMeetsItAndNothingElse) {
  // `pip install pydantic` (TE's import needs it; no catalog package): the search reads it as
  // meeting the unmet requirement the node records, so the rule's own fix can be verified.
  const auto& catalog = shipped().catalog();
  model::Facts facts = facts_of({"python.version=3.12.3", "te.version=2.15.0", "te.requirements.missing_count=2",
                                 "te.requirements.missing[0].requirement=pydantic", "te.requirements.missing[0].name=pydantic",
                                 "te.requirements.missing[1].requirement=einops", "te.requirements.missing[1].name=einops"});
  auto node = rules::detail::node_abi(facts);
  auto read = rules::detail::interpret_command("python3 -m pip install pydantic", catalog, node);
  ASSERT_TRUE(read.ok) << read.why_not;
  ASSERT_EQ(read.changes.size(), 1u);
  EXPECT_EQ(read.changes[0].kind, rules::detail::ChangeKind::requirement);
  model::Workload w;
  std::string why;
  ASSERT_TRUE(rules::detail::apply_change(read.changes[0], facts, w, why, &catalog)) << why;
  EXPECT_EQ(facts.get_int("te.requirements.missing_count"), 1);
  EXPECT_EQ(facts.get_string("te.requirements.missing[0].name"), "einops");
  model::Fix fix = rules::detail::render_changes(read.changes, facts);
  EXPECT_EQ(fix.command, "python3 -m pip install pydantic");
  // A Python package (class 3): ranked before a TE release that also clears the finding (4).
  ASSERT_EQ(fix.changes.size(), 1u);
  EXPECT_EQ(rules::detail::change_class(fix.changes[0].first), 3);
  // A package the node does not miss and the catalog does not list stays unverifiable.
  auto other = rules::detail::interpret_command("python3 -m pip install left-pad", catalog, node);
  ASSERT_TRUE(other.ok);
  EXPECT_FALSE(rules::detail::apply_change(other.changes[0], facts, w, why, &catalog));
  EXPECT_EQ(why, "the catalog of published versions does not list left-pad");
}

TEST(FixSearchNodeFit, LibraryAndPackageFactsAreChangesTheUserCanMake) {
  // A cuBLAS wheel is a library wheel, the CUTLASS DSL and the frontend Python packages: none
  // of them a counterfactual ("would also run"), which the fall-through class 7 (a GPU) was.
  EXPECT_EQ(rules::detail::change_class("cublaslt.version"), 2);
  EXPECT_EQ(rules::detail::change_class("package.nvidia_cutlass_dsl.version"), 3);
  EXPECT_EQ(rules::detail::change_class("cudnn_frontend.version"), 3);
  EXPECT_EQ(rules::detail::change_class("gpu.sm"), 7);
  model::Fix cublas{
      "pip", "python3 -m pip install nvidia-cublas-cu12==12.9.2.10", "", {{"cublaslt.version", "12.9.2.10"}}, std::nullopt, {}, false};
  EXPECT_EQ(std::get<0>(rules::detail::fix_rank(cublas, model::Facts{})), 0);
}
