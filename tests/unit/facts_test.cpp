#include "model/fact_catalog.hpp"
#include "model/facts.hpp"

#include "support/build_factors.hpp"

#include <gtest/gtest.h>

#include <ctime>

using model::Facts;
using model::Value;
using model::ValueType;
using model::Version;

TEST(FactCatalog, KnowsCanonicalNamesAndCollections) {
  ASSERT_NE(model::find_fact_spec("cudnn.version"), nullptr);
  EXPECT_EQ(model::find_fact_spec("cudnn.version")->type, ValueType::version);
  EXPECT_EQ(model::find_fact_spec("gpu[3].sm")->type, ValueType::integer);
  EXPECT_EQ(model::find_fact_spec("gpu.sm")->type, ValueType::integer);
  EXPECT_EQ(model::find_fact_spec("env.NVTE_FLASH_ATTN")->type, ValueType::string);
  EXPECT_EQ(model::find_fact_spec("workload.head_dim_qk")->type, ValueType::integer);
  EXPECT_EQ(model::find_fact_spec("cudnn.copies[0].version")->type, ValueType::version);
  EXPECT_EQ(model::find_fact_spec("cudnn.verison"), nullptr);
  auto hints = model::suggest_fact_names("cudnn.verison");
  ASSERT_FALSE(hints.empty());
  EXPECT_EQ(hints[0], "cudnn.version");
}

TEST(Facts, JsonRoundTripKeepsTypesAndNesting) {
  Facts facts;
  facts.set("gpu[0].name", "NVIDIA H100 80GB HBM3");
  facts.set("gpu[0].compute_capability", *Version::parse("9.0"));
  facts.set("gpu[0].sm", 90);
  facts.set("gpu[1].sm", 80);
  facts.set("driver.version", *Version::parse("580.159.04"));
  facts.set("cudnn.copies[0].path", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0");
  facts.set("cudnn.copies[0].version", *Version::parse("9.14.0"));
  facts.set("env.NVTE_FLASH_ATTN", "0");
  facts.set("probe.nvml.seconds", 0.037);
  facts.set("gpu[0].mig_enabled", false);
  facts.set("gpu.count", 2);
  std::string text = facts.to_json();
  EXPECT_NE(text.find("\"580.159.04\""), std::string::npos);
  auto back = Facts::from_json(text, "snapshot.json");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->entries(), facts.entries());
  EXPECT_EQ(back->count("gpu"), 2u);
  EXPECT_EQ(back->to_json(), text);
}

TEST(Facts, FromJsonRejectsBadInputWithOneLine) {
  auto not_json = Facts::from_json("{\"schema_version\": 1, ", "bad.json");
  ASSERT_FALSE(not_json.ok());
  EXPECT_NE(not_json.error().message.find("bad.json"), std::string::npos);
  auto newer = Facts::from_json(R"({"schema_version": 99, "facts": {}})", "new.json");
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.error().message.find("newer"), std::string::npos);
  auto typed = Facts::from_json(R"({"schema_version": 1, "facts": {"cudnn": {"version": "nine"}}})", "t.json");
  ASSERT_FALSE(typed.ok());
  EXPECT_NE(typed.error().message.find("cudnn.version"), std::string::npos);
  auto wrong = Facts::from_json(R"({"schema_version": 1, "facts": {"gpu": [{"sm": "eighty"}]}})", "w.json");
  EXPECT_FALSE(wrong.ok());
  // A number beyond a double made the JSON library throw despite allow_exceptions=false (fuzzing).
  auto huge = Facts::from_json(R"({"schema_version": 1, "facts": {"x": 1e99999}})", "huge.json");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().message.find("huge.json"), std::string::npos);
  // Shapes that would load under one name and save under another (fuzzing's round-trip property).
  EXPECT_FALSE(Facts::from_json(R"({"schema_version": 1, "facts": {"cuda": {"x[]": {"y": 1}}}})", "k.json").ok());
  EXPECT_FALSE(Facts::from_json(R"({"schema_version": 1, "facts": {"a": [[1, 2]]}})", "n.json").ok());
  EXPECT_FALSE(Facts::from_json(R"({"schema_version": 1, "facts": {"gpu": [{"sm": 90}], "gpu.x": {"y": 1}}})", "d.json").ok());
}

TEST(Facts, OverrideTypesByCatalogAndCreatesSyntheticGpu) {
  Facts facts;
  ASSERT_TRUE(facts.apply_override("gpu.compute_capability=8.0").ok());
  ASSERT_TRUE(facts.apply_override("cudnn.version=9.3.0").ok());
  facts.derive();
  EXPECT_EQ(facts.count("gpu"), 1u);
  EXPECT_EQ(facts.get_int("gpu[0].sm"), 80);
  EXPECT_EQ(facts.get_int("gpu.count"), 1);
  EXPECT_EQ(facts.get_version("cudnn.version"), (Version{9, 3, 0}));
  EXPECT_EQ(facts.get_int("cudnn.major"), 9);
}

TEST(Facts, OverrideOfEveryGpuRecomputesDerivedFields) {
  Facts facts;
  facts.set("gpu[0].sm", 90);
  facts.set("gpu[0].compute_capability", *Version::parse("9.0"));
  facts.set("gpu[1].sm", 90);
  facts.set("gpu[1].compute_capability", *Version::parse("9.0"));
  ASSERT_TRUE(facts.apply_override("gpu.sm=80").ok());
  facts.derive();
  EXPECT_EQ(facts.get_version("gpu[1].compute_capability"), (Version{8, 0}));
}

TEST(Facts, OverrideErrorsNameTheKeyAndHint) {
  Facts facts;
  auto unknown = facts.apply_override("cudnn.verison=9.3");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("cudnn.verison"), std::string::npos);
  EXPECT_NE(unknown.error().message.find("did you mean cudnn.version"), std::string::npos);
  auto bad_value = facts.apply_override("gpu.sm=eighty");
  ASSERT_FALSE(bad_value.ok());
  EXPECT_NE(bad_value.error().message.find("gpu.sm"), std::string::npos);
  EXPECT_FALSE(facts.apply_override("novalue").ok());
}

TEST(Facts, FromJsonRefusesTreesOfTheWrongShape) {
  // Audit F3, F4: these loaded, and the driver or the GPUs vanished from the facts (exit 2).
  auto driver = Facts::from_json(R"({"schema_version": 1, "facts": {"driver": [1, 2]}})", "s.json");
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.error().message, "s.json: fact 'driver': expected an object, got an array");
  auto gpu = Facts::from_json(R"({"schema_version": 1, "facts": {"gpu": {"a": 1}}})", "s.json");
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.error().message, "s.json: fact 'gpu': expected an array, got an object");
  auto scalar = Facts::from_json(R"({"schema_version": 1, "facts": {"cudnn": 9}})", "s.json");
  ASSERT_FALSE(scalar.ok());
  EXPECT_EQ(scalar.error().message, "s.json: fact 'cudnn': expected an object, got 9");
  auto leaf = Facts::from_json(R"({"schema_version": 1, "facts": {"driver": {"version": {"x": 1}}}})", "s.json");
  ASSERT_FALSE(leaf.ok());
  EXPECT_EQ(leaf.error().message, "s.json: fact 'driver.version': expected a single value, got an object");
  // What to_json writes for a node without GPUs, and names outside the catalog, still load.
  EXPECT_TRUE(Facts::from_json(R"({"schema_version": 1, "facts": {"gpu": {"count": 0}, "future": [{"x": 1}]}})", "ok.json").ok());
  EXPECT_TRUE(
      Facts::from_json(R"({"schema_version": 1, "facts": {"env": {"NVTE_X": "1"}, "selftest": {"cudnn": {"ok": true}}}})", "ok.json").ok());
}

TEST(Facts, FromJsonRefusesNestingPastTheInputLimit) {
  // Audit F13: 20,000 levels overflowed the loader's recursive walk.
  std::string deep = R"({"schema_version": 1, "facts": {"x": )" + std::string(20000, '[') + std::string(20000, ']') + "}}";
  auto loaded = Facts::from_json(deep, "deep.json");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().message, "deep.json:1: nested deeper than 64 levels (limit 64)");
}

TEST(Facts, OverrideIndexMustNameAMemberOrTheNextOne) {
  Facts facts;
  facts.set("gpu[0].sm", 90);
  // Audit S4: gpu[100000000] allocated a hundred million GPUs; S5: gpu[-1] did nothing, silently.
  auto far = facts.apply_override("gpu[100000000].sm=90");
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.error().message, "--set gpu[100000000].sm: index out of range: gpu has 1 member (limit: an index from 0 to 1)");
  EXPECT_FALSE(facts.apply_override("gpu[-1].sm=75").ok());
  EXPECT_FALSE(facts.apply_override("gpu[x].sm=75").ok());
  EXPECT_FALSE(facts.apply_override("cudnn.copies[3].path=/x").ok());
  ASSERT_TRUE(facts.apply_override("gpu[0].sm=80").ok());
  ASSERT_TRUE(facts.apply_override("gpu[1].sm=75").ok());
  EXPECT_EQ(facts.count("gpu"), 2u);
  EXPECT_EQ(facts.get_int("gpu[1].sm"), 75);
}

TEST(Facts, ToJsonIsLinearInItsFacts) {
  // Audit 2026-12-01 item 17: every member was found by ordered_json's linear search, so the
  // "env" object of 50,000 NVTE_* variables cost 50,000^2 / 2 key comparisons (check's
  // fingerprint and report JSON both write the facts): seconds, now milliseconds.
  Facts facts;
  facts.set("gpu[0].sm", 90);
  for (int i = 0; i < 50000; ++i) facts.set("env.NVTE_AUDIT_" + std::to_string(i), std::to_string(i));
  auto cpu = [] {
    timespec now{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
  };
  double start = cpu();
  std::string json = facts.to_json(-1);
  double seconds = cpu() - start;
  EXPECT_LT(seconds, 0.5 * test_support::k_time_factor) << "to_json of 50,000 facts took " << seconds << " s of CPU";
  // The same document as before: it loads back to the same facts.
  auto back = Facts::from_json(json, "back.json");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->get_string("env.NVTE_AUDIT_49999"), "49999");
  EXPECT_EQ(back->get_int("gpu[0].sm"), 90);
  EXPECT_EQ(back->to_json(-1), json);
}

TEST(Facts, ToJsonKeepsTheOrderAndShapeOfItsTree) {
  // Names sort by their text, so a key can come back after a sibling ("a.b" < "a.b-c" < "a.b.d"
  // puts b, b-c, then b again): the member index must find it, not add it twice.
  Facts facts;
  facts.set("a.b", std::string("leaf"));
  facts.set("a.b-c", 1);
  facts.set("x.y[0].z", 2);
  facts.set("x.y[1].z", 3);
  facts.set("x.y[1].w", 4);
  EXPECT_EQ(facts.to_json(-1), R"({"schema_version":1,"facts":{"a":{"b":"leaf","b-c":1},"x":{"y":[{"z":2},{"w":4,"z":3}]}}})");
}

// The fix search applies each candidate change to one working copy of the node's facts and takes
// it back (rules/fix_session.hpp): the journal must restore every fact exactly and name only the
// facts whose value moved.
TEST(FactsJournal, UndoRestoresEveryFactAndChangedNamesWhatMoved) {
  Facts facts;
  for (std::string s : {"gpu.compute_capability=9.0", "cudnn.version=9.1.0", "cudnn.copies[0].version=9.1.0",
                        "cudnn.copies[0].path=/usr/lib/libcudnn.so.9", "env.CUDNN_HOME=/opt/cudnn", "nccl.version=2.19.3"})
    ASSERT_TRUE(facts.apply_override(s).ok()) << s;
  facts.derive();
  const std::string before = facts.to_json();
  const auto stamp = facts.stamp();

  model::FactsJournal journal;
  facts.attach(journal);
  facts.set("cudnn.version", *Version::parse("9.3.0"));
  facts.set("nccl.version", *Version::parse("2.19.3")); // the value it had: not a change
  facts.set("env.X", std::string("1"));
  facts.erase("env.X"); // set and taken away again: not a change
  facts.erase("env.CUDNN_HOME");
  facts.erase_prefix("cudnn.copies");
  facts.set("cudnn.copies[0].version", *Version::parse("9.3.0"));
  ASSERT_TRUE(facts.apply_override("gpu.sm=100").ok());
  facts.derive();
  Facts other;
  other.set("te.version", *Version::parse("2.10.0"));
  facts.merge(other);

  auto changed = journal.changed(facts);
  std::sort(changed.begin(), changed.end());
  // cudnn.major is 9 before and after; the major of the copy that went and came back is too.
  EXPECT_EQ(changed, (std::vector<std::string>{"cudnn.copies[0].path", "cudnn.copies[0].version", "cudnn.version", "env.CUDNN_HOME",
                                               "gpu[0].compute_capability", "gpu[0].sm", "te.version"}));
  EXPECT_EQ(facts.get_int("gpu[0].sm"), 100);
  EXPECT_EQ(facts.get_version("gpu[0].compute_capability"), (Version{10, 0}));

  facts.undo(journal);
  EXPECT_TRUE(journal.empty());
  EXPECT_EQ(facts.to_json(), before);
  EXPECT_NE(facts.stamp(), stamp);
  // Detached: a later change is not recorded.
  facts.set("env.Y", std::string("1"));
  EXPECT_TRUE(journal.empty());
}

TEST(FactsJournal, AVersionWrittenDifferentlyIsAChange) {
  Facts facts;
  facts.set("cudnn.version", *Version::parse("9.1"));
  model::FactsJournal journal;
  facts.attach(journal);
  facts.set("cudnn.version", *Version::parse("9.1.0")); // equal as versions, printed differently
  EXPECT_EQ(journal.changed(facts), std::vector<std::string>{"cudnn.version"});
  facts.undo(journal);
  EXPECT_EQ(facts.get_string("cudnn.version"), "9.1");
}

TEST(Facts, DeriveAfterAChangeDerivesWhatTheChangeMoved) {
  // derive() derives again only the groups (the GPUs, each library) that changed since it last
  // ran: the result must be what a fresh object derives from the same facts.
  Facts facts;
  for (std::string s : {"gpu.compute_capability=8.0", "cudnn.version=8.9.7", "nccl.version=2.19.3", "cudnn.copies[0].version=8.9.7",
                        "cudnn.copies[0].path=/a/libcudnn.so.8"})
    ASSERT_TRUE(facts.apply_override(s).ok()) << s;
  facts.derive();
  auto fresh = [](const Facts& f) {
    auto again = Facts::from_json(f.to_json(), "again");
    EXPECT_TRUE(again.ok());
    again->derive();
    return again->to_json();
  };
  facts.set("cudnn.version", *Version::parse("9.3.0"));
  facts.set("cudnn.copies[1].version", *Version::parse("9.3.0"));
  facts.derive();
  EXPECT_EQ(facts.get_int("cudnn.major"), 9);
  EXPECT_EQ(facts.get_int("cudnn.copies[1].major"), 9);
  EXPECT_EQ(facts.get_int("nccl.major"), 2);
  facts.erase("gpu[0].sm");
  facts.derive();
  EXPECT_EQ(facts.get_int("gpu[0].sm"), 80);
  Facts merged;
  merged.set("nccl.version", *Version::parse("3.0.1"));
  facts.merge(merged);
  facts.erase_prefix("gpu");
  facts.derive();
  EXPECT_EQ(facts.get_int("nccl.major"), 3);
  EXPECT_EQ(facts.get_int("gpu.count"), 0);
  EXPECT_EQ(facts.to_json(), fresh(facts));
  // A copy derives like its original.
  Facts copy = facts;
  copy.set("nccl.version", *Version::parse("4.0.0"));
  copy.derive();
  EXPECT_EQ(copy.get_int("nccl.major"), 4);
}
