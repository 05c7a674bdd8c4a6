// Explanation: explain's answer for one workload on one node, with each attention backend's
// verdict and the reasons it is out. Part of the neutral output model (model/report.hpp).
#pragma once

#include "model/finding.hpp"
#include "model/verdict.hpp"
#include "model/workload.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace model {

// Why a backend (or a FusedAttention sub-backend) is out.
struct Reason {
  std::string rule;
  std::string message;
  std::vector<Fix> fixes;
};

struct BackendVerdict {
  bool available = true;
  // FusedAttention: F16_arbitrary_seqlen, F16_max512_seqlen, FP8; FlashAttention: the flash-attn
  // generation TE runs (FlashAttention2, FlashAttention3, FlashAttention4), where modelled.
  std::optional<std::string> sub_backend;
  std::vector<Reason> reasons;
  // Out only because TE prefers the next backend of its order (FlashAttention yields to
  // FusedAttention on Hopper+): TE still lists it among the available backends.
  bool deprioritized = false;
};

// explain's answer for one workload on one node.
struct Explanation {
  Workload workload;
  std::string te_version; // the TE version the selection was modelled for
  bool te_version_assumed = false;
  std::optional<std::string> selected;                         // FlashAttention, FusedAttention, UnfusedDotProductAttention; nullopt = none
  std::map<std::string, BackendVerdict, std::less<>> backends; // flash_attention, fused_attention, unfused_attention
  std::vector<Finding> findings;                               // warnings beyond TE's own checks, for this workload
  // Whether the job runs: TE's selection with everything known to make it fail folded in
  // (rules::decide_verdict). Every renderer and carrier reads this, never `selected` alone.
  WorkloadVerdict verdict;
};

} // namespace model
