// The Python dependency closure of the packages the doctor judges: every Requires-Dist of
// TransformerEngine (each TE distribution, with the extras in effect), PyTorch and flash-attn
// (2, 3, 4) checked against what the interpreter's sys.path really holds — names compared
// PEP 503-normalised, versions by PEP 440 (pep440.hpp), environment markers evaluated for the
// interpreter (pep508_markers.hpp). pip skips this closure with --no-deps and --target, which
// is how source builds of TE are often installed; `import transformer_engine` then fails on the
// first module it lacks while the doctor would otherwise see a complete TE.
//
// Facts, per package (te, torch, flash_attn, flash_attn_3, flash_attn_4), when it is installed:
//   <pkg>.requirements.missing_count
//   <pkg>.requirements.missing[i].{requirement, name, required_by, extra, found_version}
#pragma once

#include "model/facts.hpp"
#include "probe/dist_info.hpp"
#include "probe/interpreters.hpp"
#include "probe/pep508_markers.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace probe {

struct Host;

// Which extras of a distribution are in effect. pip records no extras, so the doctor infers
// them from what is installed: TE's [pytorch] where torch is, [jax] where jax is; of TE's
// alternative core extras (core, core_cu12, core_cu13) one is met by any installed core, else
// the one for the node's CUDA major is the one that is missing.
struct ExtraContext {
  bool torch = false;             // torch is installed
  bool jax = false;               // jax or jaxlib is installed
  std::optional<long> cuda_major; // TE's or torch's CUDA major
};

struct UnmetRequirement {
  Requirement requirement;
  std::string required_by;                  // distribution name as written in its METADATA
  std::string extra;                        // the extra that brings it, "" for none
  std::optional<std::string> found_version; // installed, but outside the specifier
};

struct RequirementCheck {
  std::vector<UnmetRequirement> unmet;
  std::vector<std::string> problems; // unreadable Requires-Dist or marker, one line each
};

// The requirements of dists (one package's distributions) that installed does not meet.
// installed maps a normalized name to the version first on sys.path. A requirement whose
// marker or specifier cannot be evaluated is not claimed unmet.
RequirementCheck check_requirements(const std::vector<const Distribution*>& dists, const std::map<std::string, std::string>& installed,
                                    const pep508::MarkerEnvironment& env, const ExtraContext& extras);

// Runs the closure for every package above that the interpreter has and writes the facts.
void record_requirements(const Host& host, const Interpreter& it, const std::vector<Distribution>& packages, model::Facts& facts,
                         std::vector<std::string>& problems);

} // namespace probe
