// The Python tier's answer reused (selftest/python_reuse.hpp) without a GPU or Python: an ok
// answer is recalled while the files it loaded, and the directories holding them, are as they
// were and it is young enough; a changed, added or removed file, an old answer, a failed answer,
// one without its files, and a key with other variables the tier reads are misses.
#include "model/facts.hpp"
#include "selftest/python_reuse.hpp"
#include "selftest/selftest.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>

namespace python_reuse_test {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using selftest::CacheKey;
using selftest::KernelCache;
using selftest::PythonReuse;

struct ReuseTempDir {
  fs::path path;
  ReuseTempDir() {
    std::string pattern = (fs::temp_directory_path() / "nvte-python-reuse-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::replace);
  }
  ~ReuseTempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

struct Reuse {
  ReuseTempDir dir;
  PythonReuse reuse;
  std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
  fs::path library;
  Json loaded;
  Reuse() {
    fs::create_directory(dir.path / "cache");
    fs::permissions(dir.path / "cache", fs::perms::owner_all, fs::perm_options::replace);
    fs::create_directory(dir.path / "site");
    library = dir.path / "site" / "libcudnn.so.9";
    write_text(library, "cudnn");
    loaded = Json::array({library.string()});
    reuse.cache = KernelCache::open((dir.path / "cache").string());
    reuse.now = [this] { return now; };
  }
};

CacheKey key_for(const std::map<std::string, std::string>& environment, const std::string& driver = "580.95.05") {
  model::Facts facts;
  facts.set("driver.version", driver);
  facts.set("gpu.count", std::int64_t{1});
  facts.set("gpu[0].uuid", "GPU-1234");
  Json shapes = Json::array({Json{{"dtype", "bf16"}, {"seq_q", 512}}});
  return selftest::python_tier_key("/usr/bin/python3", "/usr/share/nvte-doctor/selftest.py", shapes, environment, facts);
}

Json ok_answer() { return Json{{"status", "ok"}, {"te_version", "2.16.1"}, {"cases", Json::array()}}; }

TEST(PythonReuse, AnOkAnswerIsRecalledWhileNothingItLoadedChanged) {
  Reuse r;
  ASSERT_TRUE(r.reuse.cache.enabled()) << r.reuse.cache.why_off();
  CacheKey key = key_for({});
  EXPECT_FALSE(selftest::recall_python_tier(r.reuse, key)); // nothing kept yet
  ASSERT_TRUE(selftest::remember_python_tier(r.reuse, key, ok_answer(), r.loaded));
  r.now += std::chrono::hours(2);
  auto recalled = selftest::recall_python_tier(r.reuse, key);
  ASSERT_TRUE(recalled) << recalled.error().message;
  EXPECT_EQ((*recalled)["te_version"], "2.16.1");
  ASSERT_TRUE(recalled->contains("reused"));
  EXPECT_EQ((*recalled)["reused"]["age_seconds"], 7200);
  EXPECT_EQ((*recalled)["reused"]["files"], 3); // the library, its directory, /etc/ld.so.cache
  EXPECT_FALSE(recalled->contains("loaded"));
}

TEST(PythonReuse, AChangedFileOrAFileAddedBesideOneIsAMiss) {
  {
    Reuse r;
    CacheKey key = key_for({});
    ASSERT_TRUE(selftest::remember_python_tier(r.reuse, key, ok_answer(), r.loaded));
    write_text(r.library, "another cudnn"); // rewritten: size, mtime, ctime
    auto recalled = selftest::recall_python_tier(r.reuse, key);
    ASSERT_FALSE(recalled);
    EXPECT_EQ(recalled.error().message, r.library.string() + " changed since the tier ran");
  }
  {
    Reuse r;
    CacheKey key = key_for({});
    ASSERT_TRUE(selftest::remember_python_tier(r.reuse, key, ok_answer(), r.loaded));
    // A second cuDNN beside the first (a package installed into the same directory): the
    // directory's identity changes although no file the tier loaded did.
    ::usleep(20000);
    write_text(r.dir.path / "site" / "libcudnn_graph.so.9", "x");
    auto recalled = selftest::recall_python_tier(r.reuse, key);
    ASSERT_FALSE(recalled);
    EXPECT_EQ(recalled.error().message, (r.dir.path / "site").string() + " changed since the tier ran");
  }
  {
    Reuse r;
    CacheKey key = key_for({});
    ASSERT_TRUE(selftest::remember_python_tier(r.reuse, key, ok_answer(), r.loaded));
    fs::remove(r.library);
    auto recalled = selftest::recall_python_tier(r.reuse, key);
    ASSERT_FALSE(recalled);
    EXPECT_NE(recalled.error().message.find(" changed since the tier ran"), std::string::npos); // the directory, first in order
    fs::remove_all(r.dir.path / "site");
    recalled = selftest::recall_python_tier(r.reuse, key);
    ASSERT_FALSE(recalled);
    EXPECT_EQ(recalled.error().message, (r.dir.path / "site").string() + " is gone since the tier ran");
  }
}

TEST(PythonReuse, TheMissNamesThePathAndADirectoryAboveADirectoryIsNotWatched) {
  Reuse r;
  CacheKey key = key_for({});
  // A sys.path entry (a directory) in the temporary directory: what happens beside it, in the
  // directory above it (/tmp on a node), changes nothing the tier reads.
  fs::create_directory(r.dir.path / "prefix");
  Json loaded = r.loaded;
  loaded.push_back((r.dir.path / "prefix").string());
  ASSERT_TRUE(selftest::remember_python_tier(r.reuse, key, ok_answer(), loaded));
  ::usleep(20000);
  write_text(r.dir.path / "scratch", "x"); // beside prefix/, in the directory above it
  auto recalled = selftest::recall_python_tier(r.reuse, key);
  ASSERT_TRUE(recalled) << recalled.error().message;
  write_text(r.dir.path / "prefix" / "flash_attn.py", "x"); // a module in a sys.path entry
  recalled = selftest::recall_python_tier(r.reuse, key);
  ASSERT_FALSE(recalled);
  EXPECT_EQ(recalled.error().message, (r.dir.path / "prefix").string() + " changed since the tier ran");
  // --fresh recalls nothing, whatever is kept.
  PythonReuse fresh;
  fresh.cache = KernelCache::open((r.dir.path / "cache").string());
  fresh.fresh = true;
  ASSERT_TRUE(selftest::remember_python_tier(fresh, key, ok_answer(), loaded));
  EXPECT_FALSE(selftest::recall_python_tier(fresh, key));
  EXPECT_TRUE(selftest::recall_python_tier(r.reuse, key)); // what --fresh kept
}

TEST(PythonReuse, AnAnswerOlderThanTheMaximumAgeIsAMiss) {
  Reuse r;
  CacheKey key = key_for({});
  ASSERT_TRUE(selftest::remember_python_tier(r.reuse, key, ok_answer(), r.loaded));
  r.now += selftest::k_python_reuse_max_age + std::chrono::seconds(1);
  auto recalled = selftest::recall_python_tier(r.reuse, key);
  ASSERT_FALSE(recalled);
  EXPECT_NE(recalled.error().message.find("s old"), std::string::npos) << recalled.error().message;
  r.now -= std::chrono::hours(48); // a clock set back: not a young answer either
  EXPECT_FALSE(selftest::recall_python_tier(r.reuse, key));
}

TEST(PythonReuse, OnlyAnOkAnswerThatListsItsFilesIsKept) {
  Reuse r;
  CacheKey key = key_for({});
  Json failed = ok_answer();
  failed["status"] = "failed";
  EXPECT_FALSE(selftest::remember_python_tier(r.reuse, key, failed, r.loaded));
  EXPECT_FALSE(selftest::remember_python_tier(r.reuse, key, ok_answer(), Json()));
  EXPECT_FALSE(selftest::remember_python_tier(r.reuse, key, ok_answer(), Json::array()));
  EXPECT_FALSE(selftest::recall_python_tier(r.reuse, key));
}

TEST(PythonReuse, TheKeyHoldsTheVariablesTheTierReadsAndNotAJobsOwn) {
  EXPECT_TRUE(selftest::python_tier_reads("NVTE_FUSED_ATTN"));
  EXPECT_TRUE(selftest::python_tier_reads("CUDNN_PATH"));
  EXPECT_TRUE(selftest::python_tier_reads("LD_LIBRARY_PATH"));
  EXPECT_TRUE(selftest::python_tier_reads("PYTHONPATH"));
  EXPECT_TRUE(selftest::python_tier_reads("CUDA_VISIBLE_DEVICES"));
  EXPECT_TRUE(selftest::python_tier_reads("PATH"));
  EXPECT_FALSE(selftest::python_tier_reads("SLURM_JOB_ID"));
  EXPECT_FALSE(selftest::python_tier_reads("PWD"));
  const std::string base = key_for({{"NVTE_FUSED_ATTN", "1"}, {"SLURM_JOB_ID", "1"}}).text();
  EXPECT_EQ(key_for({{"NVTE_FUSED_ATTN", "1"}, {"SLURM_JOB_ID", "2"}}).text(), base);
  EXPECT_NE(key_for({{"NVTE_FUSED_ATTN", "0"}, {"SLURM_JOB_ID", "1"}}).text(), base);
  EXPECT_NE(key_for({{"NVTE_FUSED_ATTN", "1"}, {"SLURM_JOB_ID", "1"}}, "590.10").text(), base); // another driver
}

// Through run_all, with the fake child and the fake tier: the second self-test reuses the
// first's answer without starting the interpreter; a driver check that fails (a GPU the kept
// answer no longer holds for) runs the tier again.
TEST(PythonReuse, RunAllReusesTheTierUnlessTheDriverCheckFails) {
  Reuse r;
  const fs::path runs = r.dir.path / "runs";
  ::setenv("FAKE_RUNS", runs.c_str(), 1);
  ::setenv("FAKE_TE_CHOSEN", "unknown", 1); // a choice the tier does not hold against explain's
  model::Workload w;
  ASSERT_TRUE(w.set_text("qkv_format", "bshd"));
  ASSERT_TRUE(w.complete());
  selftest::Plan plan;
  plan.runner.executable = FAKE_CHILD;
  plan.runner.timeout = std::chrono::milliseconds(20000);
  plan.workloads = {w};
  plan.predicted = {"none"};
  plan.predicted_selected = {"none"};
  plan.python_executable = "python3";
  plan.python_script = FAKE_PYTHON_TIER;
  auto reuse = std::make_shared<PythonReuse>();
  reuse->cache = KernelCache::open((r.dir.path / "cache").string());
  plan.python_reuse = reuse;
  auto tier_of = [](const selftest::Results& results) {
    for (const auto& o : results.outcomes)
      if (o.check == "python") return o;
    return selftest::CheckOutcome{};
  };
  auto lines = [&] {
    std::ifstream in(runs);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) ++n;
    return n;
  };
  auto first = tier_of(selftest::run_all(plan));
  EXPECT_EQ(first.status, "ok") << first.error;
  EXPECT_FALSE(first.result.contains("reused"));
  EXPECT_FALSE(first.result.contains("loaded")); // for the cache alone, never in the report
  EXPECT_EQ(lines(), 1);
  auto second = tier_of(selftest::run_all(plan));
  EXPECT_EQ(second.status, "ok") << second.error;
  EXPECT_TRUE(second.result.contains("reused")) << second.result.dump();
  EXPECT_EQ(lines(), 1);
  ::setenv("FAKE_DRIVER_FAILS", "1", 1);
  auto third = tier_of(selftest::run_all(plan));
  ::unsetenv("FAKE_DRIVER_FAILS");
  EXPECT_FALSE(third.result.contains("reused")) << third.result.dump();
  EXPECT_EQ(lines(), 2);
  ::unsetenv("FAKE_RUNS");
  ::unsetenv("FAKE_TE_CHOSEN");
}

} // namespace python_reuse_test
