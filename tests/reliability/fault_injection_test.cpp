// Injected faults, each through the real nvte-doctor binary: vendor libraries (fake libnvidia-ml
// and libcuda built by the tests, found through LD_LIBRARY_PATH as a real driver would be) that
// segfault, abort or hang in their init or version call; node trees with FIFOs, looping and
// dangling symlinks where /proc and /sys files should be; a file size limit hit while writing the
// report; a malformed rules file. In every case the doctor must finish within its timeout, say
// what went wrong, and leave the previous report intact.
#include "doctor_runner.hpp"
#include "support/build_factors.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sys/stat.h>

namespace fs = std::filesystem;
using nlohmann::json;
using reliability::run_doctor;
using reliability::TempDir;

namespace {

struct VendorFault {
  const char* name;
  const char* soname;   // what the doctor dlopens
  const char* library;  // the fake that answers it
  const char* probe;    // probe.<probe>.status
  const char* status;   // expected status
};

// The fake library behind the soname, alone in a directory that LD_LIBRARY_PATH names.
fs::path install_fake(const TempDir& dir, const VendorFault& fault) {
  fs::path lib = dir / "lib";
  fs::create_directories(lib);
  fs::create_symlink(fault.library, lib / fault.soname);
  return lib;
}

const json* fact(const json& doc, std::initializer_list<const char*> path) {
  const json* node = &doc["facts"];
  for (const char* key : path) {
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
  }
  return node;
}

// The smallest report `fleet` accepts: a healthy node.
std::string healthy_report() {
  return R"({"schema_version": 1, "host": "node-a", "generated_at": "2026-11-22T04:00:00Z", "summary": {"status": "OK"}})";
}

class VendorLibraryFault : public testing::TestWithParam<VendorFault> {};

TEST_P(VendorLibraryFault, DoctorReportsItAndFinishesInTime) {
  const VendorFault& fault = GetParam();
  TempDir dir(fault.name);
  fs::path lib = install_fake(dir, fault);
  // By default the vendor probes are skipped here (no driver on this machine: nothing for them
  // to add), so the faulty library is never even loaded; --deep calls it.
  auto quick = run_doctor({"probe", "--format", "json"}, {{"LD_LIBRARY_PATH", lib.string()}}, std::chrono::seconds(60));
  ASSERT_FALSE(quick.timed_out) << reliability::context(quick);
  json quick_doc = json::parse(quick.out, nullptr, false);
  ASSERT_FALSE(quick_doc.is_discarded()) << reliability::context(quick);
  const json* skipped = fact(quick_doc, {"probe", fault.probe, "status"});
  ASSERT_NE(skipped, nullptr) << reliability::context(quick);
  EXPECT_EQ(*skipped, "skipped") << reliability::context(quick);

  auto run = run_doctor({"probe", "--deep", "--format", "json"}, {{"LD_LIBRARY_PATH", lib.string()}}, std::chrono::seconds(60));
  ASSERT_FALSE(run.timed_out) << reliability::context(run);
  // The vendor call runs in a child bounded by 5 s; everything else is fast.
  EXPECT_LT(run.seconds, 30.0) << reliability::context(run);
  EXPECT_EQ(run.exit_code, 0) << reliability::context(run);
  json doc = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << reliability::context(run);
  const json* status = fact(doc, {"probe", fault.probe, "status"});
  ASSERT_NE(status, nullptr) << reliability::context(run);
  EXPECT_EQ(*status, fault.status) << reliability::context(run);
  const json* reason = fact(doc, {"probe", fault.probe, "reason"});
  ASSERT_NE(reason, nullptr);
  EXPECT_FALSE(reason->get<std::string>().empty());

  // check goes on to evaluate the rules and prints a report with an exit code of the convention.
  auto check = run_doctor({"check", "--deep", "--no-color"}, {{"LD_LIBRARY_PATH", lib.string()}}, std::chrono::seconds(60));
  ASSERT_FALSE(check.timed_out) << reliability::context(check);
  EXPECT_GE(check.exit_code, 0) << reliability::context(check);
  EXPECT_LE(check.exit_code, 2) << reliability::context(check);
}

INSTANTIATE_TEST_SUITE_P(
    Faults, VendorLibraryFault,
    testing::Values(VendorFault{"nvml_segfault", "libnvidia-ml.so.1", FAKE_NVML_CRASH, "nvml", "crashed"},
                    VendorFault{"nvml_abort", "libnvidia-ml.so.1", FAKE_NVML_ABORT, "nvml", "crashed"},
                    VendorFault{"nvml_hang", "libnvidia-ml.so.1", FAKE_NVML_HANG, "nvml", "timeout"},
                    VendorFault{"cuda_segfault", "libcuda.so.1", FAKE_CUDA_CRASH, "cuda_driver", "crashed"},
                    VendorFault{"cuda_hang", "libcuda.so.1", FAKE_CUDA_HANG, "cuda_driver", "timeout"}),
    [](const testing::TestParamInfo<VendorFault>& param) { return std::string(param.param.name); });

// A node tree where the files the probes read are FIFOs (open() would wait for a writer),
// looping or dangling symlinks, and directories.
TEST(NodeTreeFaults, FifosAndLoopingSymlinksDoNotHangOrCrash) {
  TempDir dir("node");
  fs::path node = dir / "node";
  fs::path nvidia = node / "proc/driver/nvidia";
  fs::create_directories(nvidia / "gpus");
  ASSERT_EQ(::mkfifo((nvidia / "version").c_str(), 0644), 0);
  fs::create_symlink("loop-b", nvidia / "gpus" / "loop-a");
  fs::create_symlink("loop-a", nvidia / "gpus" / "loop-b");
  fs::create_directories(nvidia / "gpus" / "0000:65:00.0" / "information"); // a directory, not a file
  fs::create_directories(node / "proc/1");
  ASSERT_EQ(::mkfifo((node / "proc/1/cgroup").c_str(), 0644), 0);
  fs::create_directories(node / "etc");
  fs::create_symlink("os-release", node / "etc/os-release"); // loops onto itself
  fs::create_directories(node / "usr/lib");
  fs::create_symlink("/nonexistent/os-release", node / "usr/lib/os-release");
  fs::path devices = node / "sys/bus/pci/devices";
  fs::create_directories(devices);
  fs::create_symlink("0000:00:01.0", devices / "0000:00:01.0");
  fs::create_symlink("../../../devices/missing", devices / "0000:00:02.0");

  auto run = run_doctor({"probe", "--format", "json", "--root", node.string()}, {}, std::chrono::seconds(60));
  ASSERT_FALSE(run.timed_out) << reliability::context(run);
  EXPECT_LT(run.seconds, 20.0);
  EXPECT_EQ(run.exit_code, 0) << reliability::context(run);
  json doc = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << reliability::context(run);
  const json* driver = fact(doc, {"probe", "driver", "status"});
  ASSERT_NE(driver, nullptr) << reliability::context(run);
  EXPECT_NE(*driver, "ok");
}

// A libcudnn.so.9 under the node's CUDA home whose only version source is its own cudnnGetVersion,
// which segfaults, hangs, or whose constructor aborts while it is loaded.
struct CudnnFault {
  const char* name;
  const char* library;
};

class CudnnLibraryFault : public testing::TestWithParam<CudnnFault> {};

TEST_P(CudnnLibraryFault, ProbeReportsItAndFinishesInTime) {
  TempDir dir(GetParam().name);
  fs::path lib64 = dir / "node/usr/local/cuda/lib64";
  fs::create_directories(lib64);
  fs::copy_file(GetParam().library, lib64 / "libcudnn.so.9");
  auto run = run_doctor({"probe", "--format", "json", "--root", (dir / "node").string()}, {}, std::chrono::seconds(60));
  ASSERT_FALSE(run.timed_out) << reliability::context(run);
  EXPECT_LT(run.seconds, 30.0) << reliability::context(run);
  EXPECT_EQ(run.exit_code, 0) << reliability::context(run);
  json doc = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << reliability::context(run);
  EXPECT_EQ(fact(doc, {"cudnn", "version"}), nullptr) << "a version was invented" << reliability::context(run);
  // The copy is listed, and the failed call is named.
  EXPECT_NE(run.out.find("/usr/local/cuda/lib64/libcudnn.so.9"), std::string::npos) << reliability::context(run);
  const json* reason = fact(doc, {"probe", "libraries", "reason"});
  ASSERT_NE(reason, nullptr) << reliability::context(run);
  EXPECT_NE(reason->get<std::string>().find("libcudnn.so.9"), std::string::npos) << reliability::context(run);
}

INSTANTIATE_TEST_SUITE_P(Faults, CudnnLibraryFault,
                         testing::Values(CudnnFault{"cudnn_segfault", FAKE_CUDNN_CRASH},
                                         CudnnFault{"cudnn_hang", FAKE_CUDNN_HANG},
                                         CudnnFault{"cudnn_abort_on_load", FAKE_CUDNN_ABORT}),
                         [](const testing::TestParamInfo<CudnnFault>& param) { return std::string(param.param.name); });

// Truncated ELF files where vendor libraries should be: the probe names them and goes on.
TEST(NodeTreeFaults, TruncatedElfFiles) {
  TempDir dir("elf");
  fs::path lib64 = dir / "node/usr/local/cuda/lib64";
  fs::create_directories(lib64);
  auto elf = util::read_file(FAKE_CUDNN_CRASH);
  ASSERT_TRUE(elf.ok());
  for (std::size_t cut : {0u, 4u, 20u, 64u, 700u}) {
    ASSERT_TRUE(util::write_file_atomic(lib64 / ("libcudnn.so.9." + std::to_string(cut) + ".0"), elf->substr(0, cut)).ok());
  }
  ASSERT_TRUE(util::write_file_atomic(lib64 / "libnccl.so.2", elf->substr(0, elf->size() / 2)).ok());
  fs::create_symlink("libnvrtc.so.13", lib64 / "libnvrtc.so.13"); // loops onto itself
  auto run = run_doctor({"probe", "--format", "json", "--root", (dir / "node").string()}, {}, std::chrono::seconds(60));
  ASSERT_FALSE(run.timed_out) << reliability::context(run);
  EXPECT_EQ(run.exit_code, 0) << reliability::context(run);
  json doc = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << reliability::context(run);
  EXPECT_NE(fact(doc, {"probe", "libraries", "status"}), nullptr) << reliability::context(run);
}

// A virtual environment with thousands of dist-info directories (generated here): the python
// probe reads only what it needs and stays fast.
TEST(NodeTreeFaults, ThousandsOfDistInfoDirectoriesStayFast) {
  TempDir dir("distinfo");
  fs::path venv = dir / "node/opt/venv";
  fs::path site = venv / "lib/python3.12/site-packages";
  fs::create_directories(venv / "bin");
  fs::create_directories(site);
  ASSERT_TRUE(util::write_file_atomic(venv / "pyvenv.cfg", "home = /usr/bin\nversion = 3.12.3\n").ok());
  ASSERT_TRUE(util::write_file_atomic(venv / "bin/python3", "").ok());
  constexpr int k_packages = 5000;
  for (int i = 0; i < k_packages; ++i) {
    fs::path info = site / ("package_" + std::to_string(i) + "-1.0." + std::to_string(i) + ".dist-info");
    fs::create_directory(info);
    std::ofstream(info / "METADATA") << "Metadata-Version: 2.1\nName: package-" << i << "\nVersion: 1.0." << i << "\n";
  }
  fs::create_directory(site / "torch-2.6.0+cu124.dist-info");
  ASSERT_TRUE(util::write_file_atomic(site / "torch-2.6.0+cu124.dist-info/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.6.0+cu124\n").ok());
  fs::create_symlink("loop.dist-info", site / "loop.dist-info");
  fs::create_directory(site / "broken-1.0.dist-info"); // no METADATA
  auto run = run_doctor({"probe", "--format", "json", "--root", (dir / "node").string(), "--python", "/opt/venv/bin/python3"},
                        {}, std::chrono::seconds(60));
  ASSERT_FALSE(run.timed_out) << reliability::context(run);
  EXPECT_EQ(run.exit_code, 0) << reliability::context(run);
  EXPECT_LT(run.seconds, 10.0 * test_support::k_time_factor) << reliability::context(run); // the probe's work
  json doc = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << reliability::context(run);
  const json* torch = fact(doc, {"torch", "version"});
  ASSERT_NE(torch, nullptr) << reliability::context(run);
  EXPECT_EQ(*torch, "2.6.0+cu124");
  std::printf("probe over %d dist-info directories: %.2f s\n", k_packages, run.seconds);
}

// Paths are bytes: a venv under a Latin-1 directory name (0xFF is never UTF-8) must not cost the
// JSON report or the Prometheus textfile, whose readers reject invalid UTF-8. The byte comes out
// as U+FFFD; nlohmann::json's dump() used to throw on it and abort the doctor.
TEST(NodeTreeFaults, PathsThatAreNotUtf8) {
  TempDir dir("latin1");
  const std::string venv_name = "v\xFF" "env";
  fs::path venv = dir / ("node/opt/" + venv_name);
  fs::path site = venv / "lib/python3.12/site-packages";
  fs::create_directories(venv / "bin");
  fs::create_directories(site / "torch-2.6.0+cu124.dist-info");
  ASSERT_TRUE(util::write_file_atomic(venv / "pyvenv.cfg", "home = /usr/bin\nversion = 3.12.3\n").ok());
  ASSERT_TRUE(util::write_file_atomic(venv / "bin/python3", "").ok());
  ASSERT_TRUE(util::write_file_atomic(site / "torch-2.6.0+cu124.dist-info/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.6.0+cu124\n").ok());
  const std::string python = "/opt/" + venv_name + "/bin/python3";
  const std::string shown = "/opt/v\xEF\xBF\xBD" "env/bin/python3";

  auto probe = run_doctor({"probe", "--format", "json", "--root", (dir / "node").string(), "--python", python});
  ASSERT_EQ(probe.exit_code, 0) << reliability::context(probe);
  json doc = json::parse(probe.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << reliability::context(probe);
  const json* executable = fact(doc, {"python", "executable"});
  ASSERT_NE(executable, nullptr) << reliability::context(probe);
  EXPECT_EQ(*executable, shown);
  EXPECT_EQ(*fact(doc, {"torch", "version"}), "2.6.0+cu124");

  for (const char* format : {"json", "prometheus"}) {
    auto check = run_doctor({"check", "--format", format, "--root", (dir / "node").string(), "--python", python,
                             "--set", "gpu[0].name=NVIDIA H100 \xFF"});
    ASSERT_LE(check.exit_code, 2) << format << reliability::context(check);
    EXPECT_EQ(util::valid_utf8(check.out), check.out) << format << ": output is not UTF-8";
    EXPECT_NE(check.out.find("H100 \xEF\xBF\xBD"), std::string::npos) << format << reliability::context(check);
  }

  // A fleet directory with a report whose file name is not UTF-8.
  fs::path reports = dir / "reports";
  fs::create_directories(reports);
  ASSERT_TRUE(util::write_file_atomic(reports / "n\xFF.json", healthy_report()).ok());
  auto fleet = run_doctor({"fleet", "--format", "json", "--max-age", "100000d", reports.string()});
  ASSERT_EQ(fleet.exit_code, 0) << reliability::context(fleet);
  json summary = json::parse(fleet.out, nullptr, false);
  ASSERT_FALSE(summary.is_discarded()) << reliability::context(fleet);
  EXPECT_NE(summary["nodes"][0]["file"].get<std::string>().find("n\xEF\xBF\xBD.json"), std::string::npos);
}

// RLIMIT_FSIZE in the child (bash's ulimit -f, 1 KiB blocks) makes the report write fail half-way,
// as a full disk would: exit 3 with the reason, the previous report byte for byte, no temporary.
TEST(DiskFull, PreviousReportStaysIntact) {
  TempDir dir("diskfull");
  fs::path report = dir / "report.json";
  std::vector<std::string> args = {"check", "--facts", std::string(NVTE_TESTS_DIR) + "/fixtures/snapshots/h100-node.json",
                                   "--format", "json", "--output", report.string()};
  auto first = run_doctor(args);
  ASSERT_LE(first.exit_code, 2) << reliability::context(first);
  ASSERT_LE(first.exit_code, 2);
  auto before = util::read_file(report);
  ASSERT_TRUE(before.ok());
  ASSERT_GT(before->size(), 2048u) << "the report must be larger than the limit for this test to mean anything";

  std::vector<std::string> limited = {"-c", "ulimit -f 2 && exec \"$0\" \"$@\"", NVTE_BINARY};
  limited.insert(limited.end(), args.begin(), args.end());
  limited.emplace_back("--set");
  limited.emplace_back("driver.version=550.54.15"); // a different report, so a torn write would show
  auto second = run_doctor(limited, {}, std::chrono::seconds(60), "/bin/bash");
  ASSERT_FALSE(second.timed_out);
  EXPECT_EQ(second.exit_code, 3) << reliability::context(second);
  EXPECT_NE(second.err.find(report.string()), std::string::npos) << reliability::context(second);
  EXPECT_EQ(std::count(second.err.begin(), second.err.end(), '\n'), 1) << reliability::context(second);
  EXPECT_EQ(*util::read_file(report), *before);
  EXPECT_EQ(util::list_directory(dir.path())->size(), 1u) << "a temporary file was left behind";
}

TEST(MalformedRules, ExitThreeWithOneLine) {
  TempDir dir("badrules");
  ASSERT_TRUE(util::write_file_atomic(dir / "bad.yaml", "rules:\n  - id: x\n    when: [unclosed\n").ok());
  auto run = run_doctor(
      {"check", "--facts", std::string(NVTE_TESTS_DIR) + "/fixtures/snapshots/h100-node.json", "--rules-only", dir.path().string()});
  EXPECT_EQ(run.exit_code, 3) << reliability::context(run);
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << reliability::context(run);
  EXPECT_NE(run.err.find("bad.yaml:"), std::string::npos) << reliability::context(run);
  EXPECT_TRUE(run.out.empty());
}

} // namespace
