// Finding and its fixes: one thing a rule found, in the neutral output model (model/report.hpp
// holds the whole Report). Rules produce it, renderers consume it; neither side knows the other.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace model {

enum class Severity { info, warning, error };
std::string_view to_string(Severity severity);
std::optional<Severity> parse_severity(std::string_view text);

// What a finding does to a job when it is about a kernel that TE selects and that then
// misbehaves: the severity says how urgent it is, the impact what kind of harm it is. Monitoring
// and schedulers tell a silent corruption (wrong_results) apart from a crash at the first step
// (runtime_failure); none is every other finding.
enum class Impact { none, wrong_results, runtime_failure };
// "wrong_results", "runtime_failure" ("" for none), as in rules and JSON.
std::string_view to_string(Impact impact);
std::optional<Impact> parse_impact(std::string_view text);
// For people: "runs but computes wrong results", "fails at run time" ("" for none).
std::string_view describe(Impact impact);

// What a finding means for the verdict of the workloads it concerns (a rule's `verdict:`; for a
// workload rule, severity error defaults to fails and a warning with an impact to at_risk).
enum class VerdictEffect { none, at_risk, unknown, fails };
std::string_view to_string(VerdictEffect effect); // "", "at_risk", "unknown", "fails"
std::optional<VerdictEffect> parse_verdict_effect(std::string_view text);

// What the fix search proved a fix does: the backend the workload then gets, or the finding
// that clears (node findings).
struct FixOutcome {
  std::string backend;     // FlashAttention, FusedAttention, UnfusedDotProductAttention; empty for node findings
  std::string sub_backend; // FusedAttention's sub-backend, else empty
  std::string clears;      // the finding id that no longer fires
};

struct Fix {
  std::string kind;        // pip, env, config, upgrade; hardware, model (counterfactuals); debug (a logging aid)
  std::string command;     // what to type, already made concrete for this node and shell-quoted
  std::string description; // why this fixes it
  // Filled by the fix search (rules::search_fixes): the facts and workload keys the fix changes
  // ("workload.qkv_format", "env.NVTE_FLASH_ATTN" = "(unset)"), what the model then predicts,
  // and, for a command the model could not prove, why not. A fix with a command has either
  // `verified` or a non-empty `unverified_reason`.
  std::vector<std::pair<std::string, std::string>> changes;
  std::optional<FixOutcome> verified;
  std::string unverified_reason;
  // The model evaluated the command and it does not clear the finding (unverified_reason says
  // why): text shows it only with -v, as "would not help".
  bool refuted = false;
};

// A hardware or model-shape change the model verified: "would also run", never a fix slot.
bool is_counterfactual(const Fix& fix);
// The first verified fix a user can make on this node (fixes are ranked best first), or nullptr.
const Fix* best_fix(const std::vector<Fix>& fixes);

struct Finding {
  std::string id;
  Severity severity = Severity::info;
  Impact impact = Impact::none;
  std::string title;
  std::string message;
  std::vector<std::pair<std::string, std::string>> evidence; // fact name -> value, in rule order
  std::vector<Fix> fixes;
  std::vector<std::string> references;
  std::vector<std::string> tags;
  std::string area;     // grouping for the text report: gpu, driver, cuda, cudnn, nccl, python, attention, ...
  std::string workload; // the workload it is about, empty for node findings
  // What it does to the verdict of the workloads it concerns (model/verdict.hpp): a workload
  // finding concerns its workload, a node finding every workload whose selected backend is in
  // verdict_backends (every workload when that is empty).
  VerdictEffect verdict = VerdictEffect::none;
  std::vector<std::string> verdict_backends; // FlashAttention, FusedAttention, UnfusedDotProductAttention
  // The self-test failure classes it explains (a rule's `explains:`): a failed check of such a
  // class names this finding and its fix (rules::join_selftest_failures).
  std::vector<std::string> explains;
};

} // namespace model
