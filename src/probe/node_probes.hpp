// The probes of the registry (probe.cpp lists them in order). Each reads the node through the
// Host, writes what it learnt into facts and records probe.<name>.status; none throws.
#pragma once

#include "model/facts.hpp"
#include "probe/probe.hpp"

namespace probe {

// env.NAME for the variables that decide what a job loads and selects (NVTE_*, NCCL_*, CUDA_*, ...).
void run_env_probe(const Host& host, model::Facts& facts);
// system.*: host name, os-release, kernel, architecture, container hints, glibc.
void run_system_probe(const Host& host, model::Facts& facts);
// driver.*: /proc/driver/nvidia (version, kernel module flavour, GPUs the driver bound); no
// vendor library.
void run_driver_probe(const Host& host, model::Facts& facts);
// gpu[i].*: NVIDIA GPUs on the PCI bus (libpci on root/sys/bus/pci); works without a driver.
void run_pci_probe(const Host& host, model::Facts& facts);
// driver.* and gpu[i].* from NVML, in a child process bounded by Host::vendor_timeout.
void run_nvml_probe(const Host& host, model::Facts& facts);
// The same, started ahead: the NVML child runs until finish() collects it.
std::unique_ptr<StartedProbe> start_nvml_probe(const Host& host);
// Whether NVML must be asked after all (a GPU the PCI table does not know, GPUs the driver's files
// do not list, an NVML library given explicitly) and why, or why not.
ProbeSpec::Need nvml_needed(const Host& host, const model::Facts& facts);
// driver.libcuda_path and the CUDA version of the libcuda the loader picks (never cuInit).
void run_cuda_driver_probe(const Host& host, model::Facts& facts);
std::unique_ptr<StartedProbe> start_cuda_driver_probe(const Host& host);
// Whether libcuda must be asked for its CUDA version (a driver branch newer than the branch
// table, a libcuda given explicitly) and why, or why not.
ProbeSpec::Need cuda_driver_needed(const Host& host, const model::Facts& facts);
// Written elsewhere (libraries_probe.cpp, python_probe.cpp).
void run_libraries_probe(const Host& host, model::Facts& facts);
// The same, started before the other probes: every library's copies (which need no fact of the
// python probe) and the directories any TE release globs are read on threads of their own while
// the python probe runs; finish() makes torch's and TE's choices with its facts.
std::unique_ptr<StartedProbe> start_libraries_probe(const Host& host);
void run_python_probe(const Host& host, model::Facts& facts);
// native.*: TE's, flash-attn's and torch's shared objects linked the way ld.so would link them
// after `import torch` (native_probe.cpp); skipped without TE and flash-attn.
void run_native_probe(const Host& host, model::Facts& facts);
// The same, with torch's link made on a thread of its own from the python probe's facts, while
// the libraries probe runs; finish() links TE and flash-attn, which need the libraries' facts.
std::unique_ptr<StartedProbe> start_native_probe(const Host& host, const model::Facts& facts);

} // namespace probe
