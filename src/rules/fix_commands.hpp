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

enum class ChangeKind { env, workload, package, gpu };

struct Change {
  ChangeKind kind = ChangeKind::env;
  std::string name;                 // env var, workload key, the package's fact, "gpu.sm"
  std::optional<std::string> value; // nullopt: unset the env var
  const Package* package = nullptr; // ChangeKind::package
  const PackageRelease* release = nullptr;
};

// The node's CUDA major (torch's, else the runtime's, else the driver's), Python and torch.
NodeAbi node_abi(const model::Facts& facts);

// Applies a change; false with why_not when it cannot apply (a bad workload value).
bool apply_change(const Change& change, model::Facts& facts, model::Workload& workload, std::string& why_not);

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

// Sort key of a verified fix: changes made, the costliest kind of change, version distance, the
// backend it gets (TE's order).
std::tuple<std::size_t, int, long, int> fix_rank(const model::Fix& fix, const model::Facts& facts);

// flash_attention -> FlashAttention, ...
std::string backend_label(std::string_view key);

} // namespace rules::detail
