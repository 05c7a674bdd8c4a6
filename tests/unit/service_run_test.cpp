// `run` pieces: the fingerprint sees library, dist-info, driver, environment, rules and workload
// changes and ignores irrelevant ones; the decision; the lock; the last-run metric refresh.
#include "service/run.hpp"

#include "util/file.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <fstream>

using testing::HasSubstr;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

class Fingerprint : public testing::Test {
protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("nvte-fp-" + std::to_string(::getpid()));
    fs::remove_all(root);
    write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04\n");
    write("etc/ld.so.cache", "cache");
    write("usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0", "elf");
    write("venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9", "elf 9.19");
    fs::create_directories(root / "venv/lib/python3.12/site-packages/torch-2.11.0.dist-info");
    write("rules/cudnn.yaml", "rules: []\n");
    write("workloads/llama.yaml", "head_dim_qk: 128\n");
    report = R"({"facts": {
      "cudnn": {"path": "/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
                "copies": [{"path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0"},
                           {"path": "/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9"}]},
      "python": {"site_packages": "/venv/lib/python3.12/site-packages"}}})";
  }
  void TearDown() override { fs::remove_all(root); }

  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((root / rel).parent_path());
    ASSERT_TRUE(util::write_file_atomic(root / rel, text));
  }
  service::FingerprintInputs inputs() const {
    service::FingerprintInputs in;
    in.root = root;
    in.last_report_json = report;
    in.rules_dirs = {root / "rules"};
    in.workload_files = {root / "workloads/llama.yaml"};
    in.environment = env;
    in.tool_version = "0.1.0";
    return in;
  }
  service::Fingerprint compute() const { return service::compute_fingerprint(inputs()); }
  // The decision after a change, against the state saved before it.
  service::Decision after(const std::function<void()>& change) {
    auto before = compute();
    service::RunState state{before.digest, 1000, before.inputs};
    change();
    return service::decide(state, compute(), true, 3600s, 1001, service::Force::no);
  }

  fs::path root;
  std::string report;
  std::map<std::string, std::string> env = {{"HOME", "/root"}, {"NVTE_FLASH_ATTN", "1"}};
};

TEST_F(Fingerprint, StableWhenNothingChanged) {
  auto a = compute(), b = compute();
  EXPECT_EQ(a.digest, b.digest);
  EXPECT_EQ(a.digest.size(), 16u);
  service::RunState state{a.digest, 1000, a.inputs};
  auto d = service::decide(state, b, true, 3600s, 1100, service::Force::no);
  EXPECT_FALSE(d.full) << d.reason;
}

// The paths save_report_paths keeps (issue 40, round 5) stand for the report's parse only when
// the file was written for that very text; any other file is ignored.
TEST_F(Fingerprint, KeptReportPathsStandForTheParseOfTheSameReportOnly) {
  report.insert(1, R"("summary": {"status": "WARNING"}, )");
  fs::path file = root / "state/report.paths";
  fs::create_directories(file.parent_path());
  auto parsed = compute();
  service::save_report_paths(file, report);
  ASSERT_TRUE(fs::exists(file));
  auto in = inputs();
  in.report_paths_file = file;
  auto kept = service::compute_fingerprint(in);
  EXPECT_EQ(kept.inputs, parsed.inputs);
  EXPECT_EQ(kept.digest, parsed.digest);
  EXPECT_EQ(service::report_status(report), "WARNING");
  EXPECT_EQ(parsed.last_report_status, "WARNING");
  EXPECT_EQ(kept.last_report_status, "WARNING");

  // Read, not parsed again: a path added to the file shows up.
  std::string text = *util::read_file(file);
  ASSERT_TRUE(util::write_file_atomic(file, text + "path /usr/lib/x86_64-linux-gnu/libextra.so\n"));
  EXPECT_THAT(service::compute_fingerprint(in).inputs, testing::Contains(HasSubstr("stat:/usr/lib/x86_64-linux-gnu/libextra.so\t")));
  // The status comes from the same file: run reads the report once.
  std::string critical = text;
  critical.replace(critical.find("status WARNING"), 14, "status CRITICAL");
  ASSERT_TRUE(util::write_file_atomic(file, critical));
  EXPECT_EQ(service::compute_fingerprint(in).last_report_status, "CRITICAL");

  // Another report, a torn file, a foreign one: the report is parsed.
  for (const std::string& bad : {text, text.substr(0, text.size() / 2), std::string("garbage\n"), std::string()}) {
    ASSERT_TRUE(util::write_file_atomic(file, bad));
    std::string other = report;
    other.insert(other.size() - 1, " ");
    if (bad != text) other = report;
    auto with_file = in;
    with_file.last_report_json = other;
    auto without = inputs();
    without.last_report_json = other;
    EXPECT_EQ(service::compute_fingerprint(with_file).inputs, service::compute_fingerprint(without).inputs) << bad;
  }

  // A report without a status keeps nothing.
  service::save_report_paths(file, R"({"facts": {}})");
  EXPECT_FALSE(fs::exists(file));
}

TEST_F(Fingerprint, SeesALibraryReplaced) {
  auto d = after([&] { write("usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0", "elf, newer and longer"); });
  EXPECT_TRUE(d.full);
  EXPECT_THAT(d.reason, HasSubstr("stat:/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0"));
}

TEST_F(Fingerprint, SeesANewCopyInAKnownDirectory) {
  auto d = after([&] { write("usr/lib/x86_64-linux-gnu/libcudnn.so.9.20.0", "elf"); });
  EXPECT_TRUE(d.full);
  EXPECT_THAT(d.reason, HasSubstr("dir:/usr/lib/x86_64-linux-gnu"));
}

TEST_F(Fingerprint, SeesAPipInstall) {
  auto d = after([&] { fs::create_directories(root / "venv/lib/python3.12/site-packages/transformer_engine-2.3.0.dist-info"); });
  EXPECT_TRUE(d.full);
  EXPECT_THAT(d.reason, HasSubstr("dist-info:/venv/lib/python3.12/site-packages/transformer_engine-2.3.0.dist-info"));
}

TEST_F(Fingerprint, SeesTheDriver) {
  auto d = after([&] { write("proc/driver/nvidia/version", "NVRM version: 590.1\n"); });
  EXPECT_TRUE(d.full);
  EXPECT_THAT(d.reason, HasSubstr("file:/proc/driver/nvidia/version"));
}

TEST_F(Fingerprint, SeesRelevantEnvironmentOnly) {
  auto before = compute();
  env["HOME"] = "/home/other";
  env["TERM"] = "xterm";
  EXPECT_EQ(compute().digest, before.digest);
  env["NVTE_FLASH_ATTN"] = "0";
  EXPECT_NE(compute().digest, before.digest);
  env.erase("NVTE_FLASH_ATTN");
  env["LD_LIBRARY_PATH"] = "/opt/cudnn/lib";
  auto after_change = compute();
  EXPECT_NE(after_change.digest, before.digest);
  for (const auto& line : after_change.inputs) EXPECT_EQ(line.find("/opt/cudnn/lib"), std::string::npos) << "values are hashed: " << line;
}

TEST_F(Fingerprint, SeesRulesAndWorkloads) {
  auto d = after([&] { write("workloads/llama.yaml", "head_dim_qk: 192\n"); });
  EXPECT_TRUE(d.full);
  EXPECT_THAT(d.reason, HasSubstr("workload:"));
  d = after([&] { write("rules/new.yaml", "rules: []\n"); });
  EXPECT_TRUE(d.full);
  EXPECT_THAT(d.reason, HasSubstr("rules:"));
}

TEST(RunDecision, FirstRunMissingReportAndMaxAge) {
  service::Fingerprint fp{"0123456789abcdef", {"a\t1"}, std::nullopt};
  EXPECT_TRUE(service::decide(std::nullopt, fp, true, 60s, 100, service::Force::no).full);
  service::RunState state{fp.digest, 100, fp.inputs};
  EXPECT_TRUE(service::decide(state, fp, false, 60s, 110, service::Force::no).full);
  EXPECT_FALSE(service::decide(state, fp, true, 60s, 159, service::Force::no).full);
  auto old = service::decide(state, fp, true, 60s, 160, service::Force::no);
  EXPECT_TRUE(old.full);
  EXPECT_THAT(old.reason, HasSubstr("max_age 60 s"));
  EXPECT_TRUE(service::decide(state, fp, true, 60s, 110, service::Force::yes).full);
}

TEST(RunDecision, ALastRunInTheFutureIsNotTrusted) {
  service::Fingerprint fp{"0123456789abcdef", {"a\t1"}, std::nullopt};
  service::RunState corrupted{fp.digest, 4e9, fp.inputs}; // the year 2096
  auto decision = service::decide(corrupted, fp, true, 60s, 1.8e9, service::Force::no);
  EXPECT_TRUE(decision.full);
  EXPECT_THAT(decision.reason, HasSubstr("in the future"));
  service::RunState slewed{fp.digest, 1000, fp.inputs}; // saved by a clock a minute ahead
  EXPECT_FALSE(service::decide(slewed, fp, true, 3600s, 940, service::Force::no).full);
}

TEST(RunState, RoundTripsAndToleratesGarbage) {
  fs::path file = fs::temp_directory_path() / ("nvte-state-" + std::to_string(::getpid()) + ".json");
  ASSERT_TRUE(service::save_state(file, {"abc", 12.5, {"x\t1", "y\t2"}}).ok());
  auto state = service::load_state(file);
  ASSERT_TRUE(state);
  EXPECT_EQ(state->fingerprint, "abc");
  EXPECT_EQ(state->last_full_run, 12.5);
  EXPECT_EQ(state->inputs.size(), 2u);
  for (const std::string& garbage : std::vector<std::string>{"{not json", "", "[]", R"({"fingerprint": 7})", std::string("\0\xFF\x01", 3),
                              R"({"fingerprint": "abc", "last_full_run": 1e99999})",
                              R"({"fingerprint": "abc", "last_full_run": 1)" + std::string(400, '0') + "}"}) {
    ASSERT_TRUE(util::write_file_atomic(file, garbage));
    testing::internal::CaptureStderr();
    EXPECT_FALSE(service::load_state(file)) << garbage;
    EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("unreadable run state; running a full check")) << garbage;
  }
  fs::remove(file);
  EXPECT_FALSE(service::load_state(file));
}

// What load_state read before its own reader (issue 40, round 5): the whole file through
// nlohmann::json. The reader must give every text exactly this.
std::optional<service::RunState> state_by_nlohmann(const std::string& text) {
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("fingerprint") || !doc["fingerprint"].is_string()) return std::nullopt;
  service::RunState state;
  state.fingerprint = doc["fingerprint"].get<std::string>();
  if (doc.contains("last_full_run") && doc["last_full_run"].is_number()) state.last_full_run = doc["last_full_run"].get<double>();
  if (doc.contains("inputs") && doc["inputs"].is_array()) {
    for (const auto& line : doc["inputs"])
      if (line.is_string()) state.inputs.push_back(line.get<std::string>());
  }
  return state;
}

TEST(RunState, ReadsEveryTextAsNlohmannJsonDoes) {
  fs::path file = fs::temp_directory_path() / ("nvte-state-same-" + std::to_string(::getpid()) + ".json");
  ASSERT_TRUE(service::save_state(file, {"20d8d4c560157c90", 1796202720.6610525, {"dir:/usr\t4096 1.5 7", "env:PATH\t\"q\\/"}}).ok());
  std::string saved = *util::read_file(file);
  std::vector<std::string> texts{saved};
  // Every truncation, and every byte replaced by characters that matter to a JSON reader.
  for (std::size_t i = 0; i < saved.size(); ++i) {
    texts.emplace_back(saved.substr(0, i));
    for (char c : std::string("\"\\{}[],: \t\n0-.eE+xu\x7f\x80\x01", 21)) {
      std::string t = saved;
      t[i] = c;
      texts.emplace_back(t);
    }
  }
  auto state = [](const std::string& fp, const std::string& t, const std::string& inputs) {
    return R"({"schema_version": 1, "fingerprint": ")" + fp + R"(", "last_full_run": )" + t + R"(, "inputs": [)" + inputs + "]}";
  };
  for (const char* t : {"-0", "0", "-0.0", "0.5e-3", "1E+5", "1e-400", "1e400", "01", "1.", ".5", "-", "1e", "9223372036854775809",
                        "18446744073709551617", "-9223372036854775809", "123456789012345678901234567890", "true", "\"1\""})
    texts.emplace_back(state("abc", t, ""));
  for (const char* fp : {"a\\u0041b", "caf\xc3\xa9", "bad\xff", "\\t\\b\\f\\n\\r\\/\\\\", "\\x", "del\x7f"})
    texts.emplace_back(state(fp, "1", R"("a", "b")"));
  for (const char* inputs : {"", R"("a")", R"("a",)", R"(1, "a")", R"("a", ["b"])", R"("a" "b")", "null"})
    texts.emplace_back(state("abc", "1", inputs));
  texts.emplace_back("\xEF\xBB\xBF" + saved); // a BOM
  texts.emplace_back(saved + " \n\t\r");      // trailing space
  texts.emplace_back(saved + "{}");           // trailing value
  texts.emplace_back(R"({"schema_version": 1, "fingerprint": "a", "fingerprint": "b", "last_full_run": 1, "inputs": []})");
  texts.emplace_back(R"({"fingerprint": "a", "schema_version": 1, "last_full_run": 1, "inputs": ["x"]})");
  texts.emplace_back(R"({"schema_version": 1, "fingerprint": "a", "last_full_run": 1, "inputs": ["x"], "more": 2})");
  texts.emplace_back(R"({"schema_version":1,"fingerprint":"a","last_full_run":2.5,"inputs":["x","y"]})");
  testing::internal::CaptureStderr(); // the slow path's warnings
  for (const auto& text : texts) {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
    auto expected = state_by_nlohmann(text);
    auto got = service::load_state(file);
    ASSERT_EQ(got.has_value(), expected.has_value()) << text;
    if (!got) continue;
    EXPECT_EQ(got->fingerprint, expected->fingerprint) << text;
    EXPECT_EQ(got->last_full_run, expected->last_full_run) << text;
    EXPECT_EQ(std::signbit(got->last_full_run), std::signbit(expected->last_full_run)) << text;
    EXPECT_EQ(got->inputs, expected->inputs) << text;
  }
  testing::internal::GetCapturedStderr();
  fs::remove(file);
}

TEST(RunLock, SecondHolderIsRefusedWithThePid) {
  fs::path file = fs::temp_directory_path() / ("nvte-lock-" + std::to_string(::getpid()));
  {
    auto first = service::RunLock::acquire(file, service::RunLock::Wait::no);
    ASSERT_TRUE(first.ok()) << first.error().message;
    auto second = service::RunLock::acquire(file, service::RunLock::Wait::no);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.error().kind, util::ErrorKind::timeout);
    EXPECT_THAT(second.error().message, HasSubstr("pid " + std::to_string(::getpid())));
    EXPECT_THAT(second.error().message, HasSubstr(file.string()));
  }
  EXPECT_TRUE(service::RunLock::acquire(file, service::RunLock::Wait::no).ok()) << "released with its owner";
  fs::remove(file);
}

TEST(RefreshMetric, ReplacesOnlyTheLastRunSample) {
  std::string text = "# HELP nvte_doctor_status x\n# TYPE nvte_doctor_status gauge\nnvte_doctor_status 1\n"
                     "# HELP nvte_doctor_last_run_timestamp_seconds y\n# TYPE nvte_doctor_last_run_timestamp_seconds gauge\n"
                     "nvte_doctor_last_run_timestamp_seconds 100.000000\nnvte_doctor_last_run_timestamp_seconds_x 5\n";
  std::string out = service::refresh_metric(text, "nvte_doctor_last_run_timestamp_seconds", 200.5);
  EXPECT_THAT(out, HasSubstr("\nnvte_doctor_last_run_timestamp_seconds 200.500000\n"));
  EXPECT_THAT(out, HasSubstr("nvte_doctor_status 1\n"));
  EXPECT_THAT(out, HasSubstr("nvte_doctor_last_run_timestamp_seconds_x 5\n"));
  EXPECT_EQ(out.size(), text.size()) << "one sample replaced in place, nothing added";
  std::string added = service::refresh_metric("", "nvte_doctor_last_run_timestamp_seconds", 1);
  EXPECT_THAT(added, HasSubstr("# TYPE nvte_doctor_last_run_timestamp_seconds gauge\nnvte_doctor_last_run_timestamp_seconds 1.000000\n"));
}

TEST(ReportStatus, OnlyFromAWholeReport) {
  EXPECT_EQ(service::report_status(R"({"host": "n", "summary": {"status": "WARNING", "errors": 0}})"), "WARNING");
  std::string whole = R"({"host": "n", "findings": [], "summary": {"status": "OK"}})";
  for (std::size_t cut = 0; cut < whole.size(); ++cut) EXPECT_FALSE(service::report_status(whole.substr(0, cut))) << cut;
  EXPECT_FALSE(service::report_status(R"({"summary": "OK"})"));
  EXPECT_FALSE(service::report_status(R"({"summary": {"status": 1}})"));
  EXPECT_FALSE(service::report_status(R"([{"summary": {"status": "OK"}}])"));
}

TEST(TextfileIntact, WholeFilesOnly) {
  std::string whole = "# HELP nvte_doctor_info x\n# TYPE nvte_doctor_info gauge\n"
                      "nvte_doctor_info{host=\"a b\",gpu=\"NVIDIA H100 80GB HBM3\"} 1\n"
                      "nvte_doctor_findings{severity=\"error\"} 0\nnvte_doctor_last_run_timestamp_seconds 1795348800.250000\n"
                      "nvte_doctor_check_duration_seconds 1.5e-02\n";
  EXPECT_TRUE(service::textfile_intact(whole));
  // Cut anywhere but at a line end: torn.
  for (std::size_t cut = 0; cut < whole.size(); ++cut) {
    if (cut == 0 || whole[cut - 1] != '\n') {
      EXPECT_FALSE(service::textfile_intact(whole.substr(0, cut))) << cut;
    }
  }
  for (const char* corrupted : {"nvte_doctor_status abc\n", "nvte_doctor_status\n", " 1\n", "{a=\"b\"} 1\n",
                                "nvte_doctor_info{host=\"a\" 1\n", "\x7f\x45LF\x01 1\n", "9lives 1\n"}) {
    EXPECT_FALSE(service::textfile_intact(corrupted)) << corrupted;
  }
}

TEST(WorkloadFiles, ClassifiesTheDirectory) {
  fs::path dir = fs::temp_directory_path() / ("nvte-wl-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "deepseek-v3");
  ASSERT_TRUE(util::write_file_atomic(dir / "deepseek-v3/config.json", R"({"num_attention_heads": 128})"));
  ASSERT_TRUE(util::write_file_atomic(dir / "llama.yaml", "name: llama\n"));
  ASSERT_TRUE(util::write_file_atomic(dir / "mixtral.json", R"({"num_attention_heads": 32, "hidden_size": 4096})"));
  ASSERT_TRUE(util::write_file_atomic(dir / "sweep.json", R"({"head_dim_qk": 192})"));
  ASSERT_TRUE(util::write_file_atomic(dir / "README", "not a workload"));
  ASSERT_TRUE(util::write_file_atomic(dir / "train_llama3.sh", "torchrun pretrain_gpt.py --num-attention-heads 32\n"));
  ASSERT_TRUE(util::write_file_atomic(dir / "mixtral.args", "--num-attention-heads 32\n"));
  auto files = service::list_workload_files(dir);
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->workload_files.size(), 2u);
  EXPECT_EQ(files->workload_files[0].filename(), "llama.yaml");
  EXPECT_EQ(files->workload_files[1].filename(), "sweep.json");
  ASSERT_EQ(files->hf_configs.size(), 2u);
  EXPECT_EQ(files->hf_configs[0], dir / "deepseek-v3/config.json");
  ASSERT_EQ(files->megatron_args.size(), 2u);
  EXPECT_EQ(files->megatron_args[0].filename(), "mixtral.args");
  EXPECT_EQ(files->megatron_args[1].filename(), "train_llama3.sh");
  fs::remove_all(dir);
  EXPECT_FALSE(service::list_workload_files(dir).ok());
}

} // namespace
