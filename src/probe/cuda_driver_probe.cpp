// cuda_driver: which libcuda the loader picks for this process (Host overrides aside) and the
// CUDA version it reports. cuDriverGetVersion needs no cuInit, and this probe never calls cuInit:
// initialising CUDA takes a quarter of a second and can hang on a sick GPU; the self-test does it.
// The call still runs in a bounded child: loading libcuda runs the driver's constructors.
#include "probe/node_probes.hpp"
#include "probe/tree_policy.hpp"
#include "probe/vendor_child.hpp"

#include "gpuapi/cuda_driver.hpp"
#include "util/strings.hpp"

#include <unistd.h>

namespace probe {

namespace {

constexpr std::string_view k_cuda_driver_probe = "cuda_driver";

void query_libcuda(const std::vector<std::string>& names, const ChildChannel& channel) {
  model::Facts facts;
  auto finish = [&](std::string_view status, const std::string& reason) {
    record_status(facts, k_cuda_driver_probe, status, reason);
    channel.finish(facts);
  };
  auto loaded = gpuapi::CudaDriver::load(names);
  if (!loaded) {
    auto kind = loaded.error().kind;
    return finish(kind == util::ErrorKind::not_installed ? "not_installed" : "error", loaded.error().message);
  }
  facts.set("driver.libcuda_path", loaded->path());
  if (!loaded->api().cuDriverGetVersion) {
    facts.set("probe.cuda_driver.missing_symbols", util::join(loaded->missing(), ","));
    return finish("symbol_missing", loaded->path() + " lacks cuDriverGetVersion");
  }
  int packed = 0;
  channel.calling("cuDriverGetVersion");
  if (auto rc = loaded->api().cuDriverGetVersion(&packed); rc != gpuapi::k_cuda_success) {
    return finish("error", "cuDriverGetVersion failed with CUresult " + std::to_string(rc));
  }
  auto version = gpuapi::unpack_cuda_version(packed);
  facts.set("driver.libcuda_cuda_version", model::Version{version.major, version.minor});
  finish("ok", {});
}

void merge_libcuda(VendorOutcome outcome, model::Facts& facts) {
  if (!outcome.facts) {
    record_status(facts, k_cuda_driver_probe, outcome.status, outcome.reason);
    return;
  }
  const model::Facts& found = *outcome.facts;
  for (const auto& [name, value] : found.entries()) {
    if (name.starts_with("driver.") || name.starts_with("probe.cuda_driver.")) facts.set(name, value);
  }
  // NVML's answer stands; libcuda's replaces only the branch-table estimate.
  auto version = found.get_version("driver.libcuda_cuda_version");
  auto source = facts.get_string("driver.cuda_version_source");
  if (version && (!facts.has("driver.cuda_version") || source == "driver_branch_table")) {
    facts.set("driver.cuda_version", *version);
    facts.set("driver.cuda_version_source", "cuda_driver");
  }
}

} // namespace

std::unique_ptr<StartedProbe> start_cuda_driver_probe(const Host& host) {
  if (!host.allow_vendor_calls) {
    return std::make_unique<StartedVendorProbe>(k_cuda_driver_probe, "skipped", "vendor library calls are disabled");
  }
  // As root, the loader's search through a directory another user can change would run that
  // user's library as root (tree_policy.hpp).
  if (auto why = loader_path_refusal(::geteuid()); why && !host.library_overrides.contains("cuda"))
    return std::make_unique<StartedVendorProbe>(k_cuda_driver_probe, "skipped", "not loaded: " + *why);
  // Under a fake root the loader would find this machine's library, not the node's.
  if (!host.root.empty() && host.root != "/" && !host.library_overrides.contains("cuda")) {
    return std::make_unique<StartedVendorProbe>(k_cuda_driver_probe, "skipped",
                                                "the node root is " + host.root.string() + "; no library given for cuda");
  }
  std::vector<std::string> names;
  if (auto it = host.library_overrides.find("cuda"); it != host.library_overrides.end()) names = {it->second.string()};
  else names.assign(gpuapi::k_cuda_driver_sonames.begin(), gpuapi::k_cuda_driver_sonames.end());
  return std::make_unique<StartedVendorProbe>(
      start_vendor_child("libcuda", host.vendor_timeout, [&](const ChildChannel& channel) { query_libcuda(names, channel); }),
      merge_libcuda);
}

void run_cuda_driver_probe(const Host& host, model::Facts& facts) { start_cuda_driver_probe(host)->finish(facts); }

ProbeSpec::Need cuda_driver_needed(const Host& host, const model::Facts& facts) {
  if (host.library_overrides.contains("cuda")) return {true, "a libcuda was given explicitly"};
  auto driver = facts.get_version("driver.version");
  if (!driver) return {false, "no NVIDIA kernel driver: a libcuda could not work"};
  if (!facts.has("driver.cuda_version")) {
    return {true, "driver " + driver->to_string() + " is newer than the doctor's branch table; libcuda knows its CUDA version"};
  }
  return {false, "driver branch " + std::to_string(driver->major()) + " gives the CUDA version (" +
                     facts.get_version("driver.cuda_version")->to_string() + "); the libraries probe finds the libcuda the loader picks"};
}

} // namespace probe
