// cuBLAS and cuBLASLt in the libraries probe: every copy (the torch wheel's nvidia-cublas under
// nvidia/cu13/lib, the toolkit's), each version without loading it (wheel METADATA, file name,
// cublas_api.h) or by its own version call, and the copy torch and TE load.
#include "probe/library_version.hpp"
#include "probe/node_probes.hpp"
#include "support/node_fixture.hpp"
#include "support/probe_helpers.hpp"

#include <gtest/gtest.h>

using namespace probe;
using test_support::NodeFixture;

using test_support::k_h100_site;
using test_support::probe_all;
using test_support::str;

namespace {

std::string copy_field(const model::Facts& f, const std::string& lib, const std::string& path, const std::string& field) {
  for (std::size_t i = 0, n = f.count(lib + ".copies"); i < n; ++i) {
    std::string base = lib + ".copies[" + std::to_string(i) + "]";
    if (str(f, base + ".path") == path) return str(f, base + "." + field);
  }
  return "<no copy " + path + ">";
}

const std::string k_wheel_lt = k_h100_site + "/nvidia/cu13/lib/libcublasLt.so.13";
const std::string k_toolkit = "/usr/local/cuda-13.0/targets/x86_64-linux/lib";
const std::string k_toolkit_lt = k_toolkit + "/libcublasLt.so.13.1.0.3";

} // namespace

// torch 2.11+cu130 maps the nvidia-cublas wheel (13.0.0.19) through its RUNPATH although the
// toolkit's 13.1 is in ld.so.cache.
TEST(CublasProbe, TorchLoadsTheWheelNextToTheToolkitCopy) {
  NodeFixture node("h100-node");
  model::Facts f = probe_all(node.host());
  EXPECT_EQ(f.get_int("cublaslt.copy_count"), 2);
  EXPECT_EQ(copy_field(f, "cublaslt", k_wheel_lt, "version"), "13.0.0.19");
  EXPECT_EQ(copy_field(f, "cublaslt", k_wheel_lt, "version_source"), "dist_info");
  EXPECT_EQ(copy_field(f, "cublaslt", k_wheel_lt, "source"), "site_packages");
  EXPECT_EQ(copy_field(f, "cublaslt", k_toolkit_lt, "version"), "13.1.0.3");
  EXPECT_EQ(copy_field(f, "cublaslt", k_toolkit_lt, "version_source"), "file_name");
  EXPECT_EQ(f.get_bool("cublaslt.copies_disagree"), true);
  EXPECT_EQ(str(f, "torch.cublaslt.path"), k_wheel_lt);
  EXPECT_EQ(str(f, "torch.cublaslt.version"), "13.0.0.19");
  EXPECT_NE(str(f, "torch.cublaslt.reason").find("RUNPATH $ORIGIN/../../nvidia/cu13/lib of libtorch_cuda.so"), std::string::npos)
      << str(f, "torch.cublaslt.reason");
  EXPECT_EQ(str(f, "cublaslt.version"), "13.0.0.19");
  EXPECT_EQ(str(f, "torch.cublas.path"), k_h100_site + "/nvidia/cu13/lib/libcublas.so.13");
  EXPECT_EQ(str(f, "cublas.version"), "13.0.0.19");
  // Without torch, the loader's own pick for the SONAME: ld.so.cache's toolkit copy.
  std::filesystem::remove_all(node.path(k_h100_site + "/torch-2.11.0+cu130.dist-info"));
  model::Facts bare = probe_all(node.host());
  EXPECT_FALSE(bare.has("torch.cublaslt.path"));
  EXPECT_EQ(str(bare, "cublaslt.path"), k_toolkit_lt);
  EXPECT_EQ(str(bare, "cublaslt.version"), "13.1.0.3");
}

// TE 2.15 from source: with the toolkit's NVRTC found, TE loads no cuBLAS wheel itself
// (v2.11+), so libtransformer_engine.so's NEEDED decides: the toolkit's 13.1 through
// ld.so.cache, and after `import torch` torch's 13.0 under the same SONAME.
TEST(CublasProbe, TeCoreLibraryNeededDecides) {
  NodeFixture node("h100-node", "h100-node-te");
  model::Facts f = probe_all(node.host());
  EXPECT_EQ(str(f, "te.cublaslt.path"), k_toolkit_lt);
  EXPECT_EQ(str(f, "te.cublaslt.version"), "13.1.0.3");
  std::string reason = str(f, "te.cublaslt.reason");
  EXPECT_NE(reason.find("found a system nvrtc and so loads no cublaslt itself"), std::string::npos) << reason;
  EXPECT_NE(reason.find("NEEDED libcublasLt.so.13 of libtransformer_engine.so"), std::string::npos) << reason;
  EXPECT_NE(reason.find("after `import torch` torch's " + k_wheel_lt + " (13.0.0.19)"), std::string::npos) << reason;
  EXPECT_EQ(str(f, "cublaslt.version"), "13.1.0.3"); // TE's copy, as for cuDNN
}

// TE 2.4-2.10 dlopen every lib*.so.*[0-9] of the wheel's nvidia/cublas/lib before their core
// library (v2.4 transformer_engine/common/__init__.py L323).
TEST(CublasProbe, TeWheelStepOfTwoFourToTwoTen) {
  NodeFixture node("h100-node", "h100-node-te");
  node.write("/opt/te/transformer_engine-2.15.0.dist-info/METADATA", "Name: transformer_engine\nVersion: 2.9.0\n");
  node.install(k_h100_site + "/nvidia/cublas/lib/libcublasLt.so.13", "cublaslt13_1");
  node.install(k_h100_site + "/nvidia/cublas/lib/libcublas.so.13", "cublas13_1");
  model::Facts f = probe_all(node.host());
  EXPECT_EQ(str(f, "te.version"), "2.9.0");
  EXPECT_EQ(str(f, "te.cublaslt.path"), k_h100_site + "/nvidia/cublas/lib/libcublasLt.so.13");
  EXPECT_NE(str(f, "te.cublaslt.reason").find("pip wheel directory " + k_h100_site + "/nvidia/cublas/lib"), std::string::npos)
      << str(f, "te.cublaslt.reason");
  // No ELF version source there but the call itself: cublasLtGetVersion in a child.
  EXPECT_EQ(str(f, "te.cublaslt.version"), "13.1.0");
  EXPECT_EQ(copy_field(f, "cublaslt", k_h100_site + "/nvidia/cublas/lib/libcublasLt.so.13", "version_source"), "loaded");
}

TEST(CublasProbe, VersionFromHeaderAndFromTheCalls) {
  NodeFixture node("h100-node");
  const LibrarySpec* lt = find_library_spec("cublaslt");
  const LibrarySpec* blas = find_library_spec("cublas");
  ASSERT_NE(lt, nullptr);
  ASSERT_NE(blas, nullptr);
  EXPECT_TRUE(is_library_file(*lt, "libcublasLt.so.13"));
  EXPECT_FALSE(is_library_file(*blas, "libcublasLt.so.13"));
  EXPECT_TRUE(is_library_file(*blas, "libcublas.so.13.1.0.3"));
  node.write("/usr/local/cuda-13.0/targets/x86_64-linux/include/cublas_api.h",
             "#define CUBLAS_VER_MAJOR 13\n#define CUBLAS_VER_MINOR 1\n#define CUBLAS_VER_PATCH 0\n#define CUBLAS_VER_BUILD 3\n");
  auto v = version_from_header(node.root(), *lt, k_toolkit + "/libcublasLt.so.13", 13);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->version.to_string(), "13.1.0.3");
  EXPECT_EQ(v->source, "header");
  EXPECT_FALSE(version_from_header(node.root(), *lt, k_toolkit + "/libcublasLt.so.13", 12)); // another major
  auto loaded = version_from_loading(*lt, node.path(k_wheel_lt), std::chrono::seconds(10));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->version.to_string(), "13.0.0");
  EXPECT_EQ(loaded->detail, "cublasLtGetVersion");
  // libcublas finds its cuBLASLt through its RUNPATH $ORIGIN, as the real one does.
  auto property = version_from_loading(*blas, node.path(k_toolkit + "/libcublas.so.13"), std::chrono::seconds(10));
  ASSERT_TRUE(property.ok()) << property.error().message;
  EXPECT_EQ(property->version.to_string(), "13.1.0");
  EXPECT_EQ(property->detail, "cublasGetProperty");
}
