// Injected faults, each through the real nvte-doctor binary: vendor libraries (fake libnvidia-ml
// and libcuda built by the tests, found through LD_LIBRARY_PATH as a real driver would be) that
// segfault, abort or hang in their init or version call; node trees with FIFOs, looping and
// dangling symlinks where /proc and /sys files should be; a file size limit hit while writing the
// report; a malformed rules file. In every case the doctor must finish within its timeout, say
// what went wrong, and leave the previous report intact.
#include "doctor_runner.hpp"
#include "util/file.hpp"

#include <gtest/gtest.h>

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

class VendorLibraryFault : public testing::TestWithParam<VendorFault> {};

TEST_P(VendorLibraryFault, DoctorReportsItAndFinishesInTime) {
  const VendorFault& fault = GetParam();
  TempDir dir(fault.name);
  fs::path lib = install_fake(dir, fault);
  auto run = run_doctor({"probe", "--format", "json"}, {{"LD_LIBRARY_PATH", lib.string()}}, std::chrono::seconds(60));
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
  auto check = run_doctor({"check", "--no-color"}, {{"LD_LIBRARY_PATH", lib.string()}}, std::chrono::seconds(60));
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
    [](const testing::TestParamInfo<VendorFault>& info) { return std::string(info.param.name); });

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
  limited.push_back("--set");
  limited.push_back("driver.version=550.54.15"); // a different report, so a torn write would show
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
  auto run = run_doctor({"check", "--facts", std::string(NVTE_TESTS_DIR) + "/fixtures/snapshots/h100-node.json",
                         "--rules", dir.path().string()});
  EXPECT_EQ(run.exit_code, 3) << reliability::context(run);
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << reliability::context(run);
  EXPECT_NE(run.err.find("bad.yaml:"), std::string::npos) << reliability::context(run);
  EXPECT_TRUE(run.out.empty());
}

} // namespace
