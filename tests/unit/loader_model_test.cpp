#include "probe/loader_model.hpp"
#include "support/ld_cache_writer.hpp"
#include "support/node_fixture.hpp"

#include <gtest/gtest.h>

using namespace probe;
using test_support::NodeFixture;

namespace {

// A node with libcudnn.so.9 in five places: RPATH/RUNPATH dirs of two consumers, an
// LD_LIBRARY_PATH dir, the ld.so.cache and a default directory.
class LoaderModel : public ::testing::Test {
protected:
  LoaderModel() : node("no-driver-node") {
    node.install("/opt/app/libconsumer_runpath.so", "consumer_runpath");
    node.install("/opt/app/libconsumer_rpath.so", "consumer_rpath");
    node.install("/opt/app/runpath_dir/libcudnn.so.9", "cudnn9_14");
    node.install("/opt/app/rpath_dir/libcudnn.so.9", "cudnn9_14");
    node.install("/ld/libcudnn.so.9", "cudnn9_19");
    node.install("/opt/cached/libcudnn.so.9", "cudnn9_1");
    node.install("/usr/lib/x86_64-linux-gnu/libcudnn.so.9", "cudnn9_1");
    cache = *parse_ld_cache(test_support::build_ld_cache({{"libcudnn.so.9", "/opt/cached/libcudnn.so.9"}}), "t");
  }

  Resolution resolve(const std::string& consumer, bool ld_library_path) {
    Host host = node.host();
    if (ld_library_path) host.env["LD_LIBRARY_PATH"] = "/nonexistent::/ld";
    view = make_loader_view(host, &cache);
    auto dyn = read_elf_dynamic(node.path(consumer));
    EXPECT_TRUE(dyn.ok());
    dynamic = *dyn;
    auto r = resolve_needed(view, "libcudnn.so.9", Requester{consumer, &dynamic});
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : Resolution{};
  }

  NodeFixture node;
  LdCache cache;
  LoaderView view;
  ElfDynamic dynamic;
};

} // namespace

TEST_F(LoaderModel, RpathBeatsLdLibraryPath) {
  auto r = resolve("/opt/app/libconsumer_rpath.so", true);
  EXPECT_EQ(r.path, "/opt/app/rpath_dir/libcudnn.so.9");
  EXPECT_EQ(r.step, "rpath");
  EXPECT_EQ(r.reason, "RPATH $ORIGIN/rpath_dir of libconsumer_rpath.so");
}

TEST_F(LoaderModel, LdLibraryPathBeatsRunpath) {
  auto r = resolve("/opt/app/libconsumer_runpath.so", true);
  EXPECT_EQ(r.path, "/ld/libcudnn.so.9");
  EXPECT_EQ(r.reason, "LD_LIBRARY_PATH entry /ld");
}

TEST_F(LoaderModel, RunpathBeatsTheCache) {
  auto r = resolve("/opt/app/libconsumer_runpath.so", false);
  EXPECT_EQ(r.path, "/opt/app/runpath_dir/libcudnn.so.9");
  EXPECT_EQ(r.reason, "RUNPATH $ORIGIN/runpath_dir of libconsumer_runpath.so");
}

TEST_F(LoaderModel, CacheThenDefaultDirectories) {
  std::filesystem::remove(node.path("/opt/app/runpath_dir/libcudnn.so.9"));
  auto r = resolve("/opt/app/libconsumer_runpath.so", false);
  EXPECT_EQ(r.path, "/opt/cached/libcudnn.so.9");
  EXPECT_EQ(r.step, "ld_cache");
  std::filesystem::remove(node.path("/opt/cached/libcudnn.so.9"));
  r = resolve("/opt/app/libconsumer_runpath.so", false);
  EXPECT_EQ(r.path, "/usr/lib/x86_64-linux-gnu/libcudnn.so.9");
  EXPECT_EQ(r.step, "default_dirs");
}

TEST_F(LoaderModel, SkipsFilesTheLoaderWouldRejectAndReportsMisses) {
  node.write("/ld/libcudnn.so.9", "not an ELF file");
  auto r = resolve("/opt/app/libconsumer_runpath.so", true);
  EXPECT_EQ(r.path, "/opt/app/runpath_dir/libcudnn.so.9");
  auto missing = resolve_needed(view, "libnccl.so.2", Requester{"/opt/app/libconsumer_runpath.so", &dynamic});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, util::ErrorKind::not_found);
  EXPECT_NE(missing.error().message.find("libnccl.so.2 not found for libconsumer_runpath.so"), std::string::npos);
}
