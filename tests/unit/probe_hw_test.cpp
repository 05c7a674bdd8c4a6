// The hardware, driver and environment probes on fixture node roots (tests/fixtures/<node>/:
// fake sysfs PCI trees and /proc/driver/nvidia files) and fake vendor libraries built by the
// tests (tests/fakes/), including ones that hang, crash or lack entry points.
#include "gpuapi/cuda_driver.hpp"
#include "model/fact_catalog.hpp"
#include "gpuapi/nvml.hpp"
#include "probe/driver_info.hpp"
#include "probe/gpu_facts.hpp"
#include "probe/gpu_ids.hpp"
#include "probe/node_probes.hpp"
#include "probe/probe.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

using model::Facts;
using model::Version;
using probe::Host;

namespace {

std::filesystem::path fixtures() {
  const char* dir = std::getenv("NVTE_TEST_FIXTURES");
  return dir ? dir : NVTE_SOURCE_FIXTURES;
}

Host fixture_host(const char* node) {
  Host host;
  host.root = fixtures() / node;
  host.vendor_timeout = std::chrono::milliseconds(5000);
  return host;
}

std::string str(const Facts& facts, const char* name) { return facts.get_string(name).value_or("<absent>"); }

Version ver(const char* text) { return *Version::parse(text); }

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The probes that only read files, then the vendor ones with the given NVML and libcuda.
Facts probe_hardware(Host host, const char* nvml, const char* cuda) {
  host.library_overrides["nvml"] = nvml;
  host.library_overrides["cuda"] = cuda;
  std::vector<std::string> only = {"env", "system", "driver", "pci", "nvml", "cuda_driver"};
  return probe::probe_node(host, only);
}

} // namespace

TEST(GpuIds, NamesDataCenterPartsByDeviceId) {
  const auto* h100 = probe::find_gpu_model(0x2330);
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100->architecture, "Hopper");
  EXPECT_EQ(h100->cc_major * 10 + h100->cc_minor, 90);
  const auto* a100 = probe::find_gpu_model(0x20b0);
  ASSERT_NE(a100, nullptr);
  EXPECT_EQ(a100->name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(a100->memory_mib, 40960);
  EXPECT_EQ(probe::find_gpu_model(0x2335)->name, "NVIDIA H200");
  EXPECT_EQ(probe::find_gpu_model(0x26b9)->cc_minor, 9);
  EXPECT_EQ(probe::find_gpu_model(0x2901)->cc_major, 10);
  EXPECT_EQ(probe::find_gpu_model(0x1db5)->architecture, "Volta");
  EXPECT_EQ(probe::find_gpu_model(0x1234), nullptr);
}

TEST(GpuIds, UnknownIdsFallBackToTheirChipFamily) {
  auto gb205 = probe::gpu_family_for(0x2f04);
  ASSERT_TRUE(gb205);
  EXPECT_EQ(gb205->architecture, "Blackwell");
  EXPECT_EQ(gb205->cc_major, 12);
  auto gh100 = probe::gpu_family_for(0x2338); // an H100 ID the table leaves out
  ASSERT_TRUE(gh100);
  EXPECT_EQ(gh100->architecture, "Hopper");
  auto ga102 = probe::gpu_family_for(0x2216);
  ASSERT_TRUE(ga102);
  EXPECT_EQ(ga102->cc_minor, 6);
  EXPECT_FALSE(probe::gpu_family_for(0x0191)); // G80
}

TEST(DriverInfo, ParsesOpenAndProprietaryVersionFiles) {
  auto open = probe::parse_driver_version_file(
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@host)  "
      "Thu Oct  9 19:57:49 UTC 2025\nGCC version:  gcc version 13.3.0\n");
  ASSERT_TRUE(open);
  EXPECT_EQ(open->version.text(), "580.159.04");
  EXPECT_EQ(open->kernel_module, "open");
  auto proprietary =
      probe::parse_driver_version_file("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n");
  ASSERT_TRUE(proprietary);
  EXPECT_EQ(proprietary->version, ver("550.54.15"));
  EXPECT_EQ(proprietary->kernel_module, "proprietary");
  EXPECT_FALSE(probe::parse_driver_version_file("NVRM version: (garbled)\n"));
  EXPECT_FALSE(probe::parse_driver_version_file(""));
}

TEST(DriverInfo, MapsDriverBranchesToTheirNewestCuda) {
  EXPECT_EQ(probe::cuda_version_for_driver(ver("580.159.04")), ver("13.0"));
  EXPECT_EQ(probe::cuda_version_for_driver(ver("575.57.08")), ver("12.9"));
  EXPECT_EQ(probe::cuda_version_for_driver(ver("570.124.06")), ver("12.8"));
  EXPECT_EQ(probe::cuda_version_for_driver(ver("550.54.15")), ver("12.4"));
  EXPECT_EQ(probe::cuda_version_for_driver(ver("535.230.02")), ver("12.2"));
  EXPECT_EQ(probe::cuda_version_for_driver(ver("470.256.02")), ver("11.4"));
  EXPECT_EQ(probe::cuda_version_for_driver(ver("450.80.02")), ver("11.0"));
  EXPECT_FALSE(probe::cuda_version_for_driver(ver("418.87.01")));
  EXPECT_FALSE(probe::cuda_version_for_driver(ver("610.10")));
}

TEST(DriverInfo, ParsesPerGpuInformation) {
  auto info = probe::parse_gpu_information("Model: \t\t NVIDIA H100 80GB HBM3\nGPU UUID: \t GPU-1234\n"
                                           "Bus Location: \t 0000:00:06.0\nDevice Minor: \t 0\n");
  EXPECT_EQ(info.model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(info.uuid, "GPU-1234");
  EXPECT_EQ(info.bus_location, "0000:00:06.0");
}

TEST(GpuFacts, NormalizesBusIdsAndMergesByThem) {
  EXPECT_EQ(probe::normalize_bus_id("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(probe::normalize_bus_id(" 0000:00:06.0\n"), "0000:00:06.0");
  EXPECT_FALSE(probe::normalize_bus_id("GPU-1234"));
  EXPECT_FALSE(probe::normalize_bus_id("0000:00:06.0x"));

  Facts facts;
  facts.set("gpu[0].pci_bus_id", "0000:00:06.0");
  facts.set("gpu[0].name", "from pci");
  facts.set("gpu[0].compute_capability", ver("8.0"));
  facts.set("gpu[0].sm", 80);
  Facts nvml;
  nvml.set("gpu[0].pci_bus_id", "0000:00:07.0");
  nvml.set("gpu[1].pci_bus_id", "0000:00:06.0");
  nvml.set("gpu[1].name", "from nvml");
  nvml.set("gpu[1].compute_capability", ver("9.0"));
  EXPECT_EQ(probe::merge_gpu(facts, nvml, 1, probe::MergePolicy::fill_missing), 0u);
  EXPECT_EQ(str(facts, "gpu[0].name"), "from pci");
  EXPECT_EQ(probe::merge_gpu(facts, nvml, 1, probe::MergePolicy::overwrite), 0u);
  EXPECT_EQ(str(facts, "gpu[0].name"), "from nvml");
  EXPECT_EQ(facts.get_version("gpu[0].compute_capability"), ver("9.0"));
  EXPECT_FALSE(facts.has("gpu[0].sm")); // stale sm dropped; derive() recomputes it
  EXPECT_EQ(probe::merge_gpu(facts, nvml, 0, probe::MergePolicy::overwrite), 1u);
  EXPECT_EQ(facts.get_int("gpu[1].index"), 1);
  Facts no_bus;
  no_bus.set("gpu[1].uuid", "GPU-b");
  EXPECT_EQ(probe::merge_gpu(facts, no_bus, 1, probe::MergePolicy::overwrite), 1u);
  EXPECT_EQ(str(facts, "gpu[1].uuid"), "GPU-b");
  EXPECT_EQ(facts.count("gpu"), 2u);
}

TEST(PciProbe, FindsTheReferenceNodesH100WithoutAnyDriver) {
  Facts facts;
  probe::run_pci_probe(fixture_host("h100-node"), facts);
  EXPECT_EQ(str(facts, "probe.pci.status"), "ok");
  EXPECT_EQ(facts.count("gpu"), 1u); // the virtio device is not a GPU
  EXPECT_EQ(str(facts, "gpu[0].pci_bus_id"), "0000:00:06.0");
  EXPECT_EQ(str(facts, "gpu[0].pci_device_id"), "0x2330");
  EXPECT_EQ(str(facts, "gpu[0].name"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(str(facts, "gpu[0].architecture"), "Hopper");
  EXPECT_EQ(facts.get_version("gpu[0].compute_capability"), ver("9.0"));
  EXPECT_EQ(facts.get_int("gpu[0].sm"), 90);
  EXPECT_EQ(facts.get_int("gpu[0].memory_mib"), 81920);
  EXPECT_EQ(str(facts, "gpu[0].source"), "pci");
  EXPECT_EQ(facts.get_int("gpu[0].index"), 0);
}

TEST(PciProbe, ListsGpusInBusOrderAndSkipsNvSwitches) {
  Facts facts;
  probe::run_pci_probe(fixture_host("a100-node"), facts);
  ASSERT_EQ(facts.count("gpu"), 2u);
  EXPECT_EQ(str(facts, "gpu[0].pci_bus_id"), "0000:07:00.0");
  EXPECT_EQ(str(facts, "gpu[1].pci_bus_id"), "0000:0f:00.0");
  EXPECT_EQ(str(facts, "gpu[1].name"), "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(facts.get_int("gpu[1].sm"), 80);
}

TEST(PciProbe, ClassifiesAnUnknownDeviceByItsChipRange) {
  Facts facts;
  probe::run_pci_probe(fixture_host("broken-node"), facts);
  ASSERT_EQ(facts.count("gpu"), 1u);
  EXPECT_EQ(str(facts, "gpu[0].name"), "NVIDIA device 0x2f04");
  EXPECT_EQ(str(facts, "gpu[0].architecture"), "Blackwell");
  EXPECT_EQ(facts.get_int("gpu[0].sm"), 120);
  EXPECT_FALSE(facts.has("gpu[0].memory_mib"));
}

TEST(PciProbe, ARootWithoutSysfsIsAnErrorNotACrash) {
  Facts facts;
  Host host = fixture_host("h100-node");
  host.root = fixtures() / "h100-node" / "etc";
  probe::run_pci_probe(host, facts);
  EXPECT_EQ(str(facts, "probe.pci.status"), "error");
  EXPECT_NE(str(facts, "probe.pci.reason").find("sys/bus/pci"), std::string::npos);
  EXPECT_EQ(facts.count("gpu"), 0u);
}

TEST(DriverProbe, ReadsVersionModuleAndGpusFromProc) {
  Facts facts;
  probe::run_driver_probe(fixture_host("h100-node"), facts);
  EXPECT_EQ(str(facts, "probe.driver.status"), "ok");
  EXPECT_EQ(facts.get_version("driver.version")->text(), "580.159.04");
  EXPECT_EQ(str(facts, "driver.kernel_module"), "open");
  EXPECT_EQ(facts.get_version("driver.cuda_version"), ver("13.0"));
  EXPECT_EQ(str(facts, "driver.cuda_version_source"), "driver_branch_table");
  EXPECT_EQ(str(facts, "gpu[0].uuid"), "GPU-7a0b3c1e-55d2-4c7e-9d3f-2b1a0c9e8f71");
  EXPECT_EQ(str(facts, "gpu[0].pci_bus_id"), "0000:00:06.0");
  EXPECT_EQ(str(facts, "gpu[0].source"), "driver");
}

TEST(DriverProbe, NoDriverAndAGarbledDriverAreStatusesNotFailures) {
  Facts none;
  probe::run_driver_probe(fixture_host("no-driver-node"), none);
  EXPECT_EQ(str(none, "probe.driver.status"), "not_installed");
  EXPECT_FALSE(none.has("driver.version"));
  Facts garbled;
  probe::run_driver_probe(fixture_host("broken-node"), garbled);
  EXPECT_EQ(str(garbled, "probe.driver.status"), "error");
  EXPECT_NE(str(garbled, "probe.driver.reason").find("NVRM"), std::string::npos);
}

TEST(DriverAndPci, MeetOnTheBusIdWithoutDuplicatingGpus) {
  Facts facts;
  Host host = fixture_host("a100-node");
  probe::run_driver_probe(host, facts);
  probe::run_pci_probe(host, facts);
  ASSERT_EQ(facts.count("gpu"), 2u);
  EXPECT_EQ(str(facts, "gpu[1].uuid"), "GPU-1e2f3041-5263-7485-96a7-b8c9d0e1f203");
  EXPECT_EQ(str(facts, "gpu[1].pci_device_id"), "0x20b0");
  EXPECT_EQ(facts.get_version("driver.cuda_version"), ver("12.4"));
  EXPECT_EQ(str(facts, "driver.kernel_module"), "proprietary");
}

TEST(NvmlProbe, FakeNvmlRefinesThePciGpuAndWins) {
  Host host = fixture_host("h100-node");
  host.env["NVTE_FLASH_ATTN"] = "0";
  auto facts = probe_hardware(host, FAKE_NVML, FAKE_CUDA);
  EXPECT_EQ(str(facts, "env.NVTE_FLASH_ATTN"), "0");
  EXPECT_EQ(str(facts, "probe.nvml.status"), "ok") << str(facts, "probe.nvml.reason");
  EXPECT_EQ(facts.get_int("gpu.count"), 1);
  EXPECT_EQ(facts.get_int("gpu[0].memory_mib"), 81559); // NVML's exact size, not the table's 81920
  EXPECT_EQ(str(facts, "gpu[0].source"), "nvml");
  EXPECT_EQ(str(facts, "gpu[0].architecture"), "Hopper"); // kept from pci
  EXPECT_EQ(facts.get_bool("gpu[0].mig_enabled"), false);
  EXPECT_EQ(facts.get_int("gpu[0].sm"), 90);
  EXPECT_EQ(facts.get_version("driver.cuda_version"), ver("13.0"));
  EXPECT_EQ(str(facts, "driver.cuda_version_source"), "nvml");
  EXPECT_EQ(facts.get_version("driver.version")->text(), "580.159.04");
  EXPECT_FALSE(facts.has("probe.nvml.missing_symbols"));
  for (const auto& [name, value] : facts.entries()) {
    EXPECT_NE(model::find_fact_spec(name), nullptr) << name << " is not in the fact catalog";
  }
  // libcuda ran too, and did not replace NVML's answer.
  EXPECT_EQ(str(facts, "probe.cuda_driver.status"), "ok") << str(facts, "probe.cuda_driver.reason");
  EXPECT_EQ(facts.get_version("driver.libcuda_cuda_version"), ver("13.0"));
}

TEST(NvmlProbe, AHungNvmlIsATimeoutWithinTheBound) {
  Host host = fixture_host("h100-node");
  host.vendor_timeout = std::chrono::milliseconds(300);
  host.library_overrides["nvml"] = FAKE_NVML_HANG;
  Facts facts;
  auto start = std::chrono::steady_clock::now();
  probe::run_nvml_probe(host, facts);
  EXPECT_LT(seconds_since(start), 3.0);
  EXPECT_EQ(str(facts, "probe.nvml.status"), "timeout");
  EXPECT_NE(str(facts, "probe.nvml.reason").find("nvmlInit_v2"), std::string::npos) << str(facts, "probe.nvml.reason");
}

TEST(NvmlProbe, ACrashingNvmlIsRecordedAndTheDoctorLives) {
  Host host = fixture_host("h100-node");
  host.library_overrides["nvml"] = FAKE_NVML_CRASH;
  Facts facts;
  probe::run_nvml_probe(host, facts);
  EXPECT_EQ(str(facts, "probe.nvml.status"), "crashed");
  auto reason = str(facts, "probe.nvml.reason");
  EXPECT_NE(reason.find("signal 11"), std::string::npos) << reason;
  EXPECT_NE(reason.find("nvmlDeviceGetCount_v2"), std::string::npos) << reason;
}

TEST(NvmlProbe, AnNvmlWithoutInitV2IsSymbolMissing) {
  Host host = fixture_host("h100-node");
  host.library_overrides["nvml"] = FAKE_NVML_NO_INIT_V2;
  Facts facts;
  probe::run_nvml_probe(host, facts);
  EXPECT_EQ(str(facts, "probe.nvml.status"), "symbol_missing");
  EXPECT_NE(str(facts, "probe.nvml.reason").find("nvmlInit_v2"), std::string::npos);
  EXPECT_EQ(str(facts, "probe.nvml.missing_symbols"), "nvmlInit_v2");
}

TEST(NvmlProbe, AMissingOptionalEntryPointIsRecordedAndTheRestStillRead) {
  Host host = fixture_host("h100-node");
  host.library_overrides["nvml"] = FAKE_NVML_NO_MIG;
  Facts facts;
  probe::run_nvml_probe(host, facts);
  EXPECT_EQ(str(facts, "probe.nvml.status"), "ok");
  EXPECT_EQ(str(facts, "probe.nvml.missing_symbols"), "nvmlDeviceGetMigMode");
  EXPECT_FALSE(facts.has("gpu[0].mig_enabled"));
  EXPECT_EQ(str(facts, "gpu[0].uuid"), "GPU-7a0b3c1e-55d2-4c7e-9d3f-2b1a0c9e8f71");
}

TEST(NvmlProbe, DriverNotLoadedIsAnErrorWithNvmlsWords) {
  Host host = fixture_host("h100-node");
  host.library_overrides["nvml"] = FAKE_NVML_NO_DRIVER;
  Facts facts;
  probe::run_nvml_probe(host, facts);
  EXPECT_EQ(str(facts, "probe.nvml.status"), "error");
  EXPECT_NE(str(facts, "probe.nvml.reason").find("Driver Not Loaded (9)"), std::string::npos);
}

TEST(NvmlProbe, VendorCallsCanBeSwitchedOff) {
  Host host = fixture_host("h100-node");
  host.allow_vendor_calls = false;
  host.library_overrides["nvml"] = FAKE_NVML_CRASH;
  Facts facts;
  probe::run_nvml_probe(host, facts);
  probe::run_cuda_driver_probe(host, facts);
  EXPECT_EQ(str(facts, "probe.nvml.status"), "skipped");
  EXPECT_EQ(str(facts, "probe.cuda_driver.status"), "skipped");
}

TEST(NvmlProbe, UnderAFakeRootOnlyGivenLibrariesAreLoaded) {
  Facts facts;
  probe::run_nvml_probe(fixture_host("h100-node"), facts);
  probe::run_cuda_driver_probe(fixture_host("h100-node"), facts);
  EXPECT_EQ(str(facts, "probe.nvml.status"), "skipped");
  EXPECT_EQ(str(facts, "probe.cuda_driver.status"), "skipped");
  EXPECT_NE(str(facts, "probe.nvml.reason").find("h100-node"), std::string::npos);
}

TEST(NoDriverNode, NamesTheGpuAndReportsEveryMissingPiece) {
  Host host = fixture_host("no-driver-node");
  auto absent_nvml = (host.root / "usr/lib/libnvidia-ml.so.1").string();
  auto absent_cuda = (host.root / "usr/lib/libcuda.so.1").string();
  auto facts = probe_hardware(host, absent_nvml.c_str(), absent_cuda.c_str());
  EXPECT_EQ(facts.get_int("gpu.count"), 1);
  EXPECT_EQ(str(facts, "gpu[0].name"), "NVIDIA H100 PCIe");
  EXPECT_EQ(str(facts, "probe.driver.status"), "not_installed");
  EXPECT_EQ(str(facts, "probe.nvml.status"), "not_installed");
  EXPECT_NE(str(facts, "probe.nvml.reason").find("not found"), std::string::npos) << str(facts, "probe.nvml.reason");
  EXPECT_EQ(str(facts, "probe.cuda_driver.status"), "not_installed");
  EXPECT_FALSE(facts.has("driver.version"));
  EXPECT_FALSE(facts.has("driver.cuda_version"));
}

TEST(CudaDriverProbe, LibcudaReplacesOnlyTheBranchTableEstimate) {
  Host host = fixture_host("a100-node");
  host.library_overrides["cuda"] = FAKE_CUDA;
  Facts facts;
  probe::run_driver_probe(host, facts);
  ASSERT_EQ(str(facts, "driver.cuda_version_source"), "driver_branch_table");
  probe::run_cuda_driver_probe(host, facts); // the fake's cuInit aborts: never called
  EXPECT_EQ(str(facts, "probe.cuda_driver.status"), "ok") << str(facts, "probe.cuda_driver.reason");
  EXPECT_EQ(facts.get_version("driver.cuda_version"), ver("13.0"));
  EXPECT_EQ(str(facts, "driver.cuda_version_source"), "cuda_driver");
  EXPECT_NE(str(facts, "driver.libcuda_path").find("fake_cuda"), std::string::npos);
}

TEST(RealHost, WithoutADriverTheVendorProbesSayNotInstalled) {
  Host host = Host::current();
  Facts facts;
  auto start = std::chrono::steady_clock::now();
  probe::run_nvml_probe(host, facts);
  probe::run_cuda_driver_probe(host, facts);
  EXPECT_LT(seconds_since(start), 2 * 5.0 + 1);
  void* nvml = ::dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_NOLOAD);
  void* real = nvml ? nvml : ::dlopen("libnvidia-ml.so.1", RTLD_LAZY);
  if (real) {
    ::dlclose(real);
    GTEST_SKIP() << "this machine has NVML; probe.nvml.status=" << str(facts, "probe.nvml.status");
  }
  EXPECT_EQ(str(facts, "probe.nvml.status"), "not_installed");
  EXPECT_TRUE(str(facts, "probe.nvml.reason").starts_with("libnvidia-ml.so.1 not found: ")) << str(facts, "probe.nvml.reason");
  EXPECT_NE(str(facts, "probe.nvml.reason").find("cannot open shared object file"), std::string::npos);
  EXPECT_EQ(str(facts, "probe.cuda_driver.status"), "not_installed");
  EXPECT_FALSE(facts.has("driver.cuda_version"));
}

TEST(RealHost, EveryProbeReportsAndTheSnapshotRoundTrips) {
  auto facts = probe::probe_node(Host::current());
  for (const auto& spec : probe::probes()) {
    std::string base = "probe." + std::string(spec.name);
    EXPECT_TRUE(facts.has(base + ".status")) << spec.name;
    EXPECT_TRUE(facts.has(base + ".seconds")) << spec.name;
  }
  EXPECT_TRUE(facts.has("system.glibc_version"));
  EXPECT_TRUE(facts.has("system.kernel"));
  EXPECT_TRUE(facts.has("gpu.count"));
  auto back = Facts::from_json(facts.to_json(), "snapshot");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->entries(), facts.entries());
}

TEST(EnvProbe, KeepsOnlyTheVariablesThatMatter) {
  Host host;
  host.env = {{"NVTE_FLASH_ATTN", "0"},        {"NCCL_DEBUG", "INFO"}, {"LD_LIBRARY_PATH", "/usr/local/nvidia/lib64"}, {"HOME", "/root"},
              {"CUDA_VISIBLE_DEVICES", "0,1"}, {"NVTE_ODD.NAME", "x"}, {"NVTE_DOCTOR_RULES", "/etc/nvte-doctor/rules"}};
  Facts facts;
  probe::run_env_probe(host, facts);
  EXPECT_EQ(str(facts, "env.NVTE_FLASH_ATTN"), "0");
  EXPECT_EQ(str(facts, "env.NCCL_DEBUG"), "INFO");
  EXPECT_EQ(str(facts, "env.LD_LIBRARY_PATH"), "/usr/local/nvidia/lib64");
  EXPECT_EQ(str(facts, "env.CUDA_VISIBLE_DEVICES"), "0,1");
  EXPECT_FALSE(facts.has("env.HOME"));
  EXPECT_FALSE(facts.has("env.NVTE_DOCTOR_RULES")) << "the doctor's own setting is not a TE variable";
  EXPECT_EQ(facts.count("env"), 0u);
  EXPECT_EQ(facts.entries().size(), 5u); // four variables and the status
}

TEST(SystemProbe, ReadsTheNodeUnderItsRoot) {
  Facts h100;
  probe::run_system_probe(fixture_host("h100-node"), h100);
  EXPECT_EQ(str(h100, "system.hostname"), "h100-node");
  EXPECT_EQ(str(h100, "system.os_id"), "ubuntu");
  EXPECT_EQ(str(h100, "system.os_version"), "24.04");
  EXPECT_EQ(str(h100, "system.os_name"), "Ubuntu 24.04.3 LTS");
  EXPECT_EQ(str(h100, "system.kernel"), "6.18.0");
  EXPECT_EQ(str(h100, "system.container"), "none");
  EXPECT_FALSE(h100.has("system.glibc_version")); // only the real root's libc can say

  Facts a100;
  probe::run_system_probe(fixture_host("a100-node"), a100);
  EXPECT_EQ(str(a100, "system.container"), "docker");

  Host pod = fixture_host("h100-node");
  pod.env["KUBERNETES_SERVICE_HOST"] = "10.0.0.1";
  Facts k8s;
  probe::run_system_probe(pod, k8s);
  EXPECT_EQ(str(k8s, "system.container"), "kubernetes");
}

TEST(Registry, RunsProbesInDependencyOrder) {
  std::vector<std::string> names;
  for (const auto& spec : probe::probes()) {
    names.emplace_back(spec.name);
    EXPECT_FALSE(spec.description.empty()) << spec.name;
    EXPECT_NE(spec.run, nullptr);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"env", "system", "python", "driver", "pci", "nvml", "cuda_driver", "libraries", "native"}));
}

TEST(Registry, VendorProbesStartAheadAndStayBounded) {
  // Started before the loop: the vendor children and the libraries probe's file scans; the
  // native probe after the python probe, whose facts it needs.
  for (const auto& spec : probe::probes()) {
    bool ahead = spec.name == "nvml" || spec.name == "cuda_driver" || spec.name == "libraries";
    EXPECT_EQ(spec.start != nullptr, ahead) << spec.name;
    EXPECT_EQ(spec.start_after != nullptr, spec.name == "native") << spec.name;
    if (spec.start_after) {
      EXPECT_EQ(spec.after, "python");
    }
  }
  // Started before the file probes, a hung NVML is still cut off at its bound, and everything
  // else is merged in registry order as before.
  Host host = fixture_host("h100-node");
  host.vendor_timeout = std::chrono::milliseconds(300);
  auto start = std::chrono::steady_clock::now();
  auto facts = probe_hardware(host, FAKE_NVML_HANG, FAKE_CUDA);
  EXPECT_LT(seconds_since(start), 3.0);
  EXPECT_EQ(str(facts, "probe.nvml.status"), "timeout");
  EXPECT_EQ(str(facts, "probe.cuda_driver.status"), "ok") << str(facts, "probe.cuda_driver.reason");
  EXPECT_EQ(facts.get_version("driver.version")->text(), "580.159.04"); // from /proc, not NVML
  EXPECT_EQ(str(facts, "driver.cuda_version_source"), "cuda_driver");
}

TEST(Registry, WithoutDeepTheVendorProbesRunOnlyWhereTheFilesLeftAGap) {
  // The H100 fixture: /proc/driver/nvidia names the GPU and the PCI table knows 0x2330, so the
  // default probe loads neither NVML nor libcuda and still has every GPU fact rules use.
  Host host = fixture_host("h100-node");
  auto facts = probe::probe_node(host, std::vector<std::string>{"driver", "pci", "nvml", "cuda_driver"});
  EXPECT_EQ(str(facts, "probe.nvml.status"), "skipped");
  EXPECT_NE(str(facts, "probe.nvml.reason").find("named every GPU"), std::string::npos) << str(facts, "probe.nvml.reason");
  EXPECT_EQ(str(facts, "probe.cuda_driver.status"), "skipped");
  EXPECT_EQ(str(facts, "gpu[0].name"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(facts.get_version("gpu[0].compute_capability")->text(), "9.0");
  EXPECT_EQ(str(facts, "driver.cuda_version_source"), "driver_branch_table");
  EXPECT_FALSE(facts.has("gpu[0].mig_enabled")); // NVML's alone: --deep

  // Each gap that makes them needed.
  Facts unknown_gpu;
  unknown_gpu.set("driver.version", ver("580.159.04"));
  unknown_gpu.set("gpu[0].pci_device_id", std::string("0x2fff"));
  unknown_gpu.set("gpu[0].uuid", std::string("GPU-1"));
  auto need = probe::nvml_needed(Host{}, unknown_gpu);
  EXPECT_TRUE(need.run);
  EXPECT_NE(need.why.find("0x2fff"), std::string::npos) << need.why;
  Facts driver_without_gpus;
  driver_without_gpus.set("driver.version", ver("580.159.04"));
  EXPECT_TRUE(probe::nvml_needed(Host{}, driver_without_gpus).run);
  EXPECT_FALSE(probe::nvml_needed(Host{}, Facts{}).run); // no driver, no GPU
  Host given;
  given.library_overrides["nvml"] = FAKE_NVML;
  EXPECT_TRUE(probe::nvml_needed(given, Facts{}).run);

  Facts new_branch;
  new_branch.set("driver.version", ver("610.10"));
  auto cuda_need = probe::cuda_driver_needed(Host{}, new_branch);
  EXPECT_TRUE(cuda_need.run);
  EXPECT_NE(cuda_need.why.find("610.10"), std::string::npos) << cuda_need.why;
  new_branch.set("driver.cuda_version", ver("13.0"));
  EXPECT_FALSE(probe::cuda_driver_needed(Host{}, new_branch).run);

  // --deep asks anyway (here: the fake NVML answers and refines the GPU).
  host.deep = true;
  host.library_overrides["nvml"] = FAKE_NVML;
  auto deep = probe::probe_node(host, std::vector<std::string>{"driver", "pci", "nvml"});
  EXPECT_EQ(str(deep, "probe.nvml.status"), "ok") << str(deep, "probe.nvml.reason");
  EXPECT_EQ(str(deep, "gpu[0].source"), "nvml");
}

TEST(Registry, RecordStatusDropsAStaleReason) {
  Facts facts;
  probe::record_status(facts, "nvml", "error", "nvmlInit_v2 failed");
  probe::record_status(facts, "nvml", "ok");
  EXPECT_EQ(str(facts, "probe.nvml.status"), "ok");
  EXPECT_FALSE(facts.has("probe.nvml.reason"));
}

TEST(Gpuapi, LoaderRecordsMissingSymbolsAndDlerror) {
  std::vector<std::string> candidates = {FAKE_NVML_NO_INIT_V2};
  auto nvml = gpuapi::Nvml::load(candidates);
  ASSERT_TRUE(nvml.ok()) << nvml.error().message;
  EXPECT_EQ(nvml->missing(), std::vector<std::string>{"nvmlInit_v2"});
  EXPECT_NE(nvml->api().nvmlDeviceGetName, nullptr);
  EXPECT_EQ(nvml->describe(9), "Driver Not Loaded (9)");

  std::vector<std::string> absent = {"libnvte-absent.so.1", "libnvte-absent.so"};
  auto missing = gpuapi::CudaDriver::load(absent);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, util::ErrorKind::not_installed);
  EXPECT_TRUE(missing.error().message.starts_with("libnvte-absent.so.1 not found: libnvte-absent.so.1: cannot open"))
      << missing.error().message;
  EXPECT_EQ(gpuapi::unpack_cuda_version(12040).minor, 4);
}
