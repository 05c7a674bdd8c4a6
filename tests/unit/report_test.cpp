// Report renderers: the JSON report validates against the shipped schema, the Prometheus
// textfile passes `promtool check metrics` and escapes labels, the NFD file has valid labels.
#include "report/render.hpp"
#include "report/style.hpp"
#include "support/report_schema.hpp"
#include "support/sample_report.hpp"
#include "util/strings.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

using testing::HasSubstr;
using testing::Not;

namespace {

// NFD's rule for label names and values: 1..63 of [A-Za-z0-9._-], alphanumeric at both ends.
// (Not std::regex: GCC 12 with -fsanitize warns inside <regex>.)
bool valid_nfd_label(const std::string& s) {
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (s.empty() || s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

model::SelftestCheck selftest_check(std::string check, std::string status, double seconds) {
  model::SelftestCheck c;
  c.check = std::move(check);
  c.status = std::move(status);
  c.seconds = seconds;
  return c;
}

TEST(ReportJson, SampleReportMatchesSchema) {
  auto report = test_support::sample_report();
  ASSERT_FALSE(report.facts.empty()) << "fixture snapshot not loaded";
  EXPECT_VALID_REPORT_JSON(report::render_check_json(report));
}

TEST(ReportJson, ReportWithSelftestMatchesSchema) {
  auto report = test_support::sample_report();
  report.selftest = model::SelftestSummary{{selftest_check("cudnn_sdpa", "ok", 1.5)}};
  EXPECT_VALID_REPORT_JSON(report::render_check_json(report));
}

TEST(ReportJson, SchemaRejectsBrokenReports) {
  // The schema must be able to fail: a wrong severity, a missing summary, an unknown top-level key.
  auto good = nlohmann::json::parse(report::render_check_json(test_support::sample_report()));
  for (int variant = 0; variant < 4; ++variant) {
    auto doc = good;
    if (variant == 0) doc["findings"][0]["severity"] = "fatal";
    if (variant == 1) doc.erase("summary");
    if (variant == 2) doc["surprise"] = 1;
    if (variant == 3) doc["workloads"][0]["selected"] = "Flash";
    auto check = test_support::check_report_schema(doc.dump());
    if (!check.available) GTEST_SKIP() << "python3-jsonschema is not installed";
    EXPECT_FALSE(check.valid) << "variant " << variant << " passed the schema";
  }
}

// A finding's JSON `fixes` hold what the user can do: a command the model showed does not help is
// in `rejected_fixes`, a verified change of GPU or model shape in `counterfactuals`.
TEST(ReportJson, RejectedFixesAndCounterfactualsAreNotFixes) {
  auto report = test_support::sample_report();
  ASSERT_FALSE(report.findings.empty());
  model::Finding& f = report.findings.front();
  model::Fix ok;
  ok.kind = "pip";
  ok.command = "python3 -m pip install nvidia-cudnn-cu12==9.6.0.74";
  ok.description = "cuDNN 9.6";
  ok.verified = model::FixOutcome{"", "", f.id};
  model::Fix refuted;
  refuted.kind = "pip";
  refuted.command = "python3 -m pip install nvidia-cudnn-cu12==9.3.0.75";
  refuted.description = "cuDNN 9.3";
  refuted.unverified_reason = "with cuDNN 9.3.0.75 the finding still holds";
  refuted.refuted = true;
  model::Fix gpu;
  gpu.kind = "hardware";
  gpu.description = "with an sm90 GPU (Hopper, e.g. H100)";
  gpu.verified = model::FixOutcome{"", "", f.id};
  f.fixes = {ok, refuted, gpu};
  std::string text = report::render_check_json(report);
  EXPECT_VALID_REPORT_JSON(text);
  auto doc = nlohmann::json::parse(text);
  const auto& finding = doc["findings"][0];
  ASSERT_EQ(finding["fixes"].size(), 1u);
  EXPECT_EQ(finding["fixes"][0]["command"], ok.command);
  ASSERT_EQ(finding["rejected_fixes"].size(), 1u);
  EXPECT_EQ(finding["rejected_fixes"][0]["command"], refuted.command);
  EXPECT_EQ(finding["rejected_fixes"][0]["refuted"], true);
  ASSERT_EQ(finding["counterfactuals"].size(), 1u);
  EXPECT_EQ(finding["counterfactuals"][0]["kind"], "hardware");
}

TEST(Prometheus, HasTheDocumentedFamiliesAndEscapes) {
  auto report = test_support::sample_report();
  std::string text = report::render_prometheus(report, {1763784000.25, 0.5});
  EXPECT_THAT(text, HasSubstr("# TYPE nvte_doctor_info gauge\n"));
  EXPECT_THAT(text, HasSubstr("driver=\"580.159.04\""));
  EXPECT_THAT(text, HasSubstr("cudnn=\"9.19.0\""));
  EXPECT_THAT(text, HasSubstr("rules_digest=\"0123456789abcdef0123\""));
  // The node's own status (a warning finding); the workload without a backend has its own series.
  EXPECT_THAT(text, HasSubstr("nvte_doctor_status 1\n"));
  EXPECT_THAT(text, HasSubstr("nvte_doctor_findings_by_severity{severity=\"error\"} 0\n"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "nvte_doctor_workload_verdict{workload=\"llama-7b\",verdict=\"runs\",backend=\"FusedAttention\",evidence=\"predicted\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("verdict=\"no_backend\",backend=\"\",evidence=\"predicted\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("nvte_doctor_findings{id=\"cudnn-copies-disagree\",severity=\"warning\",workload=\"\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("nvte_doctor_attention_backend_available{workload=\"llama-7b\",backend=\"FusedAttention\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("nvte_doctor_attention_backend_available{workload=\"llama-7b\",backend=\"FlashAttention\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("nvte_doctor_attention_backend_selected{workload=\"llama-7b\",backend=\"FusedAttention\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("workload=\"deepseek-ai/DeepSeek-V3 \\\"mla\\\"\""));
  EXPECT_THAT(text, HasSubstr("nvte_doctor_workload_runnable{workload=\"llama-7b\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("nvte_doctor_last_run_timestamp_seconds 1763784000.250000\n"));
  EXPECT_THAT(text, HasSubstr("nvte_doctor_run_duration_seconds 0.500000\n"));
  EXPECT_THAT(text, Not(HasSubstr("selftest"))) << "no self-test ran: no self-test families";
}

TEST(Prometheus, SelftestResults) {
  auto report = test_support::sample_report();
  // The summary as the self-test writes it: a check run per workload is written once (its first
  // outcome); a skipped check did not run and has no series; an error (crash, timeout) is 0.
  report.selftest = model::SelftestSummary{{selftest_check("cudnn_sdpa", "failed", 2), selftest_check("cudnn_sdpa", "ok", 3),
                                            selftest_check("nvrtc", "ok", 0.25), selftest_check("nccl", "skipped", 0),
                                            selftest_check("cuda_driver", "error", 30)}};
  std::string text = report::render_prometheus(report, {1, 1});
  EXPECT_THAT(text, HasSubstr("nvte_doctor_selftest_passed{check=\"cudnn_sdpa\"} 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("nvte_doctor_selftest_passed{check=\"cudnn_sdpa\"} 1\n")));
  EXPECT_THAT(text, HasSubstr("nvte_doctor_selftest_passed{check=\"nvrtc\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("nvte_doctor_selftest_passed{check=\"cuda_driver\"} 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("check=\"nccl\"")));
  EXPECT_THAT(text, HasSubstr("nvte_doctor_selftest_duration_seconds{check=\"cudnn_sdpa\"} 2\n"));
}

TEST(ReportJson, SelftestIsTheSelftestsOwnObject) {
  // The report's "selftest" object is model::to_json of the summary, key for key.
  auto report = test_support::sample_report();
  model::SelftestCheck failed = selftest_check("cudnn_sdpa", "error", 30);
  failed.error = "timed out";
  failed.timed_out = true;
  failed.phase = "plan";
  failed.phases = {{"plan", "forward", 0.5, 29.5, true}};
  model::SelftestCheck ok = selftest_check("nvrtc", "ok", 0.25);
  ok.result = nlohmann::ordered_json{{"status", "ok"}, {"compile_seconds", 0.125}};
  report.selftest = model::SelftestSummary{{failed, ok}};
  auto doc = nlohmann::ordered_json::parse(report::render_check_json(report));
  EXPECT_EQ(doc["selftest"].dump(),
            R"({"checks":[{"check":"cudnn_sdpa","label":"","status":"error","seconds":30.0,"started":0.0,"error":"timed out",)"
            R"("timed_out":true,"phase":"plan","phases":[{"phase":"plan","start":0.5,"seconds":29.5,"what":"forward","open":true}]},)"
            R"({"check":"nvrtc","label":"","status":"ok","seconds":0.25,"started":0.0,"result":{"status":"ok","compile_seconds":0.125}}],)"
            R"("summary":{"ok":1,"failed":1,"skipped":0,"gpu_checks":1,"gpu_checks_ran":1}})");
}

TEST(Prometheus, DuplicateFindingsAreOneSeries) {
  auto report = test_support::sample_report();
  report.findings.push_back(report.findings[0]);
  std::string text = report::render_prometheus(report, {1, 1});
  std::size_t n = 0;
  for (std::size_t pos = 0; (pos = text.find("id=\"cudnn-copies-disagree\"", pos)) != std::string::npos; ++pos) ++n;
  EXPECT_EQ(n, 1u);
}

TEST(Prometheus, PassesPromtool) {
  if (::access("/usr/bin/promtool", X_OK) != 0) GTEST_SKIP() << "promtool (Debian package prometheus) is not installed";
  auto report = test_support::sample_report();
  report.selftest = model::SelftestSummary{{selftest_check("cudnn_sdpa", "ok", 1.5)}};
  auto file = std::filesystem::temp_directory_path() / ("nvte-prom-" + std::to_string(::getpid()) + ".prom");
  ASSERT_TRUE(util::write_file_atomic(file, report::render_prometheus(report, {1763784000.25, 0.5})));
  // promtool reads the metrics from stdin.
  auto run = util::run_command({"/bin/sh", "-c", "/usr/bin/promtool check metrics < " + file.string()});
  std::filesystem::remove(file);
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->succeeded()) << run->out << run->err;
  EXPECT_EQ(run->out + run->err, "") << "promtool lint remarks";
}

TEST(Nfd, LabelsAreValid) {
  auto report = test_support::sample_report();
  report.facts.set("te.version", model::Value(std::string("2.3.0+cu124")));
  std::string text = report::render_nfd(report, "2026-11-22T05:00:00Z");
  EXPECT_THAT(text, HasSubstr("nvte-doctor.status=WARNING\n")); // the node's; the workload's verdict has its own label
  EXPECT_THAT(text, HasSubstr("nvte-doctor.cudnn=9.19.0\n"));
  EXPECT_THAT(text, HasSubstr("nvte-doctor.driver-cuda=13.0\n"));
  EXPECT_THAT(text, HasSubstr("nvte-doctor.te=2.3.0_cu124\n"));
  EXPECT_THAT(text, HasSubstr("nvte-doctor.workload.llama-7b=FusedAttention\n"));
  EXPECT_THAT(text, HasSubstr("nvte-doctor.verdict.llama-7b=runs\n"));
  EXPECT_THAT(text, HasSubstr("nvte-doctor.verdict.deepseek-ai-DeepSeek-V3-mla-05837c5a=no_backend\n"));
  EXPECT_THAT(text, HasSubstr("# +expiry-time=2026-11-22T05:00:00Z\n"));
  int labels = 0;
  for (auto line : util::split(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    auto eq = line.find('=');
    ASSERT_NE(eq, std::string_view::npos) << line;
    std::string name(line.substr(0, eq)), value(line.substr(eq + 1));
    EXPECT_TRUE(valid_nfd_label(name)) << "bad name: " << name;
    EXPECT_TRUE(valid_nfd_label(value)) << "bad value: " << value;
    ++labels;
  }
  EXPECT_GE(labels, 10);
  EXPECT_THAT(text, HasSubstr("nvte-doctor.workload.deepseek-ai-DeepSeek-V3-mla-"));
  EXPECT_THAT(text, HasSubstr("=none\n"));
}

TEST(Nfd, LabelRuleOfTheTest) {
  EXPECT_TRUE(valid_nfd_label("a.b-c_9"));
  EXPECT_FALSE(valid_nfd_label("-a"));
  EXPECT_FALSE(valid_nfd_label("a+b"));
  EXPECT_FALSE(valid_nfd_label(std::string(64, 'a')));
}

TEST(Nfd, SanitizeKeepsDistinctInputsDistinct) {
  EXPECT_EQ(report::nfd_sanitize("9.19.0"), "9.19.0");
  EXPECT_EQ(report::nfd_sanitize("2.11.0+cu130"), "2.11.0_cu130");
  EXPECT_EQ(report::nfd_sanitize(""), "");
  EXPECT_NE(report::nfd_sanitize("a b"), report::nfd_sanitize("a:b"));
  std::string long_name(100, 'x');
  EXPECT_EQ(report::nfd_sanitize(long_name).size(), 63u);
  EXPECT_NE(report::nfd_sanitize(long_name), report::nfd_sanitize(long_name + "y"));
  EXPECT_FALSE(report::nfd_sanitize("!!!").empty());
}

} // namespace

// The attention area has no facts of its own: its line says what its worst finding says instead
// of a mark with nothing after it.
TEST(ReportText, AnAreaWithoutFactsNamesItsWorstFinding) {
  model::Report r = test_support::sample_report();
  std::string text = report::render_check_text(r, report::TextOptions{});
  EXPECT_THAT(text, HasSubstr("Attention   No attention backend\n"));
  model::Finding more = r.findings.back();
  more.id = "attention-no-backend";
  more.severity = model::Severity::warning;
  more.title = "A lesser problem";
  r.findings.push_back(more);
  r.summarize();
  text = report::render_check_text(r, report::TextOptions{});
  EXPECT_THAT(text, HasSubstr("Attention   No attention backend (+1 more)\n"));
  EXPECT_THAT(text, Not(HasSubstr("Attention   \n")));
}

// Audit 2026-11-25 item 16: terminal escape sequences in fact values reached the terminal.
TEST(ReportText, ControlCharactersAreShownNotActedOn) {
  model::Report r = test_support::sample_report();
  r.facts.set("gpu[0].name", std::string("H100\x1b]0;owned\x07\x1b[2J\x1b[31mRED"));
  r.host = "node\nsecond line";
  ASSERT_FALSE(r.workloads.empty());
  r.workloads.front().workload.name = "llama\x1b[2J\nsplit";
  for (auto color : {report::Color::no, report::Color::yes}) {
    std::string text = report::render_check_text(r, report::TextOptions{color, true});
    EXPECT_THAT(text, Not(HasSubstr("\x1b]"))) << "an OSC sequence got through";
    EXPECT_THAT(text, Not(HasSubstr("\x1b[2J"))) << "a screen clear got through";
    EXPECT_THAT(text, Not(HasSubstr("\x07")));
    // With colour on, an injected colour code like the renderer's own passes (it can only colour).
    EXPECT_THAT(text, HasSubstr(color == report::Color::no ? "H100\\x1b]0;owned\\x07\\x1b[2J\\x1b[31mRED"
                                                           : "H100\\x1b]0;owned\\x07\\x1b[2J"));
    EXPECT_THAT(text, HasSubstr("node\\nsecond line"));
    EXPECT_THAT(text, HasSubstr("llama\\x1b[2J\\nsplit"));
    if (color == report::Color::no) {
      EXPECT_THAT(text, Not(HasSubstr("\x1b"))) << "no colour asked, yet an ESC";
    } else {
      EXPECT_THAT(text, HasSubstr("\x1b[1m")) << "the renderer's own colours are kept";
    }
  }
  model::Facts facts = r.facts;
  std::string probe = report::render_probe_text(facts, report::TextOptions{});
  EXPECT_THAT(probe, Not(HasSubstr("\x1b")));
  ASSERT_FALSE(r.workloads.empty());
  std::string explain = report::render_explain_text(r.workloads.front(), report::TextOptions{});
  EXPECT_THAT(explain, Not(HasSubstr("\x1b")));
  EXPECT_THAT(explain, HasSubstr("llama\\x1b[2J\\nsplit → "));
}

TEST(TerminalSafe, KeepsTextAndOwnColoursShowsTheRest) {
  EXPECT_EQ(util::terminal_safe("plain ✓ text\n\ttab"), "plain ✓ text\n\ttab");
  EXPECT_EQ(util::terminal_safe("a\x1b[1mb\x1b[0m"), "a\\x1b[1mb\\x1b[0m");
  EXPECT_EQ(util::terminal_safe("a\x1b[1mb\x1b[0m", util::Sgr::keep), "a\x1b[1mb\x1b[0m");
  EXPECT_EQ(util::terminal_safe("a\x1b[8mb", util::Sgr::keep), "a\\x1b[8mb");
  EXPECT_EQ(util::terminal_safe("del\x7f c1\xc2\x9b"), "del\\x7f c1\\u009b");
  EXPECT_EQ(util::one_line("a\r\nb"), "a\\r\\nb");
}

// A finding's fixes as text: verified ones the user can make take the slots; counterfactuals
// share one "would also run" line; a logging aid is under debug:; commands the model cannot check
// get one short tag each and their reason once; what the model refuted shows only with -v.
TEST(ReportText, FixesKeepTheirPlaces) {
  auto verified = [](std::string kind, std::string command, std::string description) {
    model::Fix f;
    f.kind = std::move(kind);
    f.command = std::move(command);
    f.description = std::move(description);
    f.verified = model::FixOutcome{"FusedAttention", "F16_arbitrary_seqlen", "x"};
    return f;
  };
  std::vector<model::Fix> fixes = {verified("env", "unset NVTE_FUSED_ATTN", "with unset NVTE_FUSED_ATTN"),
                                   verified("hardware", "", "with an sm90 GPU (Hopper, e.g. H100)"),
                                   verified("model", "", "with head_dim_qk=128 in the workload")};
  model::Fix apt;
  apt.kind = "config";
  apt.command = "sudo apt-get remove -y x";
  apt.unverified_reason = "not a pip install";
  model::Fix other = apt;
  other.command = "sudo apt-get remove -y y";
  model::Fix debug;
  debug.kind = "debug";
  debug.command = "export NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2";
  model::Fix refuted;
  refuted.kind = "pip";
  refuted.command = "python3 -m pip install nvidia-cudnn-cu12==9.3.0.75";
  refuted.unverified_reason = "with cuDNN 9.3.0.75 the finding still holds";
  refuted.refuted = true;
  fixes.insert(fixes.end(), {apt, other, debug, refuted});
  report::Style style(report::Color::no);
  std::string text = report::render_fixes(fixes, style, 2, false);
  EXPECT_THAT(text, HasSubstr("  fix: unset NVTE_FUSED_ATTN\n"));
  EXPECT_THAT(text, HasSubstr("would also run (not a change you can make here): an sm90 GPU (Hopper, e.g. H100); head_dim_qk=128\n"));
  EXPECT_THAT(text, Not(HasSubstr("fix: verified: with an sm90")));
  EXPECT_THAT(text, HasSubstr("  fix: sudo apt-get remove -y x  [unverified]\n"));
  EXPECT_THAT(text, HasSubstr("  fix: sudo apt-get remove -y y  [unverified]\n"));
  EXPECT_EQ(util::split(text, '\n').size() - 1, 7u) << text; // 2 + 2 + 1 footnote + 1 + 1
  EXPECT_THAT(text, HasSubstr("  [unverified] not checked: not a pip install\n"));
  EXPECT_THAT(text, HasSubstr("  debug: export NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2\n"));
  EXPECT_THAT(text, Not(HasSubstr("9.3.0.75")));
  std::string verbose = report::render_fixes(fixes, style, 2, true);
  EXPECT_THAT(verbose, HasSubstr("would not help: python3 -m pip install nvidia-cudnn-cu12==9.3.0.75: with cuDNN 9.3.0.75 the"));
  EXPECT_EQ(report::best_fix(fixes), &fixes[0]);
}

// No fix twice for one workload: a verified fix printed under an earlier finding is one "(as
// above)" line under the next; within one finding a command is printed once.
TEST(ReportText, AFixShownForAnEarlierFindingIsNotRepeated) {
  model::Fix cudnn;
  cudnn.kind = "pip";
  cudnn.command = "python3 -m pip install nvidia-cudnn-cu12==9.6.0.74";
  cudnn.description = "with cuDNN 9.6.0.74 (nvidia-cudnn-cu12)";
  cudnn.changes = {{"cudnn.version", "9.6.0.74"}};
  cudnn.verified = model::FixOutcome{"FusedAttention", "F16_arbitrary_seqlen", "a"};
  model::Fix p2p;
  p2p.kind = "config";
  p2p.description = "with cp_comm_type=p2p in the TE call";
  p2p.changes = {{"workload.cp_comm_type", "p2p"}};
  p2p.verified = cudnn.verified;
  report::Style style(report::Color::no);
  std::set<std::string> shown;
  std::string first = report::render_fixes({cudnn, p2p}, style, 2, false, &shown);
  std::string second = report::render_fixes({cudnn, p2p}, style, 2, false, &shown);
  EXPECT_THAT(first, HasSubstr("  fix: python3 -m pip install nvidia-cudnn-cu12==9.6.0.74\n"));
  EXPECT_THAT(second, Not(HasSubstr("verified:")));
  EXPECT_THAT(
      second,
      HasSubstr(
          "  fix: python3 -m pip install nvidia-cudnn-cu12==9.6.0.74 (verified → FusedAttention (F16_arbitrary_seqlen)) (as above)\n"));
  EXPECT_EQ(util::split(second, '\n').size() - 1, 2u) << second;
  std::string twice = report::render_fixes({cudnn, cudnn}, style, 2, false);
  EXPECT_EQ(util::split(twice, '\n').size() - 1, 2u) << twice; // the command and its verdict, once
}

// A fix that changes a setting beside its command names both on one line; a release built from
// source says so in a short clause without -v.
TEST(ReportText, AFixOnOneLineNamesItsSettingsAndASourceBuildIsShort) {
  model::Fix pair;
  pair.kind = "upgrade";
  pair.command = "python3 -m pip install --no-build-isolation 'transformer_engine[pytorch]==2.17.0'";
  pair.description = "with --attention-backend auto in the Megatron-LM arguments and TransformerEngine 2.17.0 (transformer-engine); "
                     "no prebuilt wheel for this node (the core library is a prebuilt wheel; the PyTorch extension compiles from "
                     "source at install (needs the CUDA toolkit; several minutes))";
  pair.changes = {{"workload.attention_backend", "auto"}, {"te.version", "2.17.0"}};
  pair.verified = model::FixOutcome{"FlashAttention", "", "attention-no-backend"};
  EXPECT_EQ(report::fix_headline(pair),
            "python3 -m pip install --no-build-isolation 'transformer_engine[pytorch]==2.17.0' and --attention-backend auto (verified → "
            "FlashAttention)");
  report::Style style(report::Color::no);
  std::string brief = report::render_fixes({pair}, style, 2, false);
  EXPECT_THAT(brief, HasSubstr("a source build here (-v says how) → FlashAttention"));
  EXPECT_THAT(brief, Not(HasSubstr("compiles from source")));
  EXPECT_THAT(report::render_fixes({pair}, style, 2, true), HasSubstr("compiles from source"));
}

// -v's line about a cuDNN plan tells the truth about where it came from: a compile time only for
// a plan compiled in this run, "loaded from the kernel cache" (no compile time) for one an
// earlier run compiled.
TEST(SelftestText, APlanFromTheKernelCacheClaimsNoCompileTime) {
  model::SelftestCheck compiled = selftest_check("cudnn_sdpa", "ok", 1.2);
  compiled.result =
      nlohmann::ordered_json{{"status", "ok"},
                             {"engine", {{"index", 2}, {"runtime_compiled", true}}},
                             {"runtime_compilation_seconds", 0.912},
                             {"plan_cache", {{"source", "compiled"}, {"seconds", 0.912}, {"why_compiled", "no entry"}, {"stored", true}}}};
  model::SelftestCheck loaded = selftest_check("cudnn_sdpa_bwd", "ok", 0.3);
  loaded.result = nlohmann::ordered_json{
      {"status", "ok"}, {"engine", {{"index", 6}, {"runtime_compiled", true}}}, {"plan_cache", {{"source", "loaded"}, {"seconds", 0.021}}}};
  report::TextOptions verbose;
  verbose.verbose = true;
  std::string text = report::render_selftest_text(model::SelftestSummary{{compiled, loaded}}, {}, {}, verbose);
  EXPECT_THAT(text, HasSubstr("cuDNN engine 2 compiled at plan time in 0.912 s (a job pays it on its first step)"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "cuDNN engine 6 loaded from the kernel cache in 0.021 s (compiled by an earlier run; a job compiles it on its first step)"));
  EXPECT_THAT(text, Not(HasSubstr("cuDNN engine 6 compiled")));
}
