// Changes and commands for the fix search (internal to src/rules): a Change is one edit of the
// model's inputs (an environment variable, a workload key, a package release, a GPU class); it
// applies to facts and workload, renders as the shell command that makes it on this node
// (shell-quoted from node data), and rule-written commands are read back into Changes so they can
// be re-evaluated like the search's own candidates.
#pragma once

#include "model/facts.hpp"
#include "model/finding.hpp"
#include "model/workload.hpp"
#include "rules/catalog.hpp"

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace rules::detail {

// requirement: `pip install X` of a package the catalog does not describe, which the node records
// as an unmet requirement of TE, torch or flash-attn (<owner>.requirements.missing[]): pip meets
// it, so the entry goes; the version pip takes is not modelled.
enum class ChangeKind { env, workload, package, gpu, requirement };

struct Change {
  ChangeKind kind = ChangeKind::env;
  std::string name;                 // env var, workload key, the package's fact, "gpu.sm"
  std::optional<std::string> value; // nullopt: unset the env var; requirement: the word pip is given
  const Package* package = nullptr; // ChangeKind::package
  const PackageRelease* release = nullptr;
};

// The node's CUDA major (torch's, else the runtime's, else the driver's), Python and torch.
NodeAbi node_abi(const model::Facts& facts);

// Applies a change; false with why_not when it cannot apply (a bad workload value, a release
// whose `requires` has no release for this node). A package install also sets what its
// `requires` makes pip install (resolved in catalog, when given) and drops the recorded unmet
// requirements it meets (<owner>.requirements.missing[]).
bool apply_change(const Change& change, model::Facts& facts, model::Workload& workload, std::string& why_not,
                  const Catalog* catalog = nullptr);

// The prefixes of every fact a change can move, through apply_change() and the relinking of the
// library copies that follows it in the search: kept beside apply_change so the two agree.
std::vector<std::string> moved_fact_prefixes(const Change& change);

// What makes TE load the wheel of library when another copy still wins: CUDNN_PATH set to the
// wheel (and CUDNN_HOME unset, which TE reads first). Empty when nothing is known to help.
std::vector<Change> load_order_steps(const model::Facts& facts, const std::string& library);

// The fix for a set of changes: kind, the command (pip with the node's interpreter, export /
// unset, joined by &&), a description, and `changes` as {fact: value}.
model::Fix render_changes(const std::vector<Change>& changes, const model::Facts& facts);

// A rule-written command read back into changes.
struct Interpreted {
  bool ok = false;
  std::string why_not;              // when !ok: why the model cannot check it
  std::vector<Change> changes;
  std::string label;                // "cuDNN 9.3.0.75", "unset NVTE_FLASH_ATTN"
  bool only_load_order_step = false; // just `export CUDNN_PATH=...` (the companion of a cuDNN install)
  bool resolved_version = false;    // a range (>=2.17) was resolved to one catalog release
};
Interpreted interpret_command(const std::string& command, const Catalog& catalog, const NodeAbi& node);

// Why a checked command did not verify, in words: it could not take effect (why_not), the
// finding still fires, the workload has no backend, or another problem appears.
std::string failure_reason(const std::string& label, const std::string& why_not, bool still_fires, bool no_backend,
                           const std::string& new_problem);

// The kind of change a fact or workload key (as named in Fix::changes: "env.X", "workload.k",
// "cudnn.version", "gpu.sm") with its value stands for, cheapest first: 0 environment, 1 a TE or
// launcher argument (cp_comm_type, the FP8 recipe's fp8_dpa, Megatron-LM's --attention-backend),
// 2 a library wheel, 3 a Python package, 4 TE, 5 the data layout or precision the user picks
// (packing off, dtype, BF16 training, FP8 emulated in higher precision), 6 what is computed or
// the model's shape (packing sequences on, head dims), 7 the GPU.
int change_class(std::string_view name, std::string_view value = {});
// 6 and 7 are not changes a user can make on this node: "would also run", never a fix slot.
inline bool counterfactual_class(int change_class) { return change_class >= 6; }

// How fast what a fix leaves the workload with is, by TE's own preference: 0 FlashAttention or
// FusedAttention as TE picks it; 1 one of them reached only by turning off the one TE picks
// (forced: NVTE_FUSED_ATTN=0, a Megatron-LM --attention-backend other than auto), which TE would
// pass over (on Hopper it prefers cuDNN to flash-attn 2); 2 UnfusedDotProductAttention; 3 no
// backend (k_no_backend_tier). A node finding's fix (no backend named) is 0.
inline constexpr int k_no_backend_tier = 3;
int outcome_tier(std::string_view backend, bool forced = false);
// Whether a change turns a backend off or picks one for TE: an NVTE_FLASH_ATTN / NVTE_FUSED_ATTN
// set to 0, Megatron-LM's --attention-backend flash, fused or unfused.
bool forces_backend(std::string_view name, std::string_view value);
// outcome_tier of a verified fix (its backend, forced by one of its changes or not).
int fix_tier(const model::Fix& fix);

// How far apart two versions are, for ranking: major, minor and patch weighted 10^6, 10^4 and
// 10^2, the fourth component (a build) a thousandth of that.
long version_step(const model::Version& from, const model::Version& to);

// Sort key of a verified fix: counterfactual last; the outcome (outcome_tier); changes made;
// upgrades (or no version change) before downgrades, a downgrade across a major release last;
// the costliest kind of change; version distance; the backend it gets (TE's order).
std::tuple<int, int, std::size_t, int, int, long, int> fix_rank(const model::Fix& fix, const model::Facts& facts);

// Whether a change (by name) only goes with another of names: fp8_dpa, fp8_mha and qkv_dtype
// with fp8 (training in BF16), fp8_mha with fp8_dpa (FP8 attention off).
bool companion_change(std::string_view name, const std::vector<std::string>& names);

// The mask a packed (thd) batch needs in place of mask: TE takes thd only with padding masks
// (causal -> padding_causal, no_mask -> padding); a padding mask stays.
std::string packed_mask(std::string_view mask);

// flash_attention -> FlashAttention, ...
std::string backend_label(std::string_view key);

} // namespace rules::detail
