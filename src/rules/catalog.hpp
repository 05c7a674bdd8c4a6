// The catalog of installable versions (rules/catalog/*.yaml, `packages:`): which releases of
// cuDNN, NCCL, TransformerEngine and flash-attn are really published, for which CUDA major,
// Python and PyTorch, whether pip gets a prebuilt wheel or builds from source, and where each
// entry came from. The fix search takes its version candidates only from here, so a printed
// `pip install X==V` names a release that exists for this node, and one the node can load: each
// release says what it needs of the node beyond its CUDA major, Python and torch (the glibc of its
// manylinux tag, the driver its device code needs per CUDA major) and which packages pip installs
// with it (`requires`), so a release is never proposed to a node that cannot load it.
#pragma once

#include "model/version.hpp"

#include <optional>
#include <string>
#include <vector>

namespace rules {

// A requirement a release brings (its Requires-Dist pin, or what its build needs first):
// "nvidia-cutlass-dsl==4.6.0.dev0", "nvidia-cudnn-frontend>=1.25.0".
struct PackageRequirement {
  std::string text;                         // as written in the catalog
  std::string name;                         // normalize_distribution(): nvidia-cutlass-dsl
  std::optional<model::VersionRange> range; // nullopt: any version
};

// The minimum driver for one CUDA major of a release's device code (major 0: every major), on
// GPUs of at least min_sm (0: every GPU; the Blackwell kernels of a CUDA 12.8 build need more).
struct DriverFloor {
  long cuda_major = 0;
  long min_sm = 0;
  model::Version version;
};

struct PackageRelease {
  model::Version version;
  std::vector<long> cuda_majors;             // CUDA majors it is built for; empty = any
  std::optional<model::VersionRange> python; // interpreters it installs on; nullopt = any
  std::optional<model::VersionRange> torch;  // PyTorch versions it works with; nullopt = any
  // pip gets a prebuilt wheel for these torch versions (flash-attn's release assets); nullopt
  // with prebuilt = true means always, with prebuilt = false never (pip builds from source).
  bool prebuilt = true;
  std::optional<model::VersionRange> prebuilt_torch;
  std::optional<model::VersionRange> prebuilt_python; // the Pythons of that build matrix; nullopt = any
  // What its prebuilt files need of the node: the glibc of their manylinux tag (or of the build
  // image, for linux_x86_64 wheels), and the driver their device code and CUDA runtime need, per
  // CUDA major. Absent: no requirement known. glibc applies when pip gets the prebuilt files
  // (always, unless prebuilt_torch says this node's torch gets a source build).
  std::optional<model::Version> glibc;
  std::vector<DriverFloor> driver;
  std::vector<PackageRequirement> requirements; // `requires`: installed with it (or before it)
  std::string build_note; // what a source build costs, as users report it
  std::string source;     // URL the entry was taken from
  int line = 0;           // in its catalog file, for diagnostics
};

struct Package {
  std::string name;        // distribution name on the index, e.g. nvidia-cudnn-cu12, flash-attn
  std::string fact;        // the fact an install sets: cudnn.version, flash_attn.version, te.version
  std::string library;     // cudnn | nccl for shared-library wheels (the load-order model decides
                           // whether TE and torch load them); empty for Python packages
  std::string requirement; // what pip is given, {version} replaced: "nvidia-cudnn-cu12=={version}"
  std::vector<std::string> pip_flags; // e.g. --no-build-isolation
  bool on_index = true;    // published on the package index (false: installed from a git URL)
  std::string note;        // one line on how it installs, shown with the fix
  std::string file;        // catalog file, for diagnostics
  int line = 0;
  std::vector<PackageRelease> releases; // ascending by version
};

struct Catalog {
  std::vector<Package> packages;

  // Packages that set a fact (several: cu12 and cu13 wheels of cuDNN).
  std::vector<const Package*> for_fact(std::string_view fact) const;
  // The package of a distribution name (case and -/_ insensitive), or nullptr.
  const Package* find(std::string_view name) const;
};

// Whether a release installs on a node and loads there: CUDA major, Python, torch, glibc and the
// driver (absent facts don't exclude).
struct NodeAbi {
  long cuda_major = 0;                 // 0 = unknown
  std::optional<model::Version> python;
  std::optional<model::Version> torch;
  std::optional<model::Version> glibc;  // system.glibc_version
  std::optional<model::Version> driver; // the driver CUDA calls reach: cuda-compat's when in use
  long max_sm = 0;                      // the newest GPU architecture on the node; 0 = unknown
};
// Why the release does not fit the node, in words ("needs glibc 2.28 (its manylinux tag); the
// node has 2.27"); empty when it fits.
std::string misfit(const PackageRelease& release, const NodeAbi& node);
bool installs_on(const PackageRelease& release, const NodeAbi& node);
// The same, and every requirement it brings has a release in the catalog that fits the node
// (a required package the catalog does not hold is not checked).
std::string misfit(const Catalog& catalog, const PackageRelease& release, const NodeAbi& node);
// The release pip picks for a requirement on this node: the newest final release of the
// catalog's package in its range that fits (a pinned `==V` only when V fits); nullptr when none.
const PackageRelease* resolve(const Catalog& catalog, const PackageRequirement& requirement, const NodeAbi& node,
                              const Package** package = nullptr);
// "nvidia-cutlass-dsl==4.6.0.dev0" read into a requirement; nullopt when it is not one.
std::optional<PackageRequirement> parse_requirement(std::string_view text);
// A prebuilt wheel exists for this node (else pip compiles: see build_note).
bool prebuilt_for(const PackageRelease& release, const NodeAbi& node);

// PEP 503 normalisation: lowercase, runs of -_. become '-'.
std::string normalize_distribution(std::string_view name);

} // namespace rules
