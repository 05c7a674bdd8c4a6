#include "probe/te_load_order.hpp"
#include "probe/node_path.hpp"
#include "support/build_factors.hpp"
#include "support/node_fixture.hpp"
#include "util/input_guard.hpp"
#include "support/probe_helpers.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

using namespace probe;
using test_support::NodeFixture;

using test_support::k_a100_site;
using test_support::k_h100_site;
using test_support::spec;

namespace {

model::Version v(const char* text) { return *model::Version::parse(text); }

struct Search {
  explicit Search(const NodeFixture& node, std::string purelib) : host(node.host()) {
    auto c = read_ld_cache(node.root());
    if (c) cache = *c;
    ctx.view = make_loader_view(host, cache ? &*cache : nullptr);
    ctx.env = &host.env;
    ctx.purelib = std::move(purelib);
    ctx.cache = cache ? &*cache : nullptr;
  }
  util::Result<ConsumerChoice> operator()(const char* te, std::string_view lib) { return te_search(ctx, v(te), spec(lib)); }
  Host host;
  std::optional<LdCache> cache;
  TeContext ctx;
};

} // namespace

TEST(TeLoadOrder, EveryReleaseFromV110ToV218IsModelled) {
  for (const char* tag : {"1.10", "1.11", "1.12",   "1.13", "2.0",  "2.1",    "2.2",  "2.2.1", "2.3",
                          "2.4",  "2.5",  "2.6",    "2.7",  "2.8",  "2.9",    "2.10", "2.11",  "2.12",
                          "2.13", "2.14", "2.14.1", "2.15", "2.16", "2.16.1", "2.17", "2.18",  "2.11.0.dev0+abc"}) {
    EXPECT_NE(find_te_rule("cudnn", v(tag)), nullptr) << tag;
    EXPECT_NE(find_te_rule("nvrtc", v(tag)), nullptr) << tag;
  }
  EXPECT_EQ(find_te_rule("cudnn", v("1.9")), nullptr);
  EXPECT_EQ(find_te_rule("cudart", v("2.3")), nullptr);
  EXPECT_NE(find_te_rule("cudart", v("2.4")), nullptr);
  EXPECT_NE(std::string(find_te_rule("cudnn", v("2.3"))->citation).find("v1.11"), std::string::npos);
}

// TE <= 2.3 tries the pip wheel first; TE 2.4+ tries the toolkit first.
TEST(TeLoadOrder, WheelFirstUntil23ToolkitFirstFrom24) {
  NodeFixture node("a100-node");
  Search search(node, k_a100_site);
  auto te23 = search("2.3.0", "cudnn");
  ASSERT_TRUE(te23.ok()) << te23.error().message;
  EXPECT_EQ(te23->real, k_a100_site + "/nvidia/cudnn/lib/libcudnn.so.9");
  EXPECT_NE(te23->reason.find("pip wheel directory"), std::string::npos);
  node.install("/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudnn.so.8.9.7", "cudnn8");
  EXPECT_EQ(search("2.3.0", "cudnn")->real, k_a100_site + "/nvidia/cudnn/lib/libcudnn.so.9");
  auto te25 = search("2.5.0", "cudnn");
  ASSERT_TRUE(te25.ok());
  EXPECT_EQ(te25->real, "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudnn.so.8.9.7");
  EXPECT_NE(te25->reason.find("recursive search of /usr/local/cuda"), std::string::npos);
  EXPECT_NE(te25->reason.find("CUDNN_HOME/CUDNN_PATH unset"), std::string::npos);
}

TEST(TeLoadOrder, NewestFileNameFirstAndStubsOnlySkippedFrom211) {
  NodeFixture node("a100-node");
  node.install("/opt/cudnn/lib/libcudnn.so.9.1.0", "cudnn9_1");
  node.install("/opt/cudnn/lib/stubs/libcudnn.so.9.9.9", "cudnn9_1");
  node.symlink("/opt/cudnn/lib/libcudnn.so.9", "libcudnn.so.9.1.0");
  Search search(node, k_a100_site);
  search.host.env["CUDNN_PATH"] = "/opt/cudnn";
  EXPECT_EQ(search("2.11.0", "cudnn")->path, "/opt/cudnn/lib/libcudnn.so.9.1.0");
  EXPECT_EQ(search("2.5.0", "cudnn")->path, "/opt/cudnn/lib/stubs/libcudnn.so.9.9.9");
}

TEST(TeLoadOrder, NvrtcFromTheToolkitWithoutStubs) {
  NodeFixture node("a100-node");
  Search search(node, k_a100_site);
  auto nvrtc = search("2.3.0", "nvrtc");
  ASSERT_TRUE(nvrtc.ok()) << nvrtc.error().message;
  EXPECT_EQ(nvrtc->path, "/usr/local/cuda/lib64/libnvrtc.so.12.4.127");
  EXPECT_EQ(nvrtc->real, "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libnvrtc.so.12.4.127");
}

// TE 2.11+ on the reference node: nothing in /usr/local/cuda, so dlopen("libcudnn.so") finds
// the system 9.14 before the wheel's 9.19 is ever looked at.
TEST(TeLoadOrder, Te211OnTheReferenceNodePicksTheSystemCudnn) {
  NodeFixture node("h100-node");
  Search search(node, k_h100_site);
  auto cudnn = search("2.11.0", "cudnn");
  ASSERT_TRUE(cudnn.ok()) << cudnn.error().message;
  EXPECT_EQ(cudnn->real, "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0");
  EXPECT_NE(cudnn->reason.find("dlopen(\"libcudnn.so\") via default directory /usr/lib/x86_64-linux-gnu"), std::string::npos)
      << cudnn->reason;
  // Without the dev link the loader finds nothing and the wheel wins.
  std::filesystem::remove(node.path("/usr/lib/x86_64-linux-gnu/libcudnn.so"));
  EXPECT_EQ(search("2.11.0", "cudnn")->real, k_h100_site + "/nvidia/cudnn/lib/libcudnn.so.9");
  // TE 2.6-2.9 tries the wheel, then `ldconfig -p`, then dlopen: without a wheel directory
  // (and without the dev link) the ld.so.cache entry is taken.
  Search no_wheel(node, "/nonexistent");
  auto te26 = no_wheel("2.6.0", "cudnn");
  ASSERT_TRUE(te26.ok());
  EXPECT_EQ(te26->path, "/usr/lib/x86_64-linux-gnu/libcudnn.so.9");
  EXPECT_NE(te26->reason.find("ldconfig -p"), std::string::npos);
}

TEST(TeLoadOrder, CudartWheelOnlyWithoutAToolkitFrom211) {
  NodeFixture node("h100-node");
  Search search(node, k_h100_site);
  auto cudart = search("2.11.0", "cudart");
  ASSERT_FALSE(cudart.ok());
  EXPECT_NE(cudart.error().message.find("found a system nvrtc"), std::string::npos);
  std::filesystem::remove_all(node.path("/usr/local/cuda-13.0"));
  std::filesystem::remove(node.path("/usr/local/cuda"));
  auto wheel = search("2.11.0", "cudart");
  ASSERT_TRUE(wheel.ok()) << wheel.error().message;
  EXPECT_EQ(wheel->real, k_h100_site + "/nvidia/cu13/lib/libcudart.so.13");
}

TEST(TeLoadOrder, ABrokenPickMakesTheImportFail) {
  NodeFixture node("a100-node");
  node.symlink("/opt/cudnn/libcudnn.so.9.99", "libcudnn.so.missing");
  Search search(node, k_a100_site);
  search.host.env["CUDNN_HOME"] = "/opt/cudnn";
  auto r = search("2.11.0", "cudnn");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("import transformer_engine"), std::string::npos);
}

TEST(TeLoadOrder, OldTeAssertsOneWheelCudnn) {
  NodeFixture node("a100-node");
  node.install(k_a100_site + "/nvidia/cudnn/lib/libcudnn.so.8", "cudnn8");
  Search search(node, k_a100_site);
  auto te23 = search("2.3.0", "cudnn");
  ASSERT_FALSE(te23.ok());
  EXPECT_EQ(te23.error().kind, util::ErrorKind::invalid);
  EXPECT_NE(te23.error().message.find("AssertionError"), std::string::npos);
  // TE 2.4+ loads every lib*.so.*[0-9] there: the newest libcudnn.so.N is the one reported.
  EXPECT_EQ(search("2.5.0", "cudnn")->path, k_a100_site + "/nvidia/cudnn/lib/libcudnn.so.9");
}

// The libraries probe walks TE's glob directories ahead, on a thread of its own (te_glob_dirs,
// te_walk_dirs): every search answers as it does when it walks as it goes. The toolkit here has
// a symlinked directory and a stub, and CUDA_HOME names a second tree.
TEST(TeLoadOrder, WalksMadeAheadAnswerAsWalksMadeOnTheWay) {
  NodeFixture node("a100-node");
  node.install("/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudnn.so.8.9.7", "cudnn8");
  node.write("/usr/local/cuda-12.4/targets/x86_64-linux/lib/stubs/libnvrtc.so", "stub");
  node.write("/opt/cuda-extra/lib64/libcublas.so.12", "not elf");
  node.symlink("/usr/local/cuda-12.4/lib64x", "/usr/local/cuda-12.4/targets/x86_64-linux/lib");
  for (const char* env : {"", "/opt/cuda-extra"}) {
    Search inline_walks(node, k_a100_site);
    Search ahead(node, k_a100_site);
    if (*env) {
      inline_walks.host.env["CUDA_HOME"] = env;
      ahead.host.env["CUDA_HOME"] = env;
    }
    for (const char* te : {"2.3.0", "2.5.0", "2.11.0", "2.16.1"}) {
      auto dirs = te_glob_dirs(ahead.ctx, v(te));
      ASSERT_FALSE(dirs.empty()) << te;
      EXPECT_EQ(std::count(dirs.begin(), dirs.end(), *env ? std::string(env) : std::string("/usr/local/cuda")), 1) << te;
      ahead.ctx.walks.clear();
      ahead.ctx.walks = te_walk_dirs(node.root(), dirs);
      inline_walks.ctx.walks.clear();
      for (std::string_view lib : {"cudnn", "nvrtc", "cublas", "cudart"}) {
        auto a = inline_walks(te, lib);
        auto b = ahead(te, lib);
        ASSERT_EQ(a.ok(), b.ok()) << te << " " << lib;
        if (a.ok()) {
          EXPECT_EQ(a->real, b->real) << te << " " << lib;
          EXPECT_EQ(a->reason, b->reason) << te << " " << lib;
        } else {
          EXPECT_EQ(a.error().message, b.error().message) << te << " " << lib;
        }
      }
      EXPECT_EQ(inline_walks.ctx.walks, ahead.ctx.walks) << te;
    }
  }
}

// With helper threads listing the directories ahead (breadth first, into the run's shared
// listings) a walk is the same walk: here on the fixture's toolkit with its symlinked directory, and
// on this machine's CUDA toolkit (thousands of entries) where there is one, several times over.
TEST(TeLoadOrder, WalksWithListingsMadeAheadAreTheSameWalks) {
  NodeFixture node("a100-node");
  node.install("/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudnn.so.8.9.7", "cudnn8");
  node.symlink("/usr/local/cuda-12.4/lib64x", "/usr/local/cuda-12.4/targets/x86_64-linux/lib");
  node.symlink("/usr/local/cuda-12.4/loop", "/usr/local/cuda-12.4");
  std::vector<std::pair<std::filesystem::path, std::string>> trees{{node.root(), "/usr/local/cuda"}};
  if (std::filesystem::is_directory("/usr/local/cuda")) trees.emplace_back("/", "/usr/local/cuda");
  for (const auto& [root, dir] : trees) {
    TeWalks alone;
    {
      NodeFsMemo memo;
      alone = te_walk_dirs(root, {dir}, 0u);
    }
    ASSERT_FALSE(alone[dir].files.empty()) << dir;
    for (int round = 0; round < 8; ++round) {
      NodeFsMemo memo;
      EXPECT_EQ(te_walk_dirs(root, {dir}, 2u), alone) << root << " round " << round;
    }
  }
}

// Audit 2026-12-01 item 16: the walk of TE's recursive glob resolved every directory's whole path
// again before listing it, so a chain of nested directories under /usr/local/cuda cost the cube
// of its depth (1,000 levels: 14 s, 2,000: more than 100 s). Now each directory is listed by its
// real path, and the walk goes 16 levels down at most: a library deeper than that is not seen.
TEST(TeLoadOrder, ADeepChainOfDirectoriesIsWalkedQuicklyAndOnlySoFarDown) {
  auto root = std::filesystem::temp_directory_path() / ("nvte-deep-walk-" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "usr/local/cuda/lib64");
  // Made one level at a time through directory descriptors, as the audit did: the whole path
  // is longer than mkdir(2) takes.
  int fd = ::open((root / "usr/local/cuda/lib64").c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  for (int level = 1; level <= 1000; ++level) {
    ASSERT_EQ(::mkdirat(fd, "d", 0755), 0) << level;
    int next = ::openat(fd, "d", O_RDONLY | O_DIRECTORY);
    ::close(fd);
    ASSERT_GE(next, 0) << level;
    fd = next;
    if (level == 3 || level == 40) ::close(::openat(fd, "libcudnn.so.9", O_CREAT | O_WRONLY, 0644));
  }
  ::close(fd);
  auto cpu = [] {
    timespec now{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
  };
  double start = cpu();
  TeWalks walks;
  {
    NodeFsMemo memo; // as the probe runs it
    walks = te_walk_dirs(root, {"/usr/local/cuda"});
  }
  double seconds = cpu() - start;
  ASSERT_EQ(std::system(("rm -rf '" + root.string() + "'").c_str()), 0); // rm walks any depth
  ASSERT_EQ(walks.count("/usr/local/cuda"), 1u);
  // Past the walk-depth cap the walk is no answer (its files are dropped) but an error naming the
  // cap, its value and the directory, which the command ends with (issue 37, "What to build" 4).
  EXPECT_EQ(walks["/usr/local/cuda"].files, std::vector<std::string>{});
  EXPECT_EQ(walks["/usr/local/cuda"].cap,
            "/usr/local/cuda (under " + root.string() +
                "): TE's recursive library search of it meets directories nested more than 16 levels deep (limit 16, the walk-depth cap); "
                "remove or move that tree, or point the variable TE globs (CUDNN_HOME, CUDA_HOME, CUDA_PATH, ...) at the toolkit itself");
  EXPECT_LT(seconds, 1.0 * test_support::k_time_factor) << "the walk took " << seconds << " s of CPU";
}

TEST(TeLoadOrder, AWalkOfMoreEntriesThanItsCapIsAnErrorNamingIt) {
  // The walk-entries cap (util::k_max_walk_entries, 200,000): one directory with one entry more.
  auto root = std::filesystem::temp_directory_path() / ("nvte-wide-walk-" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "usr/local/cuda/lib64");
  int fd = ::open((root / "usr/local/cuda/lib64").c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  for (std::size_t i = 0; i < util::k_max_walk_entries; ++i) ::close(::openat(fd, std::to_string(i).c_str(), O_CREAT | O_WRONLY, 0644));
  ::close(fd);
  TeWalks walks;
  {
    NodeFsMemo memo;
    walks = te_walk_dirs(root, {"/usr/local/cuda"});
  }
  std::filesystem::remove_all(root);
  ASSERT_EQ(walks.count("/usr/local/cuda"), 1u);
  EXPECT_NE(walks["/usr/local/cuda"].cap.find("more than 200000 entries (limit 200000, the walk-entries cap)"), std::string::npos)
      << walks["/usr/local/cuda"].cap;
}
