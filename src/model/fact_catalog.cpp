#include "model/fact_catalog.hpp"

#include "model/workload.hpp"
#include "util/edit_distance.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <deque>
#include <iterator>
#include <unordered_map>
#include <vector>

namespace model {

namespace {

using T = ValueType;

// Consumers whose choice of library copy is recorded: <consumer>.<library>.{path,version,reason}.
#define NVTE_LOADED_BY(consumer, library)                                                               \
  {consumer "." library ".path", T::string, "the copy of " library " that " consumer " would load"},     \
  {consumer "." library ".version", T::version, "version of the copy " consumer " would load"},          \
  {consumer "." library ".reason", T::string, "why that copy wins for " consumer}

#define NVTE_LIBRARY(library)                                                                           \
  {library ".version", T::version, "version of the copy TE (else torch, else the loader) would load"},   \
  {library ".path", T::string, "path of that copy"},                                                      \
  {library ".major", T::integer, "major version of that copy"},                                           \
  {library ".copy_count", T::integer, "how many distinct copies are on the node"},                        \
  {library ".distinct_versions", T::integer, "how many different versions those copies have"},           \
  {library ".copies[].path", T::string, "a copy's real path"},                                            \
  {library ".copies[].version", T::version, "a copy's version"},                                          \
  {library ".copies[].major", T::integer, "a copy's major version"},                                      \
  {library ".copies[].source", T::string, "where it was found: ld_cache, ld_library_path, cuda_home, compat, site_packages, conda, system"}, \
  {library ".copies[].version_source", T::string, "how its version was read: file_name, header, dist_info, elf_string, loaded"}

// The Requires-Dist closure of a package (probe/requirements.hpp): what its distributions
// require that the interpreter does not have.
// clang-format off
#define NVTE_REQUIREMENTS(package)                                                                              \
  {package ".requirements.missing_count", T::integer,                                                          \
   "Requires-Dist entries of " package "'s distributions (markers and extras in effect) that none installed meets"}, \
  {package ".requirements.missing[].requirement", T::string, "an unmet requirement as pip names it (importlib-metadata>=1.0)"}, \
  {package ".requirements.missing[].name", T::string, "its distribution name, normalized (importlib_metadata)"}, \
  {package ".requirements.missing[].required_by", T::string, "the distribution whose METADATA requires it"},      \
  {package ".requirements.missing[].extra", T::string, "the extra that brings it (pytorch, jax, core_cu12); absent when none"}, \
  {package ".requirements.missing[].found_version", T::string, "the installed version outside the specifier; absent when not installed"}
// clang-format on

const FactSpec k_catalog[] = {
    {"gpu.count", T::integer, "number of NVIDIA GPUs"},
    {"gpu[].index", T::integer, "index of the GPU (NVML / PCI bus order)"},
    {"gpu[].name", T::string, "product name"},
    {"gpu[].architecture", T::string, "architecture (Volta, Ampere, Hopper, Blackwell, ...)"},
    {"gpu[].compute_capability", T::version, "compute capability, e.g. 8.0"},
    {"gpu[].sm", T::integer, "SM version, e.g. 80"},
    {"gpu[].memory_mib", T::integer, "memory in MiB"},
    {"gpu[].pci_device_id", T::string, "PCI device id, e.g. 0x2330"},
    {"gpu[].pci_bus_id", T::string, "PCI bus id, e.g. 0000:00:06.0"},
    {"gpu[].uuid", T::string, "GPU UUID"},
    {"gpu[].mig_enabled", T::boolean, "MIG mode on"},
    {"gpu[].source", T::string, "which probe named the GPU: nvml, driver, pci (override for --set)"},
    {"driver.version", T::version, "NVIDIA driver version"},
    {"driver.cuda_version", T::version, "highest CUDA version the driver supports"},
    {"driver.kernel_module", T::string, "open or proprietary kernel module"},
    {"driver.libcuda_path", T::string, "path of the libcuda the loader would use"},
    {"driver.libcuda_cuda_version", T::version,
     "CUDA version that libcuda reports (cuDriverGetVersion; a forward-compat libcuda reports its own)"},
    {"driver.cuda_version_source", T::string, "where driver.cuda_version came from: nvml, cuda_driver, driver_branch_table"},
    {"cuda.runtime_version", T::version, "CUDA runtime version in use (torch's CUDA build, else the toolkit)"},
    {"cuda.toolkit_version", T::version, "version of the CUDA toolkit in /usr/local/cuda"},
    {"cuda.toolkit_path", T::string, "path of that toolkit"},
    {"cuda.compat.libcuda_version", T::version, "version of the forward-compat libcuda under cuda*/compat"},
    {"cuda.compat.path", T::string, "path of the forward-compat libcuda"},
    {"cuda.compat.in_use", T::boolean, "the loader would pick the forward-compat libcuda"},
    NVTE_LIBRARY("cudnn"),
    NVTE_LIBRARY("nccl"),
    NVTE_LIBRARY("nvrtc"),
    NVTE_LIBRARY("cudart"),
    NVTE_LIBRARY("cublas"),
    NVTE_LIBRARY("cublaslt"),
    NVTE_LIBRARY("libcuda"),
    {"cudnn.loaded_by", T::string, "which consumer's choice cudnn.version reports: transformer_engine, torch, loader"},
    {"cudnn.copies_disagree", T::boolean, "the copies of cuDNN on the node have different versions"},
    {"nccl.copies_disagree", T::boolean, "the copies of NCCL on the node have different versions"},
    {"nvrtc.copies_disagree", T::boolean, "the copies of NVRTC on the node have different versions"},
    {"cudnn.copies[].missing_sublibrary_count", T::integer,
     "sub-libraries of a loaded cuDNN copy (libcudnn_adv.so.9, libcudnn_engines_*.so.9, ...) missing beside it"},
    {"cudnn.copies[].missing_sublibraries", T::string, "their file names, ', '-separated"},
    {"cudnn.copies[].distribution", T::string, "the pip distribution whose RECORD lists the copy (nvidia-cudnn-cu13)"},
    {"cudnn.copies[].distribution_version", T::string, "that distribution's version, as pip names it (9.19.0.56)"},
    {"cublaslt.copies_disagree", T::boolean, "the copies of cuBLASLt on the node have different versions"},
    NVTE_LOADED_BY("torch", "cudnn"),
    NVTE_LOADED_BY("torch", "nccl"),
    NVTE_LOADED_BY("torch", "nvrtc"),
    NVTE_LOADED_BY("torch", "cudart"),
    NVTE_LOADED_BY("torch", "cublas"),
    NVTE_LOADED_BY("torch", "cublaslt"),
    NVTE_LOADED_BY("te", "cublas"),
    NVTE_LOADED_BY("te", "cublaslt"),
    NVTE_LOADED_BY("te", "cudnn"),
    NVTE_LOADED_BY("te", "nvrtc"),
    NVTE_LOADED_BY("te", "nccl"),
    NVTE_LOADED_BY("te", "cudart"),
    {"te.cudnn.torch_first.path", T::string,
     "the cuDNN TE runs on when torch is imported first (TE's own pick, mapped beside torch's copy)"},
    {"te.cudnn.torch_first.version", T::version, "its version"},
    {"te.cudnn.te_first.path", T::string, "the cuDNN TE runs on when TE is imported before torch (TE's own pick)"},
    {"te.cudnn.te_first.version", T::version, "its version"},
    {"torch.cudnn.te_first.path", T::string, "the cuDNN torch binds to when TE is imported first (TE's copy when the SONAMEs agree)"},
    {"torch.cudnn.te_first.version", T::version, "its version"},
    {"torch.cudnn.check_fails", T::boolean,
     "torch's cuDNN check (torch.backends.cudnn) rejects the copy torch loads itself: older than torch.cudnn.compiled_version"},
    {"torch.cudnn.te_first.fails", T::boolean,
     "torch's cuDNN check (torch.backends.cudnn) raises 'cuDNN version incompatibility' when TE is imported first"},
    {"cudnn.mapped_copies.torch_first", T::integer, "cuDNN copies a process maps after `import torch` then `import transformer_engine`"},
    {"cudnn.mapped_copies.te_first", T::integer, "cuDNN copies a process maps after `import transformer_engine` then `import torch`"},
    {"nvrtc.mapped_copies.torch_first", T::integer, "NVRTC copies a process maps after `import torch` then `import transformer_engine`"},
    {"python.executable", T::string, "the interpreter examined (the one with TE, else torch, else python3 on PATH)"},
    {"python.version", T::version, "its version"},
    {"python.prefix", T::string, "its sys.prefix (venv or conda env root)"},
    {"python.site_packages", T::string, "its site-packages directory"},
    {"python.env_kind", T::string, "venv, conda or system"},
    {"python.interpreters[].path", T::string, "an interpreter found on the node"},
    {"python.interpreters[].version", T::version, "its version"},
    {"python.interpreters[].site_packages", T::string, "its site-packages directory"},
    {"python.bytecode[].package", T::string, "a package whose bytecode the probe checked: torch, transformer_engine"},
    {"python.bytecode[].status", T::string,
     "whether `import` finds usable bytecode for its __init__.py: ok, missing or stale (each process then compiles it from source)"},
    {"python.bytecode[].reason", T::string, "what the probe read: the __pycache__ file, its header against the source's mtime and size"},
    {"python.bytecode[].writable", T::boolean, "the user the doctor runs as may write where Python keeps that bytecode"},
    {"torch.version", T::version, "PyTorch version"},
    {"torch.cuda_version", T::version, "CUDA version PyTorch was built for"},
    {"torch.path", T::string, "PyTorch package directory"},
    {"torch.cudnn.compiled_version", T::version,
     "the cuDNN torch was built against: the nvidia-cudnn wheel its METADATA pins (its cuDNN check needs that major and at least that "
     "minor)"},
    {"te.version", T::version, "TransformerEngine version"},
    {"te.distribution", T::string, "the TE distribution name (transformer_engine, transformer-engine-cu12, ...)"},
    {"te.path", T::string, "TransformerEngine package directory"},
    {"te.cuda_major", T::integer, "CUDA major of the TE build (from the cu12/cu13 distribution)"},
    {"te.core_library.path", T::string, "TE's core library (libtransformer_engine.so) as its package holds it"},
    {"te.torch_extension.path", T::string, "TE's PyTorch extension (transformer_engine_torch*.so) as TE's own search finds it"},
    {"te.torch_extension.present", T::boolean,
     "TE's search finds exactly one PyTorch extension (recorded where PyTorch or transformer_engine_torch is installed)"},
    {"te.torch_extension.reason", T::string, "why TE's search finds no PyTorch extension, or several"},
    NVTE_REQUIREMENTS("te"),
    NVTE_REQUIREMENTS("torch"),
    NVTE_REQUIREMENTS("flash_attn"),
    NVTE_REQUIREMENTS("flash_attn_3"),
    NVTE_REQUIREMENTS("flash_attn_4"),
    // The native probe (native_probe.cpp): one entry per TE / flash-attn / apex / torch shared
    // object an interpreter would load, linked the way ld.so would after `import torch`.
    {"native.extension_count", T::integer, "shared objects the native probe linked"},
    {"native.broken_count", T::integer, "of those, how many would not link (a symbol, library or version missing)"},
    {"native.object_count", T::integer, "objects in the modelled process (their NEEDED trees included)"},
    {"native.extensions[].package", T::string, "whose it is: te, flash_attn, flash_attn_3, apex, torch"},
    {"native.extensions[].path", T::string, "its node path"},
    {"native.extensions[].file", T::string, "its file name"},
    {"native.extensions[].distribution", T::string, "the pip distribution it belongs to, as METADATA names it"},
    {"native.extensions[].distribution_version", T::string, "that distribution's version as pip names it"},
    {"native.extensions[].built_for_torch", T::string,
     "the torch release it was built for, where its files say it (a version label, direct_url.json, a Requires-Dist pin)"},
    {"native.extensions[].built_for_torch_source", T::string, "which file said it"},
    {"native.extensions[].links", T::boolean, "every NEEDED library, non-weak symbol and required version resolves"},
    {"native.extensions[].unresolved_count", T::integer, "undefined non-weak symbols that no object in its scope defines"},
    {"native.extensions[].unresolved", T::string, "the first few of them, demangled, '; '-separated"},
    {"native.extensions[].first_symbol_mangled", T::string, "the first one as ld.so prints it"},
    {"native.extensions[].torch_symbol_count", T::integer, "unresolved symbols of torch's namespaces (c10::, at::, torch::, caffe2::)"},
    {"native.extensions[].torch_symbol", T::string, "the first of them, demangled"},
    {"native.extensions[].torch_library", T::string, "the torch library that should define it (libc10.so, libtorch_cpu.so, ...)"},
    {"native.extensions[].cublaslt_symbol_count", T::integer, "unresolved cuBLASLt symbols (cublasLt*, or a version of libcublasLt)"},
    {"native.extensions[].cublaslt_symbol", T::string, "the first of them"},
    {"native.extensions[].cublaslt_library", T::string, "the libcublasLt copy the loader picks, which lacks it"},
    {"native.extensions[].cublas_distribution", T::string,
     "the pip distribution of that copy (its RECORD), else the one of its CUDA major"},
    {"native.extensions[].other_symbol_count", T::integer, "other unresolved symbols"},
    {"native.extensions[].other_symbol", T::string, "the first of them, demangled"},
    {"native.extensions[].other_library", T::string, "the file its version is required of, when it is versioned"},
    {"native.extensions[].missing_library_count", T::integer, "NEEDED libraries the loader's search does not find"},
    {"native.extensions[].missing_library", T::string, "the first of them"},
    {"native.extensions[].missing_libraries", T::string, "all of them with the object that needs each, '; '-separated"},
    {"native.extensions[].missing_version_count", T::integer, "symbol versions a loaded file does not define (version `X' not found)"},
    {"native.extensions[].missing_versions", T::string, "those versions, their files and the objects that require them"},
    {"flash_attn.version", T::version, "flash-attn (FlashAttention 2) version"},
    {"flash_attn_3.version", T::version, "flash-attn-3 (FlashAttention 3) version; flashattn-hopper before its rename"},
    {"flash_attn_4.version", T::version, "flash-attn-4 (FlashAttention 4, CuTe DSL) version"},
    {"megatron_core.version", T::version, "megatron-core version"},
    {"cudnn_frontend.version", T::version,
     "nvidia-cudnn-frontend version (the cuDNN frontend headers and bindings TE >= 2.18 requires; absent when not installed)"},
    {"package.*.version", T::version, "version of an installed Python distribution (normalized name)"},
    {"env.*", T::string, "an environment variable"},
    {"system.hostname", T::string, "host name"},
    {"system.os_id", T::string, "os-release ID"},
    {"system.os_version", T::string, "os-release VERSION_ID"},
    {"system.os_name", T::string, "os-release PRETTY_NAME"},
    {"system.kernel", T::string, "kernel release"},
    {"system.arch", T::string, "machine architecture"},
    {"system.container", T::string, "container runtime hint: docker, podman, kubernetes, lxc, none"},
    {"system.glibc_version", T::version, "glibc version"},
    {"doctor.assumed_te_version", T::version,
     "the TE release explain models when te.version is absent (the rules' selection default); set by the doctor, not probed"},
    {"doctor.workloads", T::integer,
     "how many workloads this check evaluates (--workload, --hf-config, --megatron-args, workloads_dir); set by check"},
    {"explain.selected", T::string, "the backend TE would select for the workload (none when no backend is available)"},
    {"explain.fused_sub_backend", T::string, "FusedAttention's sub-backend for the workload"},
    {"explain.flash_sub_backend", T::string, "the flash-attn generation TE runs: FlashAttention2, FlashAttention3 or FlashAttention4"},
    {"explain.flash_attention.available", T::boolean, "FlashAttention passed TE's filters"},
    {"explain.fused_attention.available", T::boolean, "FusedAttention passed TE's filters"},
    {"explain.unfused_attention.available", T::boolean, "UnfusedDotProductAttention passed TE's filters"},
    {"explain.reasons", T::string, "every reason a backend is out, one per line: \"flash_attention: message\" (for messages)"},
    {"selftest.*.status", T::string, "a self-test check's outcome: ok, failed, error (crash, timeout), skipped"},
    {"selftest.*.ok", T::boolean, "the check ran and passed (absent when it was skipped)"},
    {"selftest.*.error", T::string, "the vendor's own error text (cuDNN, NVRTC, NCCL, CUDA) of the first failed case"},
    {"selftest.*.stage", T::string,
     "where the first failed case stopped: load, init, graph, support, plan, compile, load_module, launch, execute, numerics, allreduce, "
     "call, disagree, child"},
    {"selftest.*.class", T::string, "the first failed case's failure class: sublibrary_load, timeout, crash, plan_build, numerics, other"},
    {"selftest.*.failed_case", T::string, "the shape of the first failed case"},
    {"selftest.*.phase", T::string,
     "the phase a check's child was in when it crashed or timed out: load, init, graph, plan, execute, reference, compare, compile, "
     "launch, comm, allreduce"},
    {"selftest.*.timed_out", T::boolean, "the first failed case's child was killed at its timeout (false: it crashed or exited)"},
    {"selftest.*.seconds", T::number, "wall time of the check's child processes"},
    {"selftest.*.cases", T::integer, "how many cases (workload shapes) the check ran"},
    {"selftest.*.failed", T::integer, "how many of them failed"},
    {"selftest.*.max_abs_err", T::number, "largest absolute difference from the reference over the cases"},
    {"selftest.*.max_rel_err", T::number, "largest absolute difference over the largest reference value"},
    {"selftest.*.log", T::string, "the compiler log of a failed NVRTC compilation"},
    {"selftest.*.cuda_major", T::integer, "CUDA major of the NVRTC copy (selftest.nvrtc) or of the driver (selftest.driver)"},
    {"selftest.*.driver_cuda_major", T::integer, "CUDA major the driver supports, as the NVRTC check saw it"},
    {"selftest.*.bus_bandwidth_gbps", T::number, "NCCL all-reduce bus bandwidth, GB/s (0 with one GPU)"},
    {"selftest.*.gpus", T::integer, "GPUs in the NCCL communicator"},
    {"selftest.*.backend", T::string, "the FusedAttention sub-backend TE's nvte_get_fused_attn_backend chose (none when none)"},
    {"selftest.*.predicted", T::string, "the sub-backend explain predicted for the same workload"},
    {"selftest.*.te_present", T::boolean, "the Python tier could import transformer_engine"},
    {"selftest.*.agrees", T::boolean,
     "cuDNN's support answer (cudnn_support) agrees with the self-test's plan build from heuristics mode A in every case"},
    {"probe.*.status", T::string, "a probe's outcome: ok, not_installed, symbol_missing, error, timeout, crashed, skipped"},
    {"probe.*.missing_symbols", T::string, "entry points the probe's vendor library lacks, comma-separated"},
    {"probe.*.reason", T::string, "why a probe did not succeed"},
    {"probe.*.seconds", T::number, "how long a probe took"},
    {"probe.unreadable_paths", T::string,
     "node directories the probes could not read (permission denied), '; '-separated: what they hold is unknown"},
    {"probe.limit_exceeded", T::string,
     "the input-scaling caps a probe ran into (a directory walk too deep or too large), '; '-separated: the command exits 3 with them"},
};

#undef NVTE_LIBRARY
#undef NVTE_LOADED_BY

// What a preflight (check --root IMAGE --node-facts / --node-root) checked against what: set by
// the doctor, not probed (docs/preflight.md).
const FactSpec k_preflight_facts[] = {
    {"preflight.image", T::string, "the container image a preflight checked (--image, else its root directory)"},
    {"preflight.image_root", T::string, "the directory the image's userspace was read from (--root)"},
    {"preflight.image_env", T::string, "where the image's environment came from: process, an OCI config file, or default"},
    {"preflight.node", T::string, "the node a preflight checked the image against (its host name)"},
    {"preflight.node_facts", T::string, "where the node's GPU and driver facts came from: a snapshot or report, or probed:DIR"},
};

// Every fact name: the table above, then the preflight's.
const std::vector<FactSpec>& all_specs() {
  static const std::vector<FactSpec> all = [] {
    std::vector<FactSpec> out(std::begin(k_catalog), std::end(k_catalog));
    out.insert(out.end(), std::begin(k_preflight_facts), std::end(k_preflight_facts));
    return out;
  }();
  return all;
}

bool segment_match(std::string_view pattern, std::string_view name) {
  auto ps = util::split(pattern, '.');
  auto ns = util::split(name, '.');
  if (ps.size() != ns.size()) return false;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (ps[i] != "*" && ps[i] != ns[i]) return false;
  }
  return true;
}

} // namespace

std::span<const FactSpec> fact_catalog() { return all_specs(); }

std::string normalize_fact_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (std::size_t i = 0; i < name.size(); ++i) {
    out += name[i];
    if (name[i] == '[') {
      while (i + 1 < name.size() && name[i + 1] != ']') ++i;
    }
  }
  return out;
}

// "workload.<key>" names come from the workload key table.
const FactSpec* find_workload_fact_spec(std::string_view key) {
  static const std::deque<FactSpec> specs = [] {
    static std::deque<std::string> names;
    std::deque<FactSpec> out;
    for (const auto& key_spec : workload_keys()) {
      names.push_back("workload." + std::string(key_spec.name));
      out.push_back(FactSpec{names.back(), key_spec.type, key_spec.description});
    }
    return out;
  }();
  for (const auto& spec : specs) {
    if (spec.pattern.substr(9) == key) return &spec;
  }
  return nullptr;
}

namespace {

// The catalog indexed once, for the lookups every fact that is set or named in a rule makes:
// exact patterns, their collection-relative forms ("gpu.sm" for "gpu[].sm"), and the wildcard
// patterns. Each map keeps the first spec of the catalog's order, as the scans did.
struct SpecIndex {
  std::unordered_map<std::string, const FactSpec*> exact;
  std::unordered_map<std::string, const FactSpec*> relative;
  std::vector<const FactSpec*> wildcards;
};

const SpecIndex& spec_index() {
  static const SpecIndex index = [] {
    SpecIndex out;
    for (const auto& spec : all_specs()) {
      out.exact.emplace(std::string(spec.pattern), &spec);
      std::string without = normalize_fact_name(spec.pattern);
      std::string stripped;
      for (std::size_t i = 0; i < without.size(); ++i) {
        if (without.compare(i, 2, "[]") == 0) {
          ++i;
          continue;
        }
        stripped += without[i];
      }
      if (stripped != spec.pattern) out.relative.emplace(std::move(stripped), &spec);
      if (spec.pattern.find('*') != std::string_view::npos) out.wildcards.push_back(&spec);
    }
    return out;
  }();
  return index;
}

} // namespace

const FactSpec* find_fact_spec(std::string_view name) {
  if (name.starts_with("workload.")) return find_workload_fact_spec(name.substr(9));
  const SpecIndex& index = spec_index();
  std::string normalized = normalize_fact_name(name);
  if (auto it = index.exact.find(normalized); it != index.exact.end()) return it->second;
  // A collection-relative name: "gpu.sm" means "gpu[].sm" for each GPU.
  if (auto it = index.relative.find(normalized); it != index.relative.end()) return it->second;
  for (const FactSpec* spec : index.wildcards) {
    if (segment_match(spec->pattern, normalized)) return spec;
  }
  return nullptr;
}

FactShape fact_shape(std::string_view name) {
  FactShape shape;
  if (name.starts_with("workload.") || name == "workload") return shape; // the workload key table is flat
  // The patterns' segments, split once: reading a snapshot asks this for every member of its
  // JSON, and splitting every pattern each time was nine tenths of loading a node's facts (21 KB
  // of facts with TE: 100 M instructions, 10 ms).
  static const std::vector<std::vector<std::string_view>> k_patterns = [] {
    std::vector<std::vector<std::string_view>> out;
    for (const auto& spec : all_specs()) out.push_back(util::split(spec.pattern, '.'));
    return out;
  }();
  std::string normalized = normalize_fact_name(name);
  auto want = util::split(normalized, '.');
  for (const auto& have : k_patterns) {
    if (have.size() < want.size()) continue;
    bool prefix = true;
    for (std::size_t i = 0; i + 1 < want.size() && prefix; ++i) prefix = have[i] == "*" || have[i] == want[i];
    if (!prefix) continue;
    std::string_view last = have[want.size() - 1];
    if (last == "*" || last == want.back()) {
      (have.size() == want.size() ? shape.value : shape.object) = true;
    } else if (last.size() == want.back().size() + 2 && last.starts_with(want.back()) && last.ends_with("[]")) {
      shape.collection = true;
    }
  }
  return shape;
}

std::vector<std::string> suggest_fact_names(std::string_view unknown) {
  // The catalog's names as a user writes them ("gpu[].name" -> "gpu.name"), once: a rules file
  // with many unknown names asks for hints once per name.
  static const std::vector<std::string> k_plain = [] {
    std::vector<std::string> names;
    for (const auto& spec : all_specs()) {
      std::string candidate(spec.pattern);
      std::string plain;
      for (std::size_t i = 0; i < candidate.size(); ++i) {
        if (candidate.compare(i, 2, "[]") == 0) {
          ++i;
          continue;
        }
        plain += candidate[i];
      }
      if (plain.find('*') == std::string::npos) names.push_back(std::move(plain));
    }
    return names;
  }();
  const std::size_t limit = std::max<std::size_t>(3, unknown.size() / 3);
  std::vector<std::pair<std::size_t, std::string_view>> scored;
  for (const auto& plain : k_plain) {
    std::size_t distance = util::edit_distance(unknown, plain, limit);
    if (distance <= limit) scored.emplace_back(distance, plain);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < scored.size() && i < 3; ++i) out.emplace_back(scored[i].second);
  return out;
}

} // namespace model
