#include "probe/dist_info.hpp"
#include "support/node_fixture.hpp"
#include "probe/node_path.hpp"
#include "util/file_cache.hpp"
#include "util/strings.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <unistd.h>

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

// Requires-Dist as TE 2.15's METADATA writes it, and the other PEP 508 shapes pip accepts.
TEST(DistInfo, RequiresDistHeadersAndRequirements) {
  auto d = parse_core_metadata("Name: transformer_engine\nVersion: 2.15.0\nRequires-Dist: pydantic\n"
                               "Requires-Dist: importlib-metadata>=1.0\nRequires-Dist: pytest>=8.2.1; extra == \"test\"\n\n"
                               "Requires-Dist: not-a-header\n",
                               "m");
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->requires_dist.size(), 3u);
  EXPECT_EQ(d->requires_dist[1], "importlib-metadata>=1.0");

  auto plain = parse_requirement("pydantic");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->name, "pydantic");
  EXPECT_EQ(plain->specifier, "");
  EXPECT_EQ(plain->marker, "");
  auto ranged = parse_requirement("importlib-metadata>=1.0");
  ASSERT_TRUE(ranged);
  EXPECT_EQ(ranged->normalized, "importlib_metadata");
  EXPECT_EQ(ranged->specifier, ">=1.0");
  EXPECT_EQ(ranged->text(), "importlib-metadata>=1.0");
  auto extra = parse_requirement("pytest >= 8.2.1 ; extra == \"test\"");
  ASSERT_TRUE(extra);
  EXPECT_EQ(extra->specifier, ">=8.2.1");
  EXPECT_EQ(extra->marker, "extra == \"test\"");
  auto old_style = parse_requirement("torch[cuda] (>=2.1, <3)");
  ASSERT_TRUE(old_style);
  EXPECT_EQ(old_style->name, "torch");
  EXPECT_EQ(old_style->specifier, ">=2.1,<3");
  auto url = parse_requirement("flash-attn @ https://example.invalid/flash_attn.whl");
  ASSERT_TRUE(url);
  EXPECT_EQ(url->specifier, "");
  EXPECT_FALSE(parse_requirement(">=1.0"));
  EXPECT_FALSE(parse_requirement("name[unclosed"));
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

  // With a name prefix only the matching metadata directories are read.
  names.clear();
  for (const auto& d : scan_site_packages(node.root(), site, "nvidia").distributions) names.push_back(d.normalized);
  EXPECT_EQ(names, (std::vector<std::string>{"nvidia_cuda_runtime_cu12", "nvidia_cudnn_cu12", "nvidia_nccl_cu12"}));

  // A name filter sees each directory's normalized distribution name; refused ones are not read.
  std::vector<std::string> asked;
  names.clear();
  auto filtered = scan_site_packages(node.root(), site, {}, [&](const std::string& n) {
    asked.push_back(n);
    return n == "torch" || n == "flash_attn";
  });
  for (const auto& d : filtered.distributions) names.push_back(d.normalized);
  EXPECT_EQ(names, (std::vector<std::string>{"flash_attn", "torch"}));
  EXPECT_EQ(asked.size(), 7u);
  EXPECT_NE(std::find(asked.begin(), asked.end(), "nvidia_cudnn_cu12"), asked.end());
}

TEST(DistInfo, BrokenEntriesAreProblemsUnlessFilteredOut) {
  test_support::NodeFixture node("broken-node");
  std::string site = "/opt/venv/lib/python3.11/site-packages";
  auto scan = scan_site_packages(node.root(), site);
  std::string all;
  for (const auto& p : scan.problems) all += p + "\n";
  EXPECT_NE(all.find("broken_pkg-1.0.dist-info/METADATA: no Name or Version"), std::string::npos) << all;
  EXPECT_NE(all.find("dangling-1.0.dist-info: broken entry"), std::string::npos) << all;
  auto only_torch = scan_site_packages(node.root(), site, {}, [](const std::string& n) { return n == "torch"; });
  EXPECT_TRUE(only_torch.problems.empty());
  ASSERT_EQ(only_torch.distributions.size(), 1u);
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

// On the live system a METADATA's Name, Version and Requires-Dist come from the cache across runs
// while the file keeps its identity (one stat instead of reading its head); a changed file is read
// again. Under another root nothing is cached (the file is opened inside that root).
TEST(DistInfo, ALiveMetadataIsReadOnceWhileItsFileIsTheSame) {
  auto site = std::filesystem::temp_directory_path() / ("nvte-dist-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(site);
  auto write = [&](const std::string& dir, const std::string& text) {
    std::filesystem::create_directories(site / dir);
    std::ofstream(site / dir / "METADATA") << text;
    // The cache takes no file changed in its last seconds (FileCache::Limits::racy_seconds).
    std::filesystem::last_write_time(site / dir / "METADATA", std::filesystem::file_time_type::clock::now() - std::chrono::hours(2));
  };
  write("torch-2.11.0.dist-info", "Name: torch\nVersion: 2.11.0\nRequires-Dist: filelock\nRequires-Dist: sympy>=1.13.3\n\nbody\n");
  write("nvidia_cudnn_cu13-9.19.0.56.dist-info", "Name: nvidia-cudnn-cu13\nVersion: 9.19.0.56\n");
  auto cache = std::make_shared<util::FileCache>(); // in memory: shared by the runs below
  auto scan = [&](const std::filesystem::path& root) {
    NodeFsMemo memo;
    node_set_file_cache(cache);
    std::vector<std::string> out;
    std::string in_root = root == "/" ? site.string() : "/" + site.filename().string();
    for (const auto& d : scan_site_packages(root, in_root).distributions)
      out.push_back(d.normalized + " " + d.version + " " + d.name + " [" + util::join(d.requires_dist, ", ") + "]");
    return out;
  };
  const std::vector<std::string> expected{"nvidia_cudnn_cu13 9.19.0.56 nvidia-cudnn-cu13 []",
                                          "torch 2.11.0 torch [filelock, sympy>=1.13.3]"};
  EXPECT_EQ(scan("/"), expected);
  EXPECT_EQ(cache->hits(), 0u);
  EXPECT_EQ(scan("/"), expected);
  EXPECT_EQ(cache->hits(), 2u);
  write("torch-2.11.0.dist-info", "Name: torch\nVersion: 2.12.0\n\n");
  EXPECT_EQ(scan("/")[1], "torch 2.12.0 torch []");
  EXPECT_EQ(cache->hits(), 3u); // the other one only
  std::size_t before = cache->hits() + cache->misses();
  // Another root (the same files seen as /nvte-dist-cache-N of a tree): read, never cached.
  EXPECT_EQ(scan(site.parent_path())[1], "torch 2.12.0 torch []");
  EXPECT_EQ(cache->hits() + cache->misses(), before);
  std::filesystem::remove_all(site);
}
