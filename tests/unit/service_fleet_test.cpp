// fleet: three nodes' reports (one stale, one without a backend for a workload) and a broken
// file summarised into findings per node, workloads per backend and stale nodes.
#include "service/fleet.hpp"

#include "report/render.hpp"
#include "support/sample_report.hpp"
#include "util/file.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using testing::HasSubstr;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

TEST(Fleet, Summarises) {
  fs::path dir = fs::temp_directory_path() / ("nvte-fleet-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const double now = *service::parse_rfc3339("2026-11-22T05:00:00Z");

  auto a = test_support::sample_report(); // CRITICAL: deepseek has no backend
  a.host = "gpu-a";
  a.generated_at = "2026-11-22T04:55:00Z";
  auto b = test_support::sample_report();
  b.host = "gpu-b";
  b.generated_at = "2026-11-22T04:50:00+00:00";
  b.findings.erase(b.findings.begin() + 1);
  b.workloads[1].selected = "UnfusedDotProductAttention";
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
  EXPECT_EQ(s.exit_code(), 3);

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

  std::string text = service::render_fleet_text(s);
  EXPECT_THAT(text, HasSubstr("Nodes: 3"));
  EXPECT_THAT(text, HasSubstr("1 stale"));
  EXPECT_THAT(text, HasSubstr("error    workload-no-attention-backend  on 2 nodes: gpu-a, gpu-c"));
  EXPECT_THAT(text, HasSubstr("no backend: gpu-a, gpu-c"));
  EXPECT_THAT(text, HasSubstr("Stale reports:\n  gpu-c"));

  auto json = nlohmann::json::parse(service::render_fleet_json(s));
  EXPECT_EQ(json["findings"][0]["count"], 2);
  EXPECT_EQ(json["stale"], nlohmann::json::array({"gpu-c"}));
  EXPECT_EQ(json["workloads"][1]["runs_on"], nlohmann::json::array({"gpu-a", "gpu-b", "gpu-c"}));
  EXPECT_EQ(json["exit_code"], 3);

  fs::remove(dir / "broken.json");
  auto fresh_only = service::summarize_fleet({dir / "node0.json", dir / "node1.json"}, 24h, now);
  EXPECT_EQ(fresh_only.exit_code(), 2);
  fs::remove_all(dir);
}

TEST(Fleet, Rfc3339) {
  EXPECT_EQ(service::parse_rfc3339("1970-01-01T00:00:00Z"), 0.0);
  EXPECT_EQ(service::parse_rfc3339("1970-01-01T01:00:00+01:00"), 0.0);
  EXPECT_EQ(service::parse_rfc3339("1970-01-01T00:00:01.5Z"), 1.5);
  EXPECT_FALSE(service::parse_rfc3339("yesterday"));
  EXPECT_FALSE(service::parse_rfc3339("1970-01-01T00:00:00"));
}

} // namespace
