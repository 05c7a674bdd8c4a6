// check's node fix searches across runs (app/node_fix_cache.hpp): an unchanged node is answered
// from the cache with the fixes the search gave, any other fact asks anew, the probe's timings
// are no part of the question unless a node rule may read them, and the encoding keeps every
// field of a fix and refuses fixes for other findings.
#include "app/node_fix_cache.hpp"

#include "app/rules_loading.hpp"
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
  app::verify_node_findings_cached(options, test_support::shipped_rules(), facts, findings, search);
  *worked_out = check.compared;
  return findings;
}

bool any_verified(const std::vector<model::Finding>& findings) {
  for (const auto& f : findings)
    for (const auto& fix : f.fixes)
      if (fix.verified) return true;
  return false;
}

} // namespace

TEST(NodeFixCache, AnUnchangedNodeIsAnsweredFromTheCache) {
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
  app::verify_node_findings_cached(no_cache, test_support::shipped_rules(), facts, findings, search);
  EXPECT_GT(check.compared, 0u);
  EXPECT_EQ(app::encode_node_fixes(findings), answer);
}

TEST(NodeFixCache, TimingsAreAskedWhenANodeRuleMayReadThem) {
  const std::vector<std::string> timings{"probe.python.seconds"};
  EXPECT_FALSE(rules::node_rules_may_read(test_support::shipped_rules(), timings));
  auto loaded = rules::RuleSet::load_text(R"(rules:
  - id: slow-python-probe
    title: t
    severity: warning
    when: probe.python.seconds > 1
    message: "slow"
    fixes:
      - kind: config
        description: d
)",
                                           "timing.yaml");
  ASSERT_TRUE(loaded.rules) << rules::render(loaded.diagnostics);
  EXPECT_TRUE(rules::node_rules_may_read(*loaded.rules, timings));
  EXPECT_FALSE(rules::node_rules_may_read(*loaded.rules, {"probe.native.seconds"}));
}

TEST(NodeFixCache, EncodingKeepsEveryFieldAndRefusesOtherFindings) {
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
