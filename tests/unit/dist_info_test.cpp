#include "probe/dist_info.hpp"
#include "support/node_fixture.hpp"

#include <gtest/gtest.h>

using namespace probe;

TEST(DistInfo, NormalizesNames) {
  EXPECT_EQ(normalize_distribution_name("Transformer-Engine_cu12"), "transformer_engine_cu12");
  EXPECT_EQ(normalize_distribution_name("flash-attn"), "flash_attn");
  EXPECT_EQ(normalize_distribution_name("nvidia.cudnn--cu13"), "nvidia_cudnn_cu13");
  EXPECT_EQ(normalize_distribution_name(" torch "), "torch");
}

TEST(DistInfo, ReadsOnlyTheHeaders) {
  auto d = parse_core_metadata("Metadata-Version: 2.1\r\nName: flash-attn\r\nVersion: 2.5.8\r\n\r\nVersion: 9.9\n", "m");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->name, "flash-attn");
  EXPECT_EQ(d->normalized, "flash_attn");
  EXPECT_EQ(d->version, "2.5.8");
  auto bad = parse_core_metadata("Metadata-Version: 2.1\nName: x\n\nVersion: 1.0\n", "/site/x.dist-info/METADATA");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("/site/x.dist-info/METADATA"), std::string::npos);
}

TEST(DistInfo, ScansSitePackagesAndRecord) {
  test_support::NodeFixture node("a100-node");
  std::string site = "/opt/venv/lib/python3.10/site-packages";
  auto scan = scan_site_packages(node.root(), site);
  EXPECT_TRUE(scan.problems.empty());
  std::vector<std::string> names;
  for (const auto& d : scan.distributions) names.push_back(d.normalized);
  EXPECT_EQ(names, (std::vector<std::string>{"flash_attn", "megatron_core", "nvidia_cuda_runtime_cu12", "nvidia_cudnn_cu12",
                                             "nvidia_nccl_cu12", "torch", "transformer_engine"}));
  const Distribution& nccl = scan.distributions[4];
  auto files = read_record(node.root(), nccl);
  ASSERT_TRUE(files.ok()) << files.error().message;
  // The quoted entry is unquoted and made a node path.
  EXPECT_EQ(files->at(0), site + "/nvidia/nccl/lib/libnccl.so.2");
}

TEST(DistInfo, EggInfoDirectoriesAndFiles) {
  test_support::NodeFixture node("no-driver-node");
  auto scan = scan_site_packages(node.root(), "/usr/lib/python3/dist-packages");
  ASSERT_EQ(scan.distributions.size(), 2u);
  EXPECT_EQ(scan.distributions[0].normalized, "requests");
  EXPECT_EQ(scan.distributions[1].version, "1.16.0");
  EXPECT_TRUE(scan.distributions[1].egg_info);
  EXPECT_FALSE(read_record(node.root(), scan.distributions[1]).ok());
}
