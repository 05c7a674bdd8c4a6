// The catalog of installable versions (rules/catalog/*.yaml, `packages:`): which releases of
// cuDNN, NCCL, TransformerEngine and flash-attn are really published, for which CUDA major,
// Python and PyTorch, whether pip gets a prebuilt wheel or builds from source, and where each
// entry came from. The fix search takes its version candidates only from here, so a printed
// `pip install X==V` names a release that exists for this node.
#pragma once

#include "model/version.hpp"

#include <optional>
#include <string>
#include <vector>

namespace rules {

struct PackageRelease {
  model::Version version;
  std::vector<long> cuda_majors;             // CUDA majors it is built for; empty = any
  std::optional<model::VersionRange> python; // interpreters it installs on; nullopt = any
  std::optional<model::VersionRange> torch;  // PyTorch versions it works with; nullopt = any
  // pip gets a prebuilt wheel for these torch versions (flash-attn's release assets); nullopt
  // with prebuilt = true means always, with prebuilt = false never (pip builds from source).
  bool prebuilt = true;
  std::optional<model::VersionRange> prebuilt_torch;
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

// Whether a release installs on a node: CUDA major, Python and torch (absent facts don't exclude).
struct NodeAbi {
  long cuda_major = 0;                 // 0 = unknown
  std::optional<model::Version> python;
  std::optional<model::Version> torch;
};
bool installs_on(const PackageRelease& release, const NodeAbi& node);
// A prebuilt wheel exists for this node (else pip compiles: see build_note).
bool prebuilt_for(const PackageRelease& release, const NodeAbi& node);

// PEP 503 normalisation: lowercase, runs of -_. become '-'.
std::string normalize_distribution(std::string_view name);

} // namespace rules
