// Finding, backend verdicts and Report: the neutral output model. Rules produce it, renderers
// (text, JSON, Prometheus, NFD) consume it; neither side knows the other.
#pragma once

#include "model/facts.hpp"
#include "model/workload.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace model {

enum class Severity { info, warning, error };
std::string_view to_string(Severity severity);
std::optional<Severity> parse_severity(std::string_view text);

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

struct Finding {
  std::string id;
  Severity severity = Severity::info;
  std::string title;
  std::string message;
  std::vector<std::pair<std::string, std::string>> evidence; // fact name -> value, in rule order
  std::vector<Fix> fixes;
  std::vector<std::string> references;
  std::vector<std::string> tags;
  std::string area;     // grouping for the text report: gpu, driver, cuda, cudnn, nccl, python, attention, ...
  std::string workload; // the workload it is about, empty for node findings
};

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
  std::string te_version;      // the TE version the selection was modelled for
  bool te_version_assumed = false;
  std::optional<std::string> selected; // FlashAttention, FusedAttention, UnfusedDotProductAttention; nullopt = none
  std::map<std::string, BackendVerdict, std::less<>> backends; // flash_attention, fused_attention, unfused_attention
  std::vector<Finding> findings;  // warnings beyond TE's own checks, for this workload
};

struct Summary {
  int errors = 0;
  int warnings = 0;
  int infos = 0;
  std::string status; // OK, WARNING, CRITICAL, UNKNOWN
  int exit_code() const;
};

struct Report {
  std::string tool_version;
  std::string rules_digest;
  std::string host;
  std::string generated_at; // RFC 3339
  std::string fingerprint;
  Facts facts;
  std::vector<Explanation> workloads;
  std::vector<Finding> findings; // node findings, then each workload's
  std::optional<std::string> selftest_json; // the self-test's result object, when it ran
  Summary summary;

  // Counts findings (workload findings included) into summary.
  void summarize();
};

} // namespace model
