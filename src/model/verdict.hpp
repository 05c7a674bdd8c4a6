// Verdict: the doctor's answer to "will this workload's attention run on this node?". TE selecting
// a backend is not enough: a verdict is a promise that the job runs, so everything known to make
// it fail afterwards (an arch gate, a known-bad kernel, a load-order trap, a self-test failure at
// this shape) is folded in, and where the doctor cannot know it says so. Computed once per
// workload (rules::decide_verdict), read by every renderer and carrier. Part of the neutral output
// model (model/report.hpp); ARCHITECTURE.md ("Verdicts") has the contract.
#pragma once

#include "model/finding.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace model {

// Worst last: a workload's verdict is the worst of what applies to it. no_backend and fails
// both mean the job does not run; unknown means the doctor cannot tell.
enum class Verdict {
  runs,       // TE selects a backend and nothing known makes it fail
  at_risk,    // runs, with a known risk (a warning that can make it fail) and its fix
  unknown,    // the doctor cannot tell (no GPU facts, TE absent without an assumption, cuDNN's answer)
  fails,      // TE selects a backend and a known failure follows
  no_backend, // TE selects no backend ("No dot product attention backend is available")
};

// "runs", "at_risk", "unknown", "fails", "no_backend": the JSON and label form.
std::string_view to_string(Verdict verdict);
std::optional<Verdict> parse_verdict(std::string_view text);
// For people: "runs", "runs, at risk", "unknown", "fails", "no backend".
std::string_view describe(Verdict verdict);
// The worse of two verdicts (by the enum's order).
Verdict worse(Verdict a, Verdict b);
// runs and at_risk: the job's attention runs (at_risk with a caveat). The carriers that promise a
// backend (Slurm features, NFD labels, workload_runnable) read this.
bool runnable(Verdict verdict);
// The Nagios exit code a verdict contributes: runs 0, at_risk 1, fails and no_backend 2, unknown 3.
int exit_code(Verdict verdict);

// Where the verdict comes from, weakest first: the model of TE's code, TE's own log of the run,
// or the self-test that ran the backend at this shape on this node.
enum class EvidenceKind { predicted, observed, ran };
std::string_view to_string(EvidenceKind kind);

struct WorkloadVerdict {
  Verdict verdict = Verdict::unknown;
  std::optional<std::string> backend;     // what TE selects (also for fails and unknown, when known)
  std::optional<std::string> sub_backend; // FusedAttention's or FlashAttention's generation
  EvidenceKind evidence = EvidenceKind::predicted;
  std::string evidence_text; // "predicted from TE 2.18.0's selection code", ...
  std::string because;       // one line: why it is not `runs` (empty for runs)
  std::string finding;       // the id of the finding that decided it, if one did
  std::optional<Fix> fix;    // the one best fix (verified, or the way to find out)
  std::string how_to_know;   // unknown: what to pass or run to get a verdict
};

} // namespace model
