// The probe registry and the loop that runs it. The table is the one place that says which
// probes exist, what each is for and in which order they run: later probes read earlier facts
// (pci names the GPUs the driver probe found, nvml refines them, libraries needs python.*; python
// reads only system.*).
#include "probe/probe.hpp"

#include "probe/node_path.hpp"
#include "probe/node_probes.hpp"
#include "util/logging.hpp"
#include "util/process_exit.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <map>
#include <set>

extern char** environ;

namespace probe {

namespace {

constexpr ProbeSpec k_probes[] = {
    {"env", "environment variables that steer TE, NCCL, CUDA and the loader", run_env_probe},
    {"system", "host name, OS release, kernel, architecture, container, glibc", run_system_probe},
    // Python before the driver and PCI probes: torch's link (the native probe, the longest path
    // of a probe with TE) starts on its own thread once python has found the packages.
    {"python", "Python interpreters and installed packages, without starting Python", run_python_probe},
    {"driver", "NVIDIA kernel driver from /proc/driver/nvidia (no vendor library)", run_driver_probe},
    {"pci", "NVIDIA GPUs on the PCI bus (libpci; works without a driver)", run_pci_probe},
    {"nvml", "driver and GPU details from NVML, in a bounded child process", run_nvml_probe, start_nvml_probe, nvml_needed},
    {"cuda_driver", "the libcuda the loader picks and its CUDA version (no cuInit)", run_cuda_driver_probe, start_cuda_driver_probe,
     cuda_driver_needed},
    {"libraries", "every copy of cuDNN, NCCL, NVRTC, cudart, cuBLAS, cuBLASLt and libcuda, and which one is loaded", run_libraries_probe,
     start_libraries_probe},
    {"native", "TE, flash-attn and torch native code linked as ld.so would: missing libraries and symbols", run_native_probe, nullptr,
     nullptr, start_native_probe, "python"},
};

} // namespace

Host Host::current() {
  Host host;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view text(*entry);
    auto eq = text.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    host.env.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  return host;
}

std::string Host::getenv(std::string_view name) const {
  auto it = env.find(std::string(name));
  return it == env.end() ? std::string() : it->second;
}

std::span<const ProbeSpec> probes() { return k_probes; }

void record_status(model::Facts& facts, std::string_view probe, std::string_view status, std::string_view reason) {
  std::string base = "probe." + std::string(probe);
  facts.set(base + ".status", std::string(status));
  if (reason.empty()) facts.erase(base + ".reason");
  else facts.set(base + ".reason", std::string(reason));
}

model::Facts probe_node(const Host& host, std::span<const std::string> only, const std::function<void()>& after_start) {
  using Clock = std::chrono::steady_clock;
  auto selected = [&](const ProbeSpec& spec) { return only.empty() || std::find(only.begin(), only.end(), spec.name) != only.end(); };
  // The vendor children first, while this process is still single-threaded and small: NVML's
  // init (tens of milliseconds on a GPU node) then overlaps the file-reading probes. The
  // libraries probe's threads start after them (the table lists it later), so no fork of a
  // vendor child here happens with them running.
  struct Started {
    std::unique_ptr<StartedProbe> probe;
    Clock::time_point at;
  };
  std::map<std::string_view, Started> started;
  // Made before the started probes' threads so that they share its values (an ELF file, a
  // METADATA, the interpreter scan each made once for the whole run, NodeFsMemo::share()).
  NodeFsMemo memo;
  node_set_file_cache(host.file_cache);
  for (const auto& spec : probes()) {
    if (!spec.start || !selected(spec)) continue;
    if (spec.needed && !host.deep) continue; // decided at its turn, from the facts before it
    auto at = Clock::now();
    if (auto p = spec.start(host)) started[spec.name] = Started{std::move(p), at}; // nullptr: at its turn
  }
  if (after_start) after_start();

  // Probes that wait for `name` start, on threads of their own (native after python), once:
  // when it says its facts are ready (Host::ready) or else when it returns.
  std::set<std::string_view> ready_called;
  auto start_waiting = [&](std::string_view name, const model::Facts& so_far) {
    if (!ready_called.insert(name).second) return;
    for (auto& [started_name, s] : started) s.probe->known(name, so_far);
    for (const auto& later : probes()) {
      if (!later.start_after || later.after != name || !selected(later)) continue;
      auto at = Clock::now();
      if (auto p = later.start_after(host, so_far)) started[later.name] = Started{std::move(p), at};
    }
  };
  Host probing = host;
  probing.ready = start_waiting;

  model::Facts facts;
  util::log::Laps laps("probe"); // -vv: each probe's end on the main thread (a started one: its finish)
  for (const auto& spec : probes()) {
    if (!selected(spec)) continue;
    std::string base = "probe." + std::string(spec.name);
    auto start = Clock::now();
    if (auto it = started.find(spec.name); it != started.end()) {
      start = it->second.at;
      it->second.probe->finish(facts);
    } else if (spec.needed && !host.deep) {
      auto need = spec.needed(host, facts);
      if (need.run) {
        util::log::debug("probe " + std::string(spec.name) + ": needed: " + need.why);
        spec.run(probing, facts);
      } else {
        record_status(facts, spec.name, "skipped", need.why + "; --deep asks anyway");
      }
    } else {
      spec.run(probing, facts);
    }
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    facts.set(base + ".seconds", seconds);
    start_waiting(spec.name, facts);
    laps.lap(spec.name);
    if (!facts.has(base + ".status")) record_status(facts, spec.name, "ok");
    auto status = facts.get_string(base + ".status").value_or("ok");
    if (status != "ok" && status != "skipped") {
      util::log::info("probe " + std::string(spec.name) + ": " + status + ": " + facts.get_string(base + ".reason").value_or(""));
    }
  }
  // "Nothing found" behind a permission error is not "not installed": the paths are a fact, and
  // `check` reports them (audit 2026-11-25, item 21).
  if (auto denied = node_denied_directories(); !denied.empty()) facts.set("probe.unreadable_paths", util::join(denied, "; "));
  facts.derive();
  laps.lap("derived");
  // The files the run mapped (every ELF object of torch's and TE's trees, 41 on the H200 node) are
  // unmapped when a one-shot process ends, not here: one munmap per object, with check's other
  // threads still running, was most of the probe's return there (1.1-1.4 ms).
  util::keep_until_exit(NodeFsMemo::share());
  return facts;
}

} // namespace probe
