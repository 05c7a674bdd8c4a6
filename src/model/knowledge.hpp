// Knowledge: where the doctor's knowledge ends. The rules and TE's conformance data model TE up
// to one release, the catalog knows cuDNN and flash-attn up to their newest listed wheels, and
// the selection was checked against TE's own selector on a set of GPU architectures. A node
// beyond any of these still gets verdicts, but they are extrapolated; this says which facts.
// Part of the neutral output model (model/report.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace model {

// The id of the finding that says a fact is extrapolated (rules::knowledge_finding).
inline constexpr std::string_view k_knowledge_finding_id = "knowledge-extrapolated";

// One fact whose value lies beyond what the rules and the conformance data cover.
struct Extrapolated {
  std::string fact;   // te.version, cudnn.version, flash_attn.version, gpu.compute_capability, ...
  std::string value;  // the node's (or --set) value
  std::string newest; // the newest value the doctor knows ("10.0, 10.3, 12.0" for GPUs)
};

struct Knowledge {
  std::string newest_te_modelled;  // the TE the selection was checked against (conformance)
  std::string newest_te_published; // the newest TE release, assumed when TE is absent
  std::string assumed_te;          // the TE the verdicts model when te.version is absent, else empty
  std::string newest_cudnn_known;  // the newest cuDNN of the catalog
  std::string newest_flash_attn_known;
  std::string newest_flash_attn_3_known;
  std::string newest_flash_attn_4_known;
  std::vector<std::string> modelled_compute_capabilities; // "8.0", "9.0", ...
  std::vector<Extrapolated> extrapolated;                 // empty: everything is modelled
};

} // namespace model
