// ObservedSelection: what TE itself logged when it chose a workload's attention backend (its
// NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2 lines), and how that compares with the doctor's Explanation.
// A difference is a knowledge bug of the doctor (or a log from a build the rules do not know).
#pragma once

#include "model/explanation.hpp"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace model {

struct ObservedSelection {
  std::string source; // "train.log:1234": where the `Running with config=` line was
  // The node the workload ran on, as TE logged it (TE, SM, cuDNN, CUDA and flash-attn
  // versions, NVTE_* switches), by fact name: for this workload these override the node's, as
  // --set does. An empty value erases the fact (TE logged "not installed").
  std::vector<std::pair<std::string, std::string>> node_facts;
  // One line per field of TE's config: "qkv_layout = 'thd_thd_thd' -> qkv_layout=thd_thd_thd"
  // (what -v shows), and the fields the doctor has no use for.
  std::vector<std::string> parsed_fields;
  std::vector<std::string> ignored_fields;
  std::size_t ignored_lines = 0;      // lines of the whole log that are none of TE's selection lines
  std::vector<std::string> disabling; // TE's "Disabling ..." lines, in order
  // TE's "Available backends" line, by backend name (flash_attention, fused_attention,
  // unfused_attention); empty when the log lacks it.
  std::map<std::string, bool, std::less<>> available;
  std::optional<std::string> fused_sub_backend; // F16_max512_seqlen, F16_arbitrary_seqlen, FP8
  std::optional<std::string> flash_version;     // "2.7.4.post1" (TE ≥ 2.3 logs it)
  bool selected_known = false;                  // the log says which backend ran (or that none did)
  std::optional<std::string> selected;          // FlashAttention, FusedAttention, UnfusedDotProductAttention
  bool raised_no_backend = false;               // the "No dot product attention backend" ValueError
  // What the command line changed from what TE ran with: "--set cudnn.version=9.10.0 (the log:
  // 9.3.0)", "--workload-set cp_comm_type=p2p (the log: all_gather)". The log's values are
  // defaults, not a lock; once one is changed, TE's logged choice is not this workload's: it is
  // neither the verdict's evidence nor compared with the doctor's.
  std::vector<std::string> changed;
};

// One point where TE's log and the doctor disagree.
struct SelectionDifference {
  std::string what;                      // "selected", "flash_attention", "fused sub-backend", ...
  std::string te;                        // TE's answer ("FusedAttention", "no", "F16_max512_seqlen")
  std::string doctor;                    // the doctor's
  std::vector<std::string> te_reasons;   // TE's Disabling lines for that backend
  std::vector<std::string> doctor_rules; // the rules that took the backend out in the doctor
};

// TE's logged verdict against the doctor's, as the conformance test compares them: the selected
// backend, each backend's availability (one TE deprioritizes still counts as available), the
// FusedAttention sub-backend and the flash-attn generation. Only what the log says is compared.
std::vector<SelectionDifference> compare_selection(const ObservedSelection& te, const Explanation& doctor);

} // namespace model
