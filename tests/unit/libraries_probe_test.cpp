#include "probe/library_version.hpp"
#include "probe/node_probes.hpp"
#include "support/node_fixture.hpp"
#include "support/probe_helpers.hpp"
#include "util/parallel.hpp"

#include <fstream>
#include <gtest/gtest.h>

using namespace probe;
using test_support::NodeFixture;

using test_support::k_a100_site;
using test_support::k_h100_site;
using test_support::probe_all;
using test_support::str;

namespace {

// The index of the copy at path, or -1.
int copy_index(const model::Facts& f, const std::string& lib, const std::string& path) {
  for (std::size_t i = 0, n = f.count(lib + ".copies"); i < n; ++i) {
    if (str(f, lib + ".copies[" + std::to_string(i) + "].path") == path) return static_cast<int>(i);
  }
  return -1;
}

std::string copy(const model::Facts& f, const std::string& lib, const std::string& path, const std::string& field) {
  int i = copy_index(f, lib, path);
  return i < 0 ? "<no copy " + path + ">" : str(f, lib + ".copies[" + std::to_string(i) + "]." + field);
}

} // namespace

// GPU-NODE.md: torch loads the wheel's cuDNN 9.19 although the system has 9.14.
TEST(LibrariesProbe, ReferenceNodeTorchLoadsTheWheelCudnn) {
  NodeFixture node("h100-node");
  model::Facts f = probe_all(node.host());
  EXPECT_EQ(str(f, "probe.libraries.status"), "ok");
  EXPECT_EQ(f.get_int("cudnn.copy_count"), 2);
  std::string wheel = k_h100_site + "/nvidia/cudnn/lib/libcudnn.so.9";
  std::string system = "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0";
  EXPECT_EQ(copy(f, "cudnn", wheel, "version"), "9.19.0.56");
  EXPECT_EQ(copy(f, "cudnn", wheel, "version_source"), "dist_info");
  EXPECT_EQ(copy(f, "cudnn", wheel, "source"), "site_packages");
  EXPECT_EQ(copy(f, "cudnn", system, "version"), "9.14.0");
  EXPECT_EQ(copy(f, "cudnn", system, "version_source"), "file_name");
  EXPECT_EQ(copy(f, "cudnn", system, "source"), "system");
  EXPECT_EQ(f.get_bool("cudnn.copies_disagree"), true);
  EXPECT_EQ(f.get_int("cudnn.distinct_versions"), 2);
  EXPECT_EQ(str(f, "torch.cudnn.path"), wheel);
  EXPECT_EQ(str(f, "torch.cudnn.version"), "9.19.0.56");
  EXPECT_EQ(str(f, "torch.cudnn.reason"), "RUNPATH $ORIGIN/../../nvidia/cudnn/lib of libtorch_cuda.so (NEEDED libcudnn.so.9 of libtorch_cuda.so)");
  EXPECT_EQ(str(f, "cudnn.version"), "9.19.0.56");
  EXPECT_EQ(str(f, "cudnn.path"), wheel);
  EXPECT_EQ(str(f, "cudnn.loaded_by"), "torch");
  EXPECT_FALSE(f.has("te.cudnn.path"));

  EXPECT_EQ(str(f, "torch.nccl.version"), "2.28.9");
  EXPECT_EQ(copy(f, "nccl", "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3", "version"), "2.28.3");
  EXPECT_EQ(f.get_int("nccl.copy_count"), 2);

  EXPECT_EQ(str(f, "torch.nvrtc.path"), k_h100_site + "/nvidia/cu13/lib/libnvrtc.so.13");
  EXPECT_NE(str(f, "torch.nvrtc.reason").find("of libcaffe2_nvrtc.so"), std::string::npos);
  std::string toolkit_nvrtc = "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libnvrtc.so.13.0.88";
  EXPECT_EQ(copy(f, "nvrtc", toolkit_nvrtc, "version"), "13.0.88");
  EXPECT_EQ(copy(f, "nvrtc", toolkit_nvrtc, "source"), "cuda_home");
  EXPECT_EQ(f.get_bool("nvrtc.copies_disagree"), false);
  EXPECT_EQ(str(f, "torch.cudart.version"), "13.0.96");

  // Driver: LD_LIBRARY_PATH names /usr/local/nvidia/lib64 first; the compat copy is older and unused.
  EXPECT_EQ(f.get_int("libcuda.copy_count"), 3);
  EXPECT_EQ(str(f, "libcuda.path"), "/usr/local/nvidia/lib64/libcuda.so.580.159.04");
  EXPECT_EQ(str(f, "libcuda.version"), "580.159.04");
  EXPECT_EQ(str(f, "cuda.compat.libcuda_version"), "580.95.05");
  EXPECT_EQ(f.get_bool("cuda.compat.in_use"), false);
  // Everything above round-trips through the catalog.
  auto back = model::Facts::from_json(f.to_json(), "probe");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->to_json(), f.to_json());
}

// TE 2.11 installed into the reference node's venv: its own search takes the system 9.14
// (dlopen("libcudnn.so")), while torch, imported first, has 9.19 mapped under the same SONAME.
TEST(LibrariesProbe, TeOnTheReferenceNodeAndTheImportOrderSubtlety) {
  NodeFixture node("h100-node");
  node.write(k_h100_site + "/transformer_engine-2.11.0.dist-info/METADATA", "Name: transformer_engine\nVersion: 2.11.0\n");
  node.write(k_h100_site + "/transformer_engine_cu13-2.11.0.dist-info/METADATA", "Name: transformer-engine-cu13\nVersion: 2.11.0\n");
  node.write(k_h100_site + "/transformer_engine/__init__.py", "");
  node.install(k_h100_site + "/transformer_engine/wheel_lib/libtransformer_engine.so", "te_core_cu13");
  model::Facts f = probe_all(node.host());
  EXPECT_EQ(f.get_int("te.cuda_major"), 13);
  EXPECT_EQ(str(f, "te.cudnn.path"), "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0");
  EXPECT_EQ(str(f, "te.cudnn.version"), "9.14.0");
  std::string reason = str(f, "te.cudnn.reason");
  EXPECT_NE(reason.find("v2.11 transformer_engine/common/__init__.py"), std::string::npos) << reason;
  EXPECT_NE(reason.find("dlopen(\"libcudnn.so\")"), std::string::npos) << reason;
  EXPECT_NE(reason.find("torch loads another copy under the same SONAME libcudnn.so.9"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("glibc hands that copy"), std::string::npos) << reason;
  EXPECT_EQ(str(f, "cudnn.loaded_by"), "transformer_engine");
  EXPECT_EQ(str(f, "cudnn.version"), "9.14.0");
  EXPECT_EQ(str(f, "torch.cudnn.version"), "9.19.0.56");
  // cudart: a system NVRTC exists, so TE loads no wheel cudart; its NEEDED goes through ld.so.cache.
  EXPECT_EQ(str(f, "te.cudart.path"), "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.96");
  EXPECT_NE(str(f, "te.cudart.reason").find("NEEDED libcudart.so.13 of libtransformer_engine.so"), std::string::npos);
  // NCCL: TE links none; the process has torch's.
  EXPECT_EQ(str(f, "te.nccl.path"), str(f, "torch.nccl.path"));
  EXPECT_NE(str(f, "te.nccl.reason").find("has no NEEDED libnccl.so*"), std::string::npos);
}

// The reference node as issue 25 met it: TE 2.15 built from source and installed with
// `pip install --no-deps --target /opt/te`, /opt/te on PYTHONPATH (overlay h100-node-te), no
// pydantic. /proc/self/maps there: torch first maps both cuDNN copies (torch on the venv's 9.19,
// TE on the system 9.14); TE first makes torch's cuDNN check fail on 9.14; NVRTC two copies.
TEST(LibrariesProbe, TeInATargetPrefixOnThePythonPath) {
  NodeFixture node("h100-node", "h100-node-te");
  model::Facts f = probe_all(node.host());
  std::string wheel = k_h100_site + "/nvidia/cudnn/lib/libcudnn.so.9";
  std::string system = "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0";
  // Found through PYTHONPATH; the interpreter's purelib stays the venv's (TE's wheel search).
  EXPECT_EQ(str(f, "python.executable"), "/opt/torch/.venv/bin/python3");
  EXPECT_EQ(str(f, "python.site_packages"), k_h100_site);
  EXPECT_EQ(str(f, "te.version"), "2.15.0");
  EXPECT_EQ(str(f, "te.distribution"), "transformer_engine");
  EXPECT_EQ(str(f, "te.path"), "/opt/te/transformer_engine");
  EXPECT_EQ(str(f, "te.core_library.path"), "/opt/te/transformer_engine/libtransformer_engine.so");
  EXPECT_EQ(f.get_bool("te.torch_extension.present"), true);
  EXPECT_EQ(str(f, "te.torch_extension.path"), "/opt/te/transformer_engine_torch.cpython-312-x86_64-linux-gnu.so");
  // Requires-Dist: only pydantic is unmet (the extra's pytest and numpy are not required).
  EXPECT_EQ(f.get_int("te.requirements.missing_count"), 1);
  EXPECT_EQ(str(f, "te.requirements.missing[0].requirement"), "pydantic");
  EXPECT_EQ(str(f, "te.requirements.missing[0].required_by"), "transformer_engine");

  EXPECT_EQ(str(f, "te.cudnn.path"), system);
  EXPECT_EQ(str(f, "te.cudnn.version"), "9.14.0");
  EXPECT_NE(str(f, "te.cudnn.reason").find("v2.11 transformer_engine/common/__init__.py"), std::string::npos);
  EXPECT_EQ(str(f, "torch.cudnn.path"), wheel);
  // torch first: both copies, TE on its own.
  EXPECT_EQ(str(f, "te.cudnn.torch_first.path"), system);
  EXPECT_EQ(str(f, "te.cudnn.torch_first.version"), "9.14.0");
  EXPECT_EQ(f.get_int("cudnn.mapped_copies.torch_first"), 2);
  // TE first: torch binds to TE's 9.14 and its check (compiled against 9.19) fails.
  EXPECT_EQ(str(f, "te.cudnn.te_first.path"), system);
  EXPECT_EQ(str(f, "torch.cudnn.te_first.path"), system);
  EXPECT_EQ(str(f, "torch.cudnn.te_first.version"), "9.14.0");
  EXPECT_EQ(f.get_bool("torch.cudnn.te_first.fails"), true);
  EXPECT_EQ(f.get_int("cudnn.mapped_copies.te_first"), 1);
  // NVRTC: TE takes the toolkit's, torch the wheel's: two copies, one version.
  EXPECT_EQ(str(f, "te.nvrtc.path"), "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libnvrtc.so.13.0.88");
  EXPECT_EQ(str(f, "torch.nvrtc.path"), k_h100_site + "/nvidia/cu13/lib/libnvrtc.so.13");
  EXPECT_EQ(f.get_int("nvrtc.mapped_copies.torch_first"), 2);
  EXPECT_EQ(str(f, "te.nvrtc.version"), str(f, "torch.nvrtc.version"));
  auto back = model::Facts::from_json(f.to_json(), "probe");
  ASSERT_TRUE(back.ok()) << back.error().message;
}

// CUDNN_PATH=<venv>/nvidia/cudnn: TE's first step finds the wheel, so one copy in either order.
TEST(LibrariesProbe, CudnnPathToTheWheelMakesOneCopyInEitherOrder) {
  NodeFixture node("h100-node", "h100-node-te");
  Host host = node.host();
  host.env["CUDNN_PATH"] = k_h100_site + "/nvidia/cudnn";
  model::Facts f = probe_all(host);
  std::string wheel = k_h100_site + "/nvidia/cudnn/lib/libcudnn.so.9";
  EXPECT_EQ(str(f, "te.cudnn.path"), wheel);
  EXPECT_NE(str(f, "te.cudnn.reason").find("CUDNN_PATH="), std::string::npos) << str(f, "te.cudnn.reason");
  EXPECT_EQ(str(f, "te.cudnn.torch_first.path"), wheel);
  EXPECT_EQ(str(f, "torch.cudnn.te_first.path"), wheel);
  EXPECT_EQ(f.get_int("cudnn.mapped_copies.torch_first"), 1);
  EXPECT_EQ(f.get_int("cudnn.mapped_copies.te_first"), 1);
  EXPECT_EQ(f.get_bool("torch.cudnn.te_first.fails"), false);
}

// Without PYTHONPATH the --target prefix is invisible: no TE.
TEST(LibrariesProbe, TargetPrefixOffThePythonPathIsNotSeen) {
  NodeFixture node("h100-node", "h100-node-te");
  Host host = node.host();
  host.env.erase("PYTHONPATH");
  model::Facts f = probe_all(host);
  EXPECT_FALSE(f.has("te.version"));
  EXPECT_FALSE(f.has("te.cudnn.torch_first.path"));
}

// Incident #2's node: TE 2.3 takes the cuDNN 9.1 wheel; torch 2.3 (cuDNN 8 era) misses it in
// its RUNPATH and gets the system 8.9.7 from ld.so.cache.
TEST(LibrariesProbe, A100NodeTeAndTorchDisagree) {
  NodeFixture node("a100-node");
  model::Facts f = probe_all(node.host());
  std::string wheel = k_a100_site + "/nvidia/cudnn/lib/libcudnn.so.9";
  EXPECT_EQ(str(f, "te.cudnn.path"), wheel);
  EXPECT_EQ(str(f, "te.cudnn.version"), "9.1.0.70");
  EXPECT_NE(str(f, "te.cudnn.reason").find("pip wheel directory"), std::string::npos);
  EXPECT_EQ(str(f, "torch.cudnn.path"), "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7");
  EXPECT_EQ(str(f, "torch.cudnn.version"), "8.9.7");
  EXPECT_NE(str(f, "torch.cudnn.reason").find("ld.so.cache entry libcudnn.so.8"), std::string::npos);
  EXPECT_EQ(str(f, "cudnn.version"), "9.1.0.70");
  EXPECT_EQ(str(f, "cudnn.loaded_by"), "transformer_engine");
  EXPECT_EQ(f.get_int("cudnn.copy_count"), 2); // the i386 cache entry is not a copy for this loader
  EXPECT_EQ(str(f, "te.nvrtc.version"), "12.4.127");
  // LD_LIBRARY_PATH comes before RUNPATH: torch's libcudart.so.12 is the toolkit's, not the wheel's.
  EXPECT_EQ(str(f, "torch.cudart.version"), "12.4.127");
  EXPECT_EQ(str(f, "torch.cudart.reason"), "LD_LIBRARY_PATH entry /usr/local/cuda/lib64 (NEEDED libcudart.so.12 of libtorch_cuda.so) [opened as /usr/local/cuda/lib64/libcudart.so.12]");
  EXPECT_EQ(str(f, "te.cudart.version"), "12.4.127");
  EXPECT_EQ(str(f, "torch.nccl.version"), "2.20.5");
}

TEST(LibrariesProbe, A100NodeWithoutLdLibraryPath) {
  NodeFixture node("a100-node");
  Host host = node.host();
  host.env.erase("LD_LIBRARY_PATH");
  model::Facts f = probe_all(host);
  EXPECT_EQ(str(f, "torch.cudart.version"), "12.1.105");
  EXPECT_NE(str(f, "torch.cudart.reason").find("RUNPATH $ORIGIN/../../nvidia/cuda_runtime/lib"), std::string::npos);
  // TE's own libcudart.so.12 NEEDED would go to ld.so.cache, but torch's copy is already mapped.
  EXPECT_EQ(str(f, "te.cudart.version"), "12.4.127");
  std::string reason = str(f, "te.cudart.reason");
  EXPECT_NE(reason.find("ld.so.cache entry libcudart.so.12"), std::string::npos) << reason;
  EXPECT_NE(reason.find("already mapped under SONAME libcudart.so.12"), std::string::npos) << reason;
}

TEST(LibrariesProbe, NodeWithoutNvidiaLibraries) {
  NodeFixture node("no-driver-node");
  model::Facts f = probe_all(node.host());
  EXPECT_EQ(str(f, "probe.libraries.status"), "not_installed");
  EXPECT_EQ(f.get_int("cudnn.copy_count"), 0);
  EXPECT_EQ(f.get_int("libcuda.copy_count"), 0);
  EXPECT_FALSE(f.has("cudnn.version"));
  EXPECT_FALSE(f.has("libcuda.path"));
}

TEST(LibrariesProbe, BrokenNodeRecordsDamageAndKeepsGoing) {
  NodeFixture node("broken-node");
  {
    std::ifstream in(test_support::fake_lib("nvrtc12"), std::ios::binary);
    std::string head(300, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    node.write("/usr/lib/x86_64-linux-gnu/libnvrtc.so.12.0.0", head);
  }
  model::Facts f = probe_all(node.host());
  std::string reason = str(f, "probe.libraries.reason");
  EXPECT_NE(reason.find("broken symlink /usr/lib/x86_64-linux-gnu/libcudnn.so.9"), std::string::npos) << reason;
  EXPECT_NE(reason.find("symlink loop"), std::string::npos) << reason;
  EXPECT_NE(reason.find("libnvrtc.so.12.0.0"), std::string::npos) << reason;
  EXPECT_EQ(f.get_int("nvrtc.copy_count"), 0);
  EXPECT_EQ(f.get_int("nccl.copy_count"), 0);
  EXPECT_EQ(str(f, "cudart.copies[0].version"), "12.2.140");
  // /opt/libs/libcudnn.so.9 has no versioned name, wheel, header or string: it is loaded.
  EXPECT_EQ(f.get_int("cudnn.copy_count"), 1);
  EXPECT_EQ(str(f, "cudnn.copies[0].version"), "9.10.0");
  EXPECT_EQ(str(f, "cudnn.copies[0].version_source"), "loaded");
  EXPECT_EQ(str(f, "cudnn.copies[0].source"), "ld_library_path");
  EXPECT_EQ(str(f, "cudnn.loaded_by"), "loader");
  EXPECT_EQ(str(f, "cudnn.version"), "9.10.0");
}

TEST(LibrariesProbe, NoVendorCallsMeansNoLoading) {
  NodeFixture node("broken-node");
  Host host = node.host();
  host.allow_vendor_calls = false;
  model::Facts f = probe_all(host);
  EXPECT_EQ(f.get_int("cudnn.copy_count"), 1);
  EXPECT_FALSE(f.has("cudnn.copies[0].version"));
  EXPECT_NE(str(f, "probe.libraries.reason").find("vendor calls disabled"), std::string::npos);
}

// The CI machine: CUDA 13 under /usr/local/cuda with cuDNN 9.19 (libcudnn.so.9 + cudnn_version.h),
// NCCL 2.28.9 and NVRTC 13.0.88, no GPU, no driver.
TEST(LibrariesProbe, RealCudaToolkitOnThisMachine) {
  if (!std::filesystem::exists("/usr/local/cuda/lib64/libcudnn.so.9") && !std::filesystem::exists("/usr/local/cuda/lib/libcudnn.so.9")) {
    GTEST_SKIP() << "no cuDNN under /usr/local/cuda";
  }
  Host host;
  host.root = "/";
  host.env["PATH"] = "/usr/bin:/bin";
  model::Facts f;
  run_libraries_probe(host, f);
  auto real = std::filesystem::canonical("/usr/local/cuda/lib64/libcudnn.so.9").string();
  EXPECT_EQ(copy(f, "cudnn", real, "version"), "9.19.0");
  EXPECT_EQ(copy(f, "cudnn", real, "version_source"), "header");
  EXPECT_EQ(copy(f, "cudnn", real, "source"), "cuda_home");
  auto nccl = std::filesystem::canonical("/usr/local/cuda/lib64/libnccl.so.2").string();
  EXPECT_EQ(copy(f, "nccl", nccl, "version").substr(0, 6), "2.28.9");
  auto nvrtc = std::filesystem::canonical("/usr/local/cuda/lib64/libnvrtc.so.13").string();
  EXPECT_EQ(copy(f, "nvrtc", nvrtc, "version"), "13.0.88");
  EXPECT_EQ(copy(f, "nvrtc", nvrtc, "version_source"), "elf_string");
  // The header's answer is the library's own: ask the real file in a child.
  auto loaded = version_from_loading(*find_library_spec("cudnn"), real, std::chrono::milliseconds(20000));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->version.to_string(), "9.19.0");
}

// Started ahead, the libraries probe makes its choices (torch's, TE's, the loader's) on its own
// thread once it is told the python probe's facts (known), and finish() writes what those
// choices set and erased: the same facts as the probe run in turn, told or not (--only without
// python), and a started probe dropped while its thread waits for them ends without a finish.
TEST(LibrariesProbe, StartedAheadChoosesOnItsThreadOnceThePythonFactsAreKnown) {
  NodeFixture node("h100-node", std::vector<std::string>{"h100-node-te"});
  Host host = node.host();
  if (util::available_cpus() <= 1) GTEST_SKIP() << "one CPU: the probe is not started ahead";
  model::Facts python;
  run_python_probe(host, python);
  ASSERT_TRUE(python.has("te.version"));
  python.set("cudnn.copies[7].path", std::string("/stale")); // erased by the probe's choices

  model::Facts in_turn = python;
  run_libraries_probe(host, in_turn);
  ASSERT_GT(in_turn.count("cudnn.copies"), 0u);
  ASSERT_TRUE(in_turn.has("te.cudnn.path"));
  EXPECT_FALSE(in_turn.has("cudnn.copies[7].path"));

  {
    NodeFsMemo memo;
    auto started = start_libraries_probe(host);
    ASSERT_NE(started, nullptr);
    model::Facts told = python;
    started->known("python", told);
    told.set("driver.version", model::Version{580, 159, 4}); // a probe in between
    started->finish(told);
    model::Facts expected = in_turn;
    expected.set("driver.version", model::Version{580, 159, 4});
    EXPECT_EQ(told.to_json(-1), expected.to_json(-1));
  }
  {
    NodeFsMemo memo;
    auto started = start_libraries_probe(host);
    model::Facts untold = python;
    started->finish(untold);
    EXPECT_EQ(untold.to_json(-1), in_turn.to_json(-1));
  }
  {
    NodeFsMemo memo;
    auto started = start_libraries_probe(host); // dropped: its thread must not wait forever
  }
}
