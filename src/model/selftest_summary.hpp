// The self-test's result as the report carries it: every check it ran, with its status, time and
// phases, and the child's own result object (free-form: its keys differ per check, see
// selftest/checks.hpp). The JSON renderer writes it as the report's "selftest" object and the
// Prometheus renderer as the self-test families; neither parses text again.
#pragma once

#include "model/finding.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace model {

// One phase a check's child reported (phase names: selftest/phases.hpp).
struct SelftestPhase {
  std::string phase;
  std::string what;   // "forward", "backward", or empty
  double start = 0;   // seconds after the child started
  double seconds = 0; // until its end, or the child's last event when still open
  bool open = false;  // begun and never ended: the child was in it at the end
};

struct SelftestCheck {
  std::string check;  // cuda_driver, nvrtc, cudnn_sdpa, cudnn_sdpa_bwd, nccl, te_selector, python
  std::string label;  // what it ran on ("bf16 bshd_bshd_bshd b2 h16/4 s512 d128 causal")
  std::string status; // ok, failed, skipped, error (crash, timeout, bad output)
  std::string error;  // why, when not ok
  double seconds = 0; // wall time of the child
  double started = 0; // when the child started, seconds after the self-test did
  // With status error: whether the timeout ended the child, and the phase it was in.
  bool timed_out = false;
  std::string phase;
  std::vector<SelftestPhase> phases;
  nlohmann::ordered_json result; // the child's result object; null when it gave none
  // Which workload the check ran for (its index in the command's workloads; -1: a check of the
  // node, such as the driver's), and the TE backend it exercised at that workload's shape
  // ("FusedAttention" for cuDNN's SDPA graphs; empty when none). A failed check of the backend
  // TE selects for that workload makes the workload's verdict `fails` (rules::decide_verdict).
  int workload = -1;
  std::string backend;
  // Why a failed or error check failed (classify_selftest_failure; empty when ok or skipped), the
  // finding that explains it (joined by rules::join_selftest_failures: a rule's `explains:`),
  // that finding's fix, and what re-running the check with that fix applied showed
  // (selftest::verify_env_fixes): "here" (it then passed), "did_not_help" (it failed again), or
  // empty (not tried; fix_note says why when it matters).
  std::string failure_class;
  std::string explained_by;
  std::optional<Fix> fix;
  std::string fix_verified;
  std::string fix_note;
  // How to run this check again (the selftest layer's own recipe; never rendered).
  nlohmann::ordered_json rerun;
};

// The failure classes, in the order a failure is tested for them: sublibrary_load (a cuDNN
// sub-library that would not load, two cuDNN builds in one process, a cuDNN version check that
// rejects the copy loaded), timeout (the child was killed at its limit), crash (a signal ended
// it), plan_build (cuDNN built no execution plan, refused the graph), numerics (it ran and
// disagreed with the fp32 reference), other.
inline constexpr std::string_view k_selftest_failure_classes[] = {"sublibrary_load", "timeout", "crash", "plan_build", "numerics", "other"};

// The class of a check that ended with status (failed or error; "" for ok and skipped), from its
// error text, whether the timeout ended it, and its result's "stage" when it has one.
std::string classify_selftest_failure(std::string_view status, std::string_view error, bool timed_out, std::string_view stage);

// The Python tier's checks ("python", "python_te") need no GPU of their own to be counted.
bool is_python_tier_check(std::string_view check);

struct SelftestSummary {
  std::vector<SelftestCheck> checks; // in the order they ran
};

// The report's "selftest" object: {"checks": [...], "summary": {"ok", "failed", "skipped", "gpu_checks",
// "gpu_checks_ran"}}, each
// check with the keys above (error only when set; timed_out and phase only with status error;
// phases and result only when present).
nlohmann::ordered_json to_json(const SelftestSummary& summary);

} // namespace model
