// Probes: host -> facts. Each probe reads the node through a Host (a filesystem root, an
// environment map, library overrides) so tests run on fake node trees under tests/fixtures/.
// A probe never throws and never fails the run: what it could not learn is recorded as
// probe.<name>.status (ok, not_installed, error, timeout, skipped) and probe.<name>.reason.
// No probe starts Python; none initialises CUDA (cuInit is the self-test's business).
#pragma once

#include "model/facts.hpp"
#include "util/file_cache.hpp"

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace probe {

struct Host {
  std::filesystem::path root = "/";            // the node's filesystem root ("/" on a real node)
  std::map<std::string, std::string> env;      // the environment the consumer (a job) would see
  std::optional<std::filesystem::path> python; // --python: the interpreter to examine
  // Library name -> file to dlopen instead of searching (tests point these at fake vendor libs).
  std::map<std::string, std::filesystem::path> library_overrides;
  std::chrono::milliseconds vendor_timeout{5000}; // bound on any call into a vendor library
  bool allow_vendor_calls = true;                 // false: never dlopen a vendor library
  // env is an image's (its config, for a preflight read from outside), not this process's: even
  // at root "/" the tree is then examined, not live, and nothing in it is loaded (tree_policy.hpp).
  bool image_environment = false;
  // Tests only: the fake vendor libraries of a fixture tree may be loaded as a live node's are.
  bool load_fixture_libraries = false;
  // false (the default): the vendor probes (NVML, libcuda) run only where the file probes left a
  // gap; true (--deep): always, for what only they know (GPU memory, MIG mode, libcuda's own
  // CUDA version). Loading NVML costs more than all the file probes together (37 ms of nvmlInit
  // on an H100 node), and the doctor runs before every Slurm job.
  bool deep = false;
  // Values that depend only on a file's identity (an ELF file's dynamic section, a version string
  // in a library, the native link check of a set of objects), kept across runs; a hint checked
  // against each file's identity, never trusted (util/file_cache.hpp). nullptr: none (--no-cache).
  std::shared_ptr<util::FileCache> file_cache;
  // Set by probe_node for the probes it runs: a probe calls it (on its own thread) once the facts
  // that the probes started after it read are set, before its own slower rest, so that those
  // start then (the python probe after its packages: the native link of torch does not wait for
  // the requirements' walk). Not calling it is correct too: they start when the probe returns.
  std::function<void(std::string_view probe, const model::Facts& facts)> ready;

  // The real node: root "/", this process's environment.
  static Host current();
  std::string getenv(std::string_view name) const; // "" when unset
};

// A probe whose slow part (a vendor child process) was started ahead of the others; finish()
// waits for it and writes its facts at the probe's place in the registry order.
class StartedProbe {
public:
  virtual ~StartedProbe() = default;
  virtual void finish(model::Facts& facts) = 0;
  // The facts of the probe named are known (it said so through Host::ready, or it returned),
  // with everything before it: a started probe whose later part reads them may go on with that
  // part on its own thread (the libraries probe's choices read the python probe's). Called on
  // the probing thread, once per probe name; finish() may come without it (--only).
  virtual void known(std::string_view /*probe*/, const model::Facts& /*facts*/) {}
};

struct ProbeSpec {
  std::string_view name;        // pci, nvml, cuda_driver, libraries, python, env, system
  std::string_view description; // one line for `probe --help` / -v
  void (*run)(const Host& host, model::Facts& facts);
  // Optional: starts the probe before the loop so it overlaps the others (run = start + finish);
  // nullptr from it (one CPU to use): the probe runs at its turn.
  std::unique_ptr<StartedProbe> (*start)(const Host& host) = nullptr;
  // Optional, for the vendor probes: unless Host::deep, the probe runs (at its place in the
  // order, not started early) only when this decides it is needed, given the facts of the probes
  // before it; otherwise it is recorded as skipped with the decision's reason.
  struct Need {
    bool run = false;
    std::string why;
  };
  Need (*needed)(const Host& host, const model::Facts& facts) = nullptr;
  // Optional: starts the probe on a thread of its own as soon as the probe named `after` has run,
  // with the facts as they are then, so that its slow part overlaps the probes in between;
  // finish() at its place in the order adds what needs their facts. nullptr from it: the probe
  // runs at its place as usual.
  std::unique_ptr<StartedProbe> (*start_after)(const Host& host, const model::Facts& facts) = nullptr;
  std::string_view after = {};
};

// The registry, in the order probes run (later probes may read earlier facts).
std::span<const ProbeSpec> probes();

// Runs every probe (or only those named) and derives dependent facts. Probes with a start hook
// are started first and run concurrently with the rest: the libraries probe's file scans, and
// with Host::deep the vendor children (NVML, libcuda), which without it run only where their
// `needed` hook asks for them; a probe with a start_after hook starts once the probe it names
// has run (the native probe after the python probe);
// their facts are still merged in registry order. Records probe.<name>.seconds for each (for a
// started probe: from its start to its finish, overlapping the others).
// after_start, when given, is called once, after the vendor children are forked and before the
// file probes run: the place for work the caller overlaps with probing on a thread of its own.
// The vendor children are already forked then; a later fork (the libraries probe's last-resort
// version query) only dlopens and calls one function in the child, which glibc keeps safe in a
// threaded parent (it resets the malloc and loader locks in the child).
model::Facts probe_node(const Host& host, std::span<const std::string> only = {}, const std::function<void()>& after_start = {});

// Helpers for probes: record a probe's outcome.
void record_status(model::Facts& facts, std::string_view probe, std::string_view status, std::string_view reason = {});

} // namespace probe
