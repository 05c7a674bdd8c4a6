// fleet: three nodes' reports (one stale, one without a backend for a workload) and a broken
// file summarised into findings per node, configurations, workloads per backend and stale nodes;
// the text stays within 60 lines for a fleet with many of everything; human ages.
#include "service/fleet.hpp"

#include "report/render.hpp"
#include "support/report_schema.hpp"
#include "support/sample_report.hpp"
#include "util/file.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using testing::HasSubstr;
using testing::Not;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

TEST(Fleet, Summarises) {
  fs::path dir = fs::temp_directory_path() / ("nvte-fleet-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const double now = *service::parse_rfc3339("2026-11-22T05:00:00Z");

  // The node's own status is WARNING (a warning finding) everywhere; deepseek has no backend on
  // gpu-a and gpu-c: a workload verdict, which does not make the node CRITICAL.
  auto a = test_support::sample_report();
  a.host = "gpu-a";
  a.generated_at = "2026-11-22T04:55:00Z";
  auto b = test_support::sample_report();
  b.host = "gpu-b";
  b.generated_at = "2026-11-22T04:50:00+00:00";
  b.findings.erase(b.findings.begin() + 1);
  b.workloads[1].selected = "UnfusedDotProductAttention";
  b.workloads[1].verdict = {model::Verdict::runs,
                            std::string("UnfusedDotProductAttention"),
                            std::nullopt,
                            model::EvidenceKind::predicted,
                            "",
                            "",
                            "",
                            std::nullopt,
                            ""};
  b.summarize();
  auto c = test_support::sample_report();
  c.host = "gpu-c";
  c.generated_at = "2026-11-19T05:00:00Z"; // three days old
  auto old_a = a;
  old_a.generated_at = "2026-11-20T00:00:00Z"; // an older report of gpu-a: the newest counts
  int i = 0;
  for (const auto* r : {&a, &b, &c, &old_a}) {
    ASSERT_TRUE(util::write_file_atomic(dir / ("node" + std::to_string(i++) + ".json"), report::render_check_json(*r)));
  }
  ASSERT_TRUE(util::write_file_atomic(dir / "broken.json", "{\"host\": "));

  auto s = service::summarize_fleet({dir}, 24h, now);
  ASSERT_EQ(s.nodes.size(), 3u);
  EXPECT_EQ(s.nodes[0].host, "gpu-a");
  EXPECT_FALSE(s.nodes[0].stale);
  EXPECT_EQ(s.nodes[0].age_seconds, 300);
  EXPECT_TRUE(s.nodes[2].stale);
  ASSERT_EQ(s.unreadable.size(), 1u);
  EXPECT_THAT(s.unreadable[0], HasSubstr("broken.json"));
  // The broken file is listed; the fleet's exit stays its nodes' status (WARNING: the workload
  // without a backend is no node's CRITICAL), not 3.
  EXPECT_EQ(s.exit_code(), 1);

  ASSERT_EQ(s.findings.size(), 2u);
  EXPECT_EQ(s.findings[0].id, "workload-no-attention-backend");
  EXPECT_EQ(s.findings[0].nodes, (std::vector<std::string>{"gpu-a", "gpu-c"}));
  EXPECT_EQ(s.findings[1].id, "cudnn-copies-disagree");
  EXPECT_EQ(s.findings[1].nodes.size(), 3u);

  ASSERT_EQ(s.workloads.size(), 2u);
  const auto& ds = s.workloads[0];
  EXPECT_EQ(ds.name, "deepseek-ai/DeepSeek-V3 \"mla\"");
  EXPECT_EQ(ds.by_backend.at("none"), (std::vector<std::string>{"gpu-a", "gpu-c"}));
  EXPECT_EQ(ds.by_backend.at("UnfusedDotProductAttention"), std::vector<std::string>{"gpu-b"});

  // All three run the h100-node snapshot's stack: one configuration, WARNING at worst (the node's).
  ASSERT_EQ(s.configurations.size(), 1u);
  EXPECT_EQ(s.configurations[0].versions,
            (model::StackVersions{"580.159.04", "13.0", "9.19.0", "2.28.9", "2.11.0+cu130", s.configurations[0].versions[5]}));
  EXPECT_EQ(s.configurations[0].worst_status, "WARNING");
  EXPECT_EQ(s.configurations[0].nodes.size(), 3u);

  std::string text = report::render_fleet_text(s, {});
  EXPECT_THAT(text, HasSubstr("Nodes: 3 (3 WARNING), 1 stale, 1 unreadable; newest report 5 min ago, oldest 3 d ago\n"));
  EXPECT_THAT(text, HasSubstr("error    workload-no-attention-backend  on 2 nodes: gpu-a,gpu-c\n"));
  EXPECT_THAT(text, HasSubstr("    no backend                  2 nodes: gpu-a,gpu-c\n    UnfusedDotProductAttention  1 node: gpu-b\n"));
  EXPECT_THAT(text,
              HasSubstr("Unreadable: 1\n  " + (dir / "broken.json").string() + ": not valid JSON: parse error at line 1, column 10: "));
  EXPECT_THAT(text,
              HasSubstr("Stale reports (older than 24 h): 1 node, oldest first\n  gpu-c  generated 2026-11-19T05:00:00Z (3 d ago)\n"));
  EXPECT_THAT(text, HasSubstr("  nodes  worst    GPU             driver      CUDA  cuDNN   NCCL    torch"));
  EXPECT_THAT(text, HasSubstr("      3  WARNING  H100 80GB HBM3  580.159.04  13.0  9.19.0  2.28.9  2.11.0+cu130"));

  auto json = nlohmann::json::parse(report::render_fleet_json(s));
  EXPECT_EQ(json["findings"][0]["count"], 2);
  EXPECT_EQ(json["findings"][0]["hostlist"], "gpu-a,gpu-c");
  EXPECT_EQ(json["configurations"][0]["driver"], "580.159.04");
  EXPECT_EQ(json["configurations"][0]["count"], 3);
  EXPECT_EQ(json["summary"]["nodes"], 3);
  EXPECT_EQ(json["summary"]["by_status"]["WARNING"], 3);
  EXPECT_VALID_JSON_FOR(report::render_fleet_json(s), "fleet.schema.json");
  EXPECT_EQ(json["stale"], nlohmann::json::array({"gpu-c"}));
  EXPECT_EQ(json["workloads"][1]["runs_on"], nlohmann::json::array({"gpu-a", "gpu-b", "gpu-c"}));
  EXPECT_EQ(json["exit_code"], 1);

  fs::remove(dir / "broken.json");
  auto fresh_only = service::summarize_fleet({dir / "node0.json", dir / "node1.json"}, 24h, now);
  EXPECT_EQ(fresh_only.exit_code(), 1); // the nodes' own status: WARNING; the workload is no node's CRITICAL
  fs::remove_all(dir);
}

// A report with only what fleet reads, as text.
std::string mini_report(const std::string& host, const std::string& status, const std::string& driver, const std::string& te,
                        const std::string& finding, const std::string& selected) {
  nlohmann::json doc{
      {"host", host},
      {"generated_at", "2026-11-22T04:00:00Z"},
      {"facts", {{"driver", {{"version", driver}}}, {"cuda", {{"toolkit_version", "12.4"}}}, {"te", {{"version", te}}}}},
      {"workloads", {{{"name", "llama"}, {"selected", selected.empty() ? nlohmann::json(nullptr) : nlohmann::json(selected)}}}},
      {"findings", nlohmann::json::array()},
      {"summary", {{"status", status}}}};
  if (!finding.empty()) doc["findings"].push_back({{"id", finding}, {"severity", "error"}, {"title", "t " + finding}});
  return doc.dump();
}

TEST(Fleet, ConfigurationsGroupNodesByStack) {
  service::FleetReader reader(24h, *service::parse_rfc3339("2026-11-22T05:00:00Z"));
  for (int i = 1; i <= 6; ++i) {
    char host[16];
    std::snprintf(host, sizeof host, "gpu%04d", i);
    bool old_driver = i > 4;
    reader.add(std::string(host) + ".json", mini_report(host, old_driver ? "CRITICAL" : "OK", old_driver ? "535.54.03" : "580.95.05",
                                                        "2.3.0", old_driver ? "driver-too-old" : "", old_driver ? "" : "FusedAttention"));
  }
  auto s = reader.finish();
  ASSERT_EQ(s.configurations.size(), 2u);
  EXPECT_EQ(s.configurations[0].nodes.size(), 4u);
  EXPECT_EQ(s.configurations[0].worst_status, "OK");
  EXPECT_EQ(s.configurations[0].versions[0], "580.95.05");
  EXPECT_EQ(s.configurations[0].versions[1], "12.4"); // the toolkit's when there is no runtime version
  EXPECT_FALSE(s.configurations[0].versions[2]);      // no cuDNN fact: absent, not ""
  EXPECT_EQ(s.configurations[1].worst_status, "CRITICAL");

  std::string text = report::render_fleet_text(s, {});
  EXPECT_THAT(text, HasSubstr("      4  OK        -    580.95.05  12.4  -      -     -      2.3.0  gpu[0001-0004]\n"));
  EXPECT_THAT(text, HasSubstr("      2  CRITICAL  -    535.54.03  12.4  -      -     -      2.3.0  gpu[0005-0006]\n"));
  EXPECT_THAT(text, HasSubstr("error    driver-too-old  on 2 nodes: gpu[0005-0006]\n           t driver-too-old\n"));
  EXPECT_THAT(text, HasSubstr("    no backend      2 nodes: gpu[0005-0006]\n    FusedAttention  4 nodes: gpu[0001-0004]\n"));
  auto json = nlohmann::json::parse(report::render_fleet_json(s));
  EXPECT_EQ(json["configurations"][1]["hostlist"], "gpu[0005-0006]");
  EXPECT_TRUE(json["configurations"][0]["cudnn"].is_null());
  EXPECT_EQ(json["workloads"][0]["backends"][0],
            (nlohmann::json{{"backend", "FusedAttention"}, {"count", 4}, {"hostlist", "gpu[0001-0004]"}}));
  EXPECT_VALID_JSON_FOR(report::render_fleet_json(s), "fleet.schema.json");
}

// A report with a GPU model and one workload's verdict and fix, as text.
std::string verdict_report(const std::string& host, const std::string& gpu, const std::string& te, const std::string& verdict,
                           const std::string& fix = "") {
  nlohmann::json doc{
      {"host", host},
      {"generated_at", "2026-11-22T04:00:00Z"},
      {"facts", {{"gpu", {{{"index", 0}, {"name", gpu}}, {{"index", 1}, {"name", gpu}}}}, {"te", {{"version", te}}}}},
      {"workloads",
       {{{"name", "deepseek"},
         {"selected", "FusedAttention"},
         {"verdict", verdict},
         {"backend", verdict == "no_backend" ? nlohmann::json(nullptr) : nlohmann::json("FusedAttention")},
         {"verdict_finding", fix.empty() ? nlohmann::json(nullptr) : nlohmann::json("cudnn-too-old-for-mla")},
         {"fix", fix.empty() ? nlohmann::json(nullptr) : nlohmann::json{{"kind", "pip"}, {"command", fix}, {"description", "d"}}}},
        {{"name", "llama"}, {"selected", "FlashAttention"}, {"verdict", "runs"}, {"backend", "FlashAttention"}}}},
      {"findings", nlohmann::json::array()},
      {"summary", {{"status", "OK"}}}};
  return doc.dump();
}

// `fleet --by gpu,te`: the nodes grouped by GPU model and TE, each workload's worst verdict per
// group with the fix most of those nodes give; the configurations carry the GPU model too.
TEST(Fleet, MatrixByGpuAndTe) {
  service::FleetReader reader(24h, *service::parse_rfc3339("2026-11-22T05:00:00Z"));
  reader.set_matrix({"gpu", "te"});
  const std::string fix = "pip install 'nvidia-cudnn-cu12>=9.11'";
  for (int i = 1; i <= 4; ++i)
    reader.add("h" + std::to_string(i), verdict_report("h100-0" + std::to_string(i), "NVIDIA H100 80GB HBM3", "2.12.0", "runs"));
  reader.add("b1", verdict_report("b200-01", "NVIDIA B200", "2.12.0", "fails", fix));
  reader.add("b2", verdict_report("b200-02", "NVIDIA B200", "2.12.0", "runs"));
  reader.add("b3", verdict_report("b200-03", "NVIDIA B200", "2.12.0", "at_risk", "export NVTE_FUSED_ATTN=0"));
  reader.add("a1", verdict_report("a100-01", "NVIDIA A100-SXM4-80GB", "2.3.0", "no_backend", fix));
  auto s = reader.finish();
  ASSERT_EQ(s.configurations.size(), 3u);
  EXPECT_EQ(s.configurations[0].gpu, "NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(s.matrix);
  const auto& m = *s.matrix;
  ASSERT_EQ(m.groups.size(), 3u);
  EXPECT_EQ(m.groups[0].key, (std::vector<std::optional<std::string>>{"NVIDIA H100 80GB HBM3", "2.12.0"}));
  EXPECT_EQ(m.groups[1].key, (std::vector<std::optional<std::string>>{"NVIDIA B200", "2.12.0"}));
  ASSERT_EQ(m.workloads, (std::vector<std::string>{"deepseek", "llama"}));
  EXPECT_EQ(m.cells[0][0].worst, "runs");
  EXPECT_EQ(m.cells[0][1].worst, "fails"); // fails beats at_risk and runs
  EXPECT_EQ(m.cells[0][1].fix, fix);       // the worst verdict's fix, not the at_risk node's
  EXPECT_EQ(m.cells[0][1].fix_finding, "cudnn-too-old-for-mla");
  EXPECT_EQ(m.cells[0][1].by_verdict.at("runs"), (std::vector<std::string>{"b200-02"}));
  EXPECT_EQ(m.cells[0][2].worst, "no_backend");
  EXPECT_EQ(m.cells[1][2].worst, "runs");

  std::string text = report::render_fleet_text(s, {});
  EXPECT_THAT(text, HasSubstr("Workloads by GPU, TE: 2 workloads on 3 configurations\n"));
  EXPECT_THAT(text, HasSubstr("  nodes  GPU             TE      deepseek        llama\n"));
  EXPECT_THAT(text, HasSubstr("      4  H100 80GB HBM3  2.12.0  runs            runs\n"));
  EXPECT_THAT(text, HasSubstr("      3  B200            2.12.0  fails 1/3 [1]   runs\n"));
  EXPECT_THAT(text, HasSubstr("      1  A100-SXM4-80GB  2.3.0   no_backend [1]  runs\n"));
  EXPECT_THAT(text, HasSubstr("Fixes:\n  [1] pip install 'nvidia-cudnn-cu12>=9.11'  (cudnn-too-old-for-mla)\n"));
  EXPECT_THAT(text, Not(HasSubstr("Findings:"))); // the matrix view replaces the sections
  auto json = nlohmann::json::parse(report::render_fleet_json(s));
  EXPECT_EQ(json["configurations"][0]["gpu"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(json["matrix"]["by"], nlohmann::json::array({"gpu", "te"}));
  EXPECT_EQ(json["matrix"]["groups"][1]["key"], (nlohmann::json{{"gpu", "NVIDIA B200"}, {"te", "2.12.0"}}));
  EXPECT_EQ(json["matrix"]["groups"][1]["hostlist"], "b200-[01-03]");
  EXPECT_EQ(json["matrix"]["workloads"][0]["cells"][1]["verdict"], "fails");
  EXPECT_EQ(json["matrix"]["workloads"][0]["cells"][1]["fix"], fix);
  EXPECT_EQ(json["matrix"]["workloads"][0]["cells"][1]["by_verdict"]["at_risk"]["count"], 1);
  EXPECT_VALID_JSON_FOR(report::render_fleet_json(s), "fleet.schema.json");
}

// Many groups and workloads: the matrix keeps to 60 lines and says what it left out.
TEST(Fleet, MatrixFitsSixtyLines) {
  service::FleetReader reader(24h, *service::parse_rfc3339("2026-11-22T05:00:00Z"));
  reader.set_matrix({"gpu", "te"});
  for (int i = 0; i < 600; ++i) {
    nlohmann::json doc =
        nlohmann::json::parse(verdict_report("node" + std::to_string(i), "GPU model " + std::to_string(i % 5), "2." + std::to_string(i % 9),
                                             i % 4 ? "runs" : "fails", "fix number " + std::to_string(i)));
    for (int w = 0; w < 9; ++w) doc["workloads"].push_back({{"name", "w" + std::to_string(w)}, {"verdict", "unknown"}});
    reader.add("n" + std::to_string(i), doc.dump());
  }
  auto s = reader.finish();
  std::string text = report::render_fleet_text(s, {});
  EXPECT_LE(std::count(text.begin(), text.end(), '\n'), 60) << text;
  EXPECT_THAT(text, HasSubstr("… 25 more configurations"));
  EXPECT_THAT(text, HasSubstr("… 5 more workloads"));
  EXPECT_THAT(text, HasSubstr("… 4 more fixes"));
}

TEST(Fleet, MatrixKeys) {
  EXPECT_EQ(*service::parse_matrix_keys("gpu,te"), (std::vector<std::string>{"gpu", "te"}));
  EXPECT_EQ(*service::parse_matrix_keys(" cudnn , gpu "), (std::vector<std::string>{"cudnn", "gpu"}));
  auto typo = service::parse_matrix_keys("gpu,tee");
  ASSERT_FALSE(typo);
  EXPECT_THAT(typo.error().message, HasSubstr("unknown key 'tee' (did you mean 'te'?)"));
  EXPECT_FALSE(service::parse_matrix_keys("gpu,gpu"));
  EXPECT_FALSE(service::parse_matrix_keys(""));
}

// Many of everything: the default text keeps to 60 lines and says what it left out; --all and
// --hosts 0 show everything.
TEST(Fleet, TextFitsSixtyLines) {
  service::FleetReader reader(1h, *service::parse_rfc3339("2026-11-22T05:00:00Z"));
  for (int i = 0; i < 400; ++i) {
    nlohmann::json doc = nlohmann::json::parse(mini_report("node" + std::to_string(i * 3), i % 3 ? "WARNING" : "CRITICAL",
                                                           "5" + std::to_string(i % 20), "2." + std::to_string(i % 7), "", ""));
    doc["generated_at"] = i % 2 ? "2026-11-22T04:59:00Z" : "2026-11-20T04:00:00Z";
    doc["workloads"] = nlohmann::json::array();
    for (int w = 0; w < 6; ++w) {
      doc["workloads"].push_back({{"name", "w" + std::to_string(w)}, {"selected", "backend" + std::to_string((i + w) % 7)}});
    }
    for (int f = 0; f < 3; ++f) {
      doc["findings"].push_back({{"id", "finding-" + std::to_string((i + f) % 25)}, {"severity", "warning"}, {"title", "a title"}});
    }
    reader.add("n" + std::to_string(i) + ".json", doc.dump());
    reader.add("junk" + std::to_string(i) + ".json", "not json");
  }
  auto s = reader.finish();
  std::string text = report::render_fleet_text(s, {});
  EXPECT_LE(std::count(text.begin(), text.end(), '\n'), 60) << text;
  EXPECT_THAT(text, HasSubstr("Configurations (GPU, driver, CUDA, cuDNN, NCCL, torch, TE): 140\n"));
  EXPECT_THAT(text, HasSubstr("… 132 more configurations"));
  EXPECT_THAT(text, HasSubstr("… 17 more findings"));
  EXPECT_THAT(text, HasSubstr("… 3 more workloads"));
  EXPECT_THAT(text, HasSubstr("… 4 more backends"));
  EXPECT_THAT(text, HasSubstr("… 198 more stale nodes"));
  EXPECT_THAT(text, HasSubstr("… 398 more unreadable files"));
  EXPECT_THAT(text, HasSubstr(",… +"));
  for (std::size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    EXPECT_LE(end - start, 200u) << text.substr(start, end - start);
  }
  std::string all = report::render_fleet_text(s, {0, true});
  EXPECT_THAT(all, Not(HasSubstr("more")));
  EXPECT_THAT(all, HasSubstr("finding-24"));
  EXPECT_GT(std::count(all.begin(), all.end(), '\n'), 800);
}

TEST(Fleet, HumanAges) {
  EXPECT_EQ(report::human_age(0), "0 s ago");
  EXPECT_EQ(report::human_age(119), "119 s ago");
  EXPECT_EQ(report::human_age(120), "2 min ago");
  EXPECT_EQ(report::human_age(3 * 3600 + 59), "3 h ago");
  EXPECT_EQ(report::human_age(3 * 3600 * 2), "6 h ago");
  EXPECT_EQ(report::human_age(47 * 3600), "47 h ago");
  EXPECT_EQ(report::human_age(3 * 86400 + 5), "3 d ago");
  EXPECT_EQ(report::human_age(-300), "5 min in the future");
  EXPECT_EQ(report::human_duration(86400), "24 h");
}

TEST(Fleet, Rfc3339) {
  EXPECT_EQ(service::parse_rfc3339("1970-01-01T00:00:00Z"), 0.0);
  EXPECT_EQ(service::parse_rfc3339("1970-01-01T01:00:00+01:00"), 0.0);
  EXPECT_EQ(service::parse_rfc3339("1970-01-01T00:00:01.5Z"), 1.5);
  EXPECT_FALSE(service::parse_rfc3339("yesterday"));
  EXPECT_FALSE(service::parse_rfc3339("1970-01-01T00:00:00"));
}

} // namespace
