#include "probe/library_version.hpp"
#include "support/node_fixture.hpp"
#include "util/dl.hpp"
#include "support/probe_helpers.hpp"

#include <gtest/gtest.h>

using namespace probe;
using test_support::fake_lib;

using test_support::spec;

namespace {
std::chrono::milliseconds k_timeout{10000};
} // namespace

TEST(LibraryVersion, RecognisesLibraryFileNames) {
  EXPECT_TRUE(is_library_file(spec("cudnn"), "libcudnn.so"));
  EXPECT_TRUE(is_library_file(spec("cudnn"), "libcudnn.so.9"));
  EXPECT_TRUE(is_library_file(spec("cudnn"), "libcudnn.so.9.14.0"));
  EXPECT_FALSE(is_library_file(spec("cudnn"), "libcudnn_adv.so.9"));
  EXPECT_FALSE(is_library_file(spec("cudnn"), "libcudnn.so.9.bak"));
  EXPECT_FALSE(is_library_file(spec("nvrtc"), "libnvrtc-builtins.so.13.0"));
  EXPECT_FALSE(is_library_file(spec("nvrtc"), "libnvrtc.alt.so.13"));
  EXPECT_TRUE(is_library_file(spec("libcuda"), "libcuda.so.580.159.04"));
  EXPECT_FALSE(is_library_file(spec("libcuda"), "libcudart.so.13"));
}

TEST(LibraryVersion, FromFileNameNeedsMoreThanTheMajor) {
  auto v = version_from_file_name(spec("cudnn"), "libcudnn.so.9.14.0");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->version, (model::Version{9, 14, 0}));
  EXPECT_EQ(v->source, "file_name");
  EXPECT_FALSE(version_from_file_name(spec("cudnn"), "libcudnn.so.9"));
  EXPECT_EQ(version_from_file_name(spec("libcuda"), "libcuda.so.580.95.05")->version.text(), "580.95.05");
  EXPECT_EQ(version_from_file_name(spec("nccl"), "libnccl.so.2.28.3")->version, (model::Version{2, 28, 3}));
}

TEST(LibraryVersion, FromNeighbouringHeaderWhenTheMajorMatches) {
  test_support::NodeFixture node("h100-node");
  auto v = version_from_header(node.root(), spec("cudnn"), "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0", 9);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->version, (model::Version{9, 14, 0}));
  EXPECT_EQ(v->detail, "/usr/include/cudnn_version.h");
  EXPECT_FALSE(version_from_header(node.root(), spec("cudnn"), "/usr/lib/x86_64-linux-gnu/libcudnn.so.8", 8));
  auto cudart = version_from_header(node.root(), spec("cudart"), "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13", 13);
  ASSERT_TRUE(cudart);
  EXPECT_EQ(cudart->version, (model::Version{13, 0}));
}

TEST(LibraryVersion, FromEmbeddedStrings) {
  auto nccl = version_from_embedded_string(spec("nccl"), fake_lib("nccl2"));
  ASSERT_TRUE(nccl);
  EXPECT_EQ(nccl->version, (model::Version{2, 28, 9}));
  auto nvrtc = version_from_embedded_string(spec("nvrtc"), fake_lib("nvrtc13"));
  ASSERT_TRUE(nvrtc);
  EXPECT_EQ(nvrtc->version, (model::Version{13, 0, 88}));
  EXPECT_EQ(nvrtc->source, "elf_string");
  EXPECT_FALSE(version_from_embedded_string(spec("cudnn"), fake_lib("cudnn9_14")));
  EXPECT_FALSE(version_from_embedded_string(spec("nccl"), fake_lib("cudnn9_14")));
}

// The trap of GPU-NODE.md: two files with SONAME libcudnn.so.9, one already loaded in this
// process. Each must still answer with its own version.
TEST(LibraryVersion, LoadingAsksEachCopySeparately) {
  auto shared = util::DlLibrary::open(fake_lib("cudnn9_14").string());
  ASSERT_TRUE(shared.ok()) << shared.error().message;
  auto v14 = version_from_loading(spec("cudnn"), fake_lib("cudnn9_14"), k_timeout);
  auto v19 = version_from_loading(spec("cudnn"), fake_lib("cudnn9_19"), k_timeout);
  ASSERT_TRUE(v14.ok()) << v14.error().message;
  ASSERT_TRUE(v19.ok()) << v19.error().message;
  EXPECT_EQ(v14->version, (model::Version{9, 14, 0}));
  EXPECT_EQ(v19->version, (model::Version{9, 19, 0}));
  EXPECT_EQ(v19->source, "loaded");
  EXPECT_EQ(version_from_loading(spec("nccl"), fake_lib("nccl2"), k_timeout)->version, (model::Version{2, 28, 9}));
  EXPECT_EQ(version_from_loading(spec("nvrtc"), fake_lib("nvrtc13"), k_timeout)->version, (model::Version{13, 0}));
  EXPECT_EQ(version_from_loading(spec("cudart"), fake_lib("cudart12"), k_timeout)->version, (model::Version{12, 4}));
  EXPECT_EQ(version_from_loading(spec("cudnn"), fake_lib("cudnn8"), k_timeout)->version, (model::Version{8, 9, 7}));
}

TEST(LibraryVersion, LoadingFailuresAreKinds) {
  auto missing_symbol = version_from_loading(spec("cudnn"), fake_lib("libcuda"), k_timeout);
  ASSERT_FALSE(missing_symbol.ok());
  EXPECT_EQ(missing_symbol.error().kind, util::ErrorKind::symbol_missing);
  auto absent = version_from_loading(spec("cudnn"), "/nonexistent/libcudnn.so.9", k_timeout);
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.error().kind, util::ErrorKind::not_installed);
  EXPECT_FALSE(version_from_loading(spec("libcuda"), fake_lib("libcuda"), k_timeout).ok());
}
