// check's fix searches across runs (app/fix_cache.hpp): an unchanged node, and an unchanged
// workload on it, are answered from the cache with the fixes the search gave; any other fact or
// workload value asks anew; the probe's timings are no part of a question unless a rule may read
// them; the cache holds answers, not questions; the encodings keep every field of a fix and refuse
// fixes for other findings or reasons.
#include "app/fix_cache.hpp"

#include "app/rules_loading.hpp"
#include "app/workloads.hpp"
#include "rules/verdict.hpp"
#include "support/shipped_rules.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

model::Facts snapshot(const std::string& name) {
  std::ifstream in(std::filesystem::path(NVTE_FIXTURES_DIR) / "snapshots" / name);
  std::stringstream text;
  text << in.rdbuf();
  auto facts = model::Facts::from_json(text.str(), name);
  EXPECT_TRUE(facts.ok()) << name;
  model::Facts out = facts.ok() ? *facts : model::Facts{};
  out.set("doctor.workloads", 3L); // as check sets it before the node rules
  return out;
}

struct CacheDir {
  std::filesystem::path path;
  CacheDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "nvte-fixcache-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~CacheDir() { std::filesystem::remove_all(path); }
};

// The node findings of facts with their fixes, through the cache in dir; searched says how many
// candidate outcomes the search worked out (none when the answer came from the cache).
std::vector<model::Finding> searched(const std::filesystem::path& dir, const model::Facts& facts, std::size_t* worked_out) {
  app::Options options;
  options.cache_dir = dir / "cache";
  rules::IncrementalCheck check;
  rules::SearchOptions search = app::fix_search_options();
  search.check_incremental = &check;
  auto findings = rules::evaluate_node(test_support::shipped_rules(), facts);
  app::FixCache cache(options);
  cache.verify_node_findings(test_support::shipped_rules(), facts, findings, search);
  cache.save();
  *worked_out = check.compared;
  return findings;
}

// The workload of a Megatron launch script in the fixtures.
model::Workload megatron(const std::string& name) {
  app::Options options;
  options.megatron_args = {std::filesystem::path(NVTE_FIXTURES_DIR) / "megatron" / name};
  auto workloads = app::load_workloads(options);
  EXPECT_EQ(workloads.size(), 1u);
  return workloads.empty() ? model::Workload{} : workloads[0];
}

// The explanation of workload on facts with its fix search, through the cache in dir; answered
// says whether the cache answered.
model::Explanation explained(const std::filesystem::path& dir, const model::Facts& facts, const model::Workload& workload, bool* answered) {
  app::Options options;
  options.cache_dir = dir / "cache";
  auto e = rules::explain(test_support::shipped_rules(), facts, workload);
  app::FixCache cache(options);
  cache.verify_explanation(test_support::shipped_rules(), facts, e, app::fix_search_options());
  cache.save();
  *answered = cache.answered() == 1;
  return e;
}

std::size_t verified_fixes(const model::Explanation& e) {
  std::size_t n = 0;
  for (const auto& f : e.findings)
    for (const auto& fix : f.fixes) n += fix.verified ? 1 : 0;
  for (const auto& [key, verdict] : e.backends)
    for (const auto& r : verdict.reasons)
      for (const auto& fix : r.fixes) n += fix.verified ? 1 : 0;
  return n;
}

// A rules set of one rule with a config fix.
rules::LoadResult one_rule(const std::string& id, const std::string& when, const std::string& message) {
  return rules::RuleSet::load_text("rules:\n  - id: " + id + "\n    title: t\n    severity: warning\n    when: " + when +
                                       "\n    message: \"" + message + "\"\n    fixes:\n      - kind: config\n        description: d\n",
                                   "timing.yaml");
}

bool any_verified(const std::vector<model::Finding>& findings) {
  for (const auto& f : findings)
    for (const auto& fix : f.fixes)
      if (fix.verified) return true;
  return false;
}

} // namespace

TEST(FixCache, AnUnchangedNodeIsAnsweredFromTheCache) {
  CacheDir dir;
  const model::Facts facts = snapshot("h100-node-te.json");
  std::size_t worked_out = 0;
  const auto searched_once = searched(dir.path, facts, &worked_out);
  ASSERT_TRUE(any_verified(searched_once)); // a question with verified fixes in its answer
  EXPECT_GT(worked_out, 0u);
  const std::string answer = app::encode_node_fixes(searched_once);

  // Asked again, with the probe's timings of another run (no part of the question): the stored
  // answer, no candidate worked out.
  model::Facts rerun = facts;
  rerun.set("probe.python.seconds", 0.004);
  rerun.set("probe.native.seconds", 0.002);
  EXPECT_EQ(app::encode_node_fixes(searched(dir.path, rerun, &worked_out)), answer);
  EXPECT_EQ(worked_out, 0u);

  // Any other fact is another question: searched.
  model::Facts changed = facts;
  changed.set("system.hostname", "another-node");
  EXPECT_EQ(app::encode_node_fixes(searched(dir.path, changed, &worked_out)), answer);
  EXPECT_GT(worked_out, 0u);

  // --no-cache (no directory): always searched.
  app::Options no_cache;
  no_cache.no_cache = true;
  rules::IncrementalCheck check;
  rules::SearchOptions search = app::fix_search_options();
  search.check_incremental = &check;
  auto findings = rules::evaluate_node(test_support::shipped_rules(), facts);
  app::FixCache(no_cache).verify_node_findings(test_support::shipped_rules(), facts, findings, search);
  EXPECT_GT(check.compared, 0u);
  EXPECT_EQ(app::encode_node_fixes(findings), answer);
}

TEST(FixCache, TimingsAreAskedWhenARuleMayReadThem) {
  const std::vector<std::string> timings{"probe.python.seconds"};
  EXPECT_FALSE(rules::node_rules_may_read(test_support::shipped_rules(), timings));
  auto loaded = one_rule("slow-python-probe", "probe.python.seconds > 1", "slow");
  ASSERT_TRUE(loaded.rules) << rules::render(loaded.diagnostics);
  EXPECT_TRUE(rules::node_rules_may_read(*loaded.rules, timings));
  EXPECT_FALSE(rules::node_rules_may_read(*loaded.rules, {"probe.native.seconds"}));
  EXPECT_FALSE(rules::rules_may_read(test_support::shipped_rules(), timings));
  EXPECT_TRUE(rules::rules_may_read(*loaded.rules, timings));

  // A workload rule's message reading a timing makes the timings part of a workload's question.
  auto workload_rule =
      one_rule("slow-python-probe-workload", "workload.head_dim_qk > 1", "the python probe took {{probe.python.seconds}} s");
  ASSERT_TRUE(workload_rule.rules) << rules::render(workload_rule.diagnostics);
  EXPECT_FALSE(rules::node_rules_may_read(*workload_rule.rules, timings));
  EXPECT_TRUE(rules::rules_may_read(*workload_rule.rules, timings));

  // Then another timing is another question for a workload: asked anew (the same one answered).
  CacheDir dir;
  model::Facts facts = snapshot("a100-node.json");
  facts.set("te.version", *model::Version::parse("2.18.0"));
  const auto workload = megatron("llama3_8b_fp8.sh");
  app::Options options;
  options.cache_dir = dir.path / "cache";
  std::vector<std::size_t> answered;
  for (double seconds : {0.004, 0.004, 0.005}) {
    facts.set("probe.python.seconds", seconds);
    auto e = rules::explain(*workload_rule.rules, facts, workload);
    app::FixCache cache(options);
    cache.verify_explanation(*workload_rule.rules, facts, e, app::fix_search_options());
    cache.save();
    answered.push_back(cache.answered());
  }
  EXPECT_EQ(answered, (std::vector<std::size_t>{0, 1, 0}));
}

TEST(FixCache, EncodingKeepsEveryFieldAndRefusesOtherFindings) {
  model::Finding a, b;
  a.id = "first";
  b.id = "second";
  model::Fix verified;
  verified.kind = "pip";
  verified.command = "python3 -m pip install 'nvidia-cudnn-cu12==9.3.0.75'";
  verified.description = "a description\nover two lines, with : and 12:";
  verified.changes = {{"cudnn.version", "9.3.0"}, {"env.NVTE_FLASH_ATTN", "(unset)"}};
  verified.verified = model::FixOutcome{"FusedAttention", "F16_arbitrary_seqlen", "first"};
  model::Fix refuted;
  refuted.kind = "env";
  refuted.unverified_reason = "with X the backend is still out";
  refuted.refuted = true;
  a.fixes = {verified, refuted};
  std::vector<model::Finding> stored{a, b};
  const std::string text = app::encode_node_fixes(stored);

  std::vector<model::Finding> read{a, b};
  read[0].fixes.clear();
  ASSERT_TRUE(app::decode_node_fixes(text, read));
  EXPECT_EQ(app::encode_node_fixes(read), text);
  ASSERT_EQ(read[0].fixes.size(), 2u);
  EXPECT_EQ(read[0].fixes[0].changes, verified.changes);
  ASSERT_TRUE(read[0].fixes[0].verified);
  EXPECT_EQ(read[0].fixes[0].verified->sub_backend, "F16_arbitrary_seqlen");
  EXPECT_TRUE(read[0].fixes[1].refuted);
  EXPECT_FALSE(read[0].fixes[1].verified);

  std::vector<model::Finding> other{b, a}; // the same ids in another order
  EXPECT_FALSE(app::decode_node_fixes(text, other));
  std::vector<model::Finding> fewer{a};
  EXPECT_FALSE(app::decode_node_fixes(text, fewer));
  EXPECT_FALSE(app::decode_node_fixes(text.substr(0, text.size() - 3), read));
  EXPECT_EQ(fewer[0].fixes.size(), 2u); // left as they were
}

TEST(FixCache, AnUnchangedWorkloadIsAnsweredFromTheCache) {
  CacheDir dir;
  model::Facts facts = snapshot("a100-node.json");
  facts.set("te.version", *model::Version::parse("2.18.0"));
  const auto workload = megatron("llama3_8b_fp8.sh");
  bool answered = true;
  const auto first = explained(dir.path, facts, workload, &answered);
  EXPECT_FALSE(answered);
  ASSERT_GT(verified_fixes(first), 0u); // an answer with verified fixes
  const std::string answer = app::encode_explanation_fixes(first);
  auto searched = rules::explain(test_support::shipped_rules(), facts, workload);
  rules::verify_explanation(test_support::shipped_rules(), facts, searched, app::fix_search_options());
  EXPECT_EQ(app::encode_explanation_fixes(searched), answer);

  // Again, with the probe's timings of another run: the stored answer.
  model::Facts rerun = facts;
  rerun.set("probe.python.seconds", 0.004);
  EXPECT_EQ(app::encode_explanation_fixes(explained(dir.path, rerun, workload, &answered)), answer);
  EXPECT_TRUE(answered);

  // Another value of the workload, another fact, another workload name: searched.
  model::Workload longer = workload;
  ASSERT_TRUE(longer.set_text("max_seqlen_q", "1234").ok());
  explained(dir.path, facts, longer, &answered);
  EXPECT_FALSE(answered);
  model::Facts changed = facts;
  changed.set("system.hostname", "another-node");
  EXPECT_EQ(app::encode_explanation_fixes(explained(dir.path, changed, workload, &answered)), answer);
  EXPECT_FALSE(answered);
  model::Workload renamed = workload;
  renamed.name = "another";
  explained(dir.path, facts, renamed, &answered);
  EXPECT_FALSE(answered);

  // The cache holds the answers, not the questions (the facts): a few kilobytes for five.
  std::error_code ec;
  auto size = std::filesystem::file_size(dir.path / "cache" / "check-fixes.cache", ec);
  ASSERT_FALSE(ec);
  EXPECT_LT(size, 64u << 10);
  std::ifstream in(dir.path / "cache" / "check-fixes.cache");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str().find("another-node"), std::string::npos);
}

TEST(FixCache, ExplanationEncodingKeepsReasonsFixesAndRefusesOtherReasons) {
  model::Explanation e;
  model::Finding f;
  f.id = "finding";
  model::Fix fix;
  fix.kind = "env";
  fix.command = "export NVTE_FUSED_ATTN=1";
  fix.verified = model::FixOutcome{"FusedAttention", "", ""};
  f.fixes = {fix};
  e.findings = {f};
  model::Reason a{"rule-a", "message a", {fix}};
  model::Reason b{"rule-b", "message b", {}};
  e.backends["flash_attention"].reasons = {a, b};
  e.backends["fused_attention"].reasons = {b};
  const std::string text = app::encode_explanation_fixes(e);

  model::Explanation read = e;
  read.findings[0].fixes.clear();
  read.backends["flash_attention"].reasons[0].fixes.clear();
  ASSERT_TRUE(app::decode_explanation_fixes(text, read));
  EXPECT_EQ(app::encode_explanation_fixes(read), text);
  ASSERT_EQ(read.backends["flash_attention"].reasons[0].fixes.size(), 1u);
  EXPECT_TRUE(read.backends["flash_attention"].reasons[0].fixes[0].verified);

  model::Explanation other = e; // a reason of another rule
  other.backends["fused_attention"].reasons[0].rule = "rule-c";
  EXPECT_FALSE(app::decode_explanation_fixes(text, other));
  model::Explanation more = e; // one reason more
  more.backends["fused_attention"].reasons.push_back(b);
  EXPECT_FALSE(app::decode_explanation_fixes(text, more));
  model::Explanation fewer = e;
  fewer.backends.erase("fused_attention");
  fewer.findings[0].fixes.clear();
  EXPECT_FALSE(app::decode_explanation_fixes(text, fewer));
  EXPECT_TRUE(fewer.findings[0].fixes.empty()); // left as it was
}

// One pin per package (app::unify_pins_per_context) re-checks fixes for every package two of
// them pin differently: with every search answered from the cache it was most of check's work
// after the facts. Its answer is kept too, for the same fixes, workloads, facts and rules.
TEST(FixCache, UnifiedPinsAreAnsweredFromTheCache) {
  CacheDir dir;
  app::Options options;
  options.cache_dir = dir.path / "cache";
  model::Facts facts = snapshot("h100-node-te.json");
  facts.set("te.version", *model::Version::parse("2.18.0"));
  app::Options sources;
  sources.megatron_args = {std::filesystem::path(NVTE_FIXTURES_DIR) / "megatron" / "llama3_8b_fp8.sh"};
  for (const char* model : {"llama-3-8b", "mixtral-8x7b", "deepseek-v3"})
    sources.hf_configs.push_back(std::filesystem::path(NVTE_FIXTURES_DIR) / "hf" / model / "config.json");
  auto workloads = app::load_workloads(sources);
  ASSERT_EQ(workloads.size(), 4u);
  const auto& rules = test_support::shipped_rules();
  const rules::SearchOptions search = app::fix_search_options();
  auto searched = [&] {
    std::vector<model::Explanation> out;
    for (const auto& w : workloads) {
      out.push_back(rules::explain(rules, facts, w));
      rules::verify_explanation(rules, facts, out.back(), search);
    }
    return out;
  };
  auto encoded = [](const std::vector<model::Explanation>& es, const std::vector<model::Finding>& nodes) {
    std::string out = app::encode_node_fixes(nodes);
    for (const auto& e : es) out += "\n" + app::encode_explanation_fixes(e);
    return out;
  };
  std::vector<model::Finding> nodes = rules::evaluate_node(rules, facts);
  rules::verify_node_findings(rules, facts, nodes, search);
  const auto before = searched();
  auto unified = before;
  auto unified_nodes = nodes;
  app::unify_pins_per_context(rules, facts, unified, {}, &unified_nodes, search);
  const std::string answer = encoded(unified, unified_nodes);
  ASSERT_NE(encoded(before, nodes), answer); // pins this unifying changes

  std::vector<std::size_t> answered;
  for (int pass = 0; pass < 2; ++pass) {
    auto es = before;
    auto ns = nodes;
    app::FixCache cache(options);
    cache.unify_pins(rules, facts, es, {}, &ns, search);
    cache.save();
    answered.push_back(cache.answered());
    EXPECT_EQ(encoded(es, ns), answer) << "pass " << pass;
  }
  EXPECT_EQ(answered, (std::vector<std::size_t>{0, 1}));

  // Another value of one workload: asked anew, and unified as without the cache.
  auto longer = before;
  ASSERT_TRUE(longer[0].workload.set_text("max_seqlen_q", "1234").ok());
  auto ns = nodes;
  app::FixCache cache(options);
  cache.unify_pins(rules, facts, longer, {}, &ns, search);
  EXPECT_EQ(cache.answered(), 0u);
}
