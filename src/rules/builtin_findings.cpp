// The teaching text of the findings the doctor's code writes (builtin_findings.hpp).
#include "rules/builtin_findings.hpp"

namespace rules {

namespace {

constexpr BuiltinFix k_permission_fixes[] = {
    {"config", "sudo nvte-doctor check", "run as a user who can read the directories (the systemd service runs as root)"}};
constexpr std::string_view k_permission_refs[] = {"https://man7.org/linux/man-pages/man2/open.2.html"};

constexpr BuiltinFix k_stale_fixes[] = {{"config", "nvte-doctor rules update URL",
                                         "fetch the current bundle from its source (its serial must be higher than the installed one)"}};
constexpr std::string_view k_stale_refs[] = {"https://theupdateframework.github.io/specification/latest/#freeze-attack", "docs/service.md"};

constexpr BuiltinFix k_te_log_fixes[] = {
    {"config", "nvte-doctor probe --format json", "attach this snapshot and the report line to a bug report for the rules database"}};
constexpr std::string_view k_te_log_refs[] = {
    "https://github.com/NVIDIA/TransformerEngine/blob/v2.18/transformer_engine/pytorch/attention/dot_product_attention/utils.py"};

constexpr BuiltinFix k_knowledge_fixes[] = {
    {"debug", "export NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2",
     "makes TE log the backend it really selects, to compare with the extrapolated verdict"},
    {"config", "nvte-doctor rules update URL", "a newer rules bundle models newer releases and GPU architectures"}};
constexpr std::string_view k_knowledge_refs[] = {"rules/catalog/", "tools/te-conformance"};

constexpr BuiltinFinding k_builtin[] = {
    {"probe-permission-denied", "warning", "probe", "Directories could not be read (permission denied)",
     "The probes walk Python environments and library directories to find what is installed. A directory they were "
     "denied holds something unknown, so a finding such as \"PyTorch not installed\" or \"cuDNN not found\" would be a "
     "guess: the report names the paths instead and is not OK.",
     k_permission_fixes, k_permission_refs, "src/app/check_command.cpp (unreadable_paths_finding)"},
    {"rules-bundle-stale", "warning", "rules", "The installed rules bundle is older than rules_update.max_age_days",
     "A mirror that keeps serving the same validly signed bundle holds back every later rule without a failed update "
     "to show for it (a freeze). The signing time is inside the signature, so the doctor warns when the active bundle "
     "was signed longer ago than rules_update.max_age_days (default 180; 0 turns it off).",
     k_stale_fixes, k_stale_refs, "src/app/check_command.cpp (stale_bundle_finding)"},
    {"te-log-agrees",
     "info",
     "attention",
     "TE's own log agrees with the doctor for a workload",
     "A workload read from TE's debug log (NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2, --te-log) says which backend TE selected; "
     "the doctor's rules selected the same one for the same settings.",
     {},
     k_te_log_refs,
     "src/report/te_log_agreement.cpp (te_log_finding)"},
    {"te-log-not-compared",
     "info",
     "attention",
     "TE's own log is not compared: the command line changed what TE ran with",
     "A workload read from TE's debug log takes the log's versions and settings as defaults; --set or --workload-set "
     "changed one of them, so what TE logged is not what this workload would do, and the verdict is the doctor's "
     "prediction for the changed settings. The finding lists each change and the log's value.",
     {},
     k_te_log_refs,
     "src/report/te_log_agreement.cpp (te_log_finding)"},
    {"te-log-disagrees", "warning", "attention", "TE's own log disagrees with the doctor for a workload",
     "TE's debug log says it selected another backend (or sub-backend) than the doctor's rules predict for the same "
     "versions and settings. TE's log is what ran; the doctor's verdict for the workload follows it, and the "
     "difference is a gap in the rules database: the finding lists each difference with TE's own reasons and a line to "
     "report.",
     k_te_log_fixes, k_te_log_refs, "src/report/te_log_agreement.cpp (te_log_finding)"},
    {"knowledge-extrapolated", "warning", "knowledge", "Beyond what the rules model: verdicts are extrapolated",
     "The node has a TE, cuDNN or flash-attn release newer than the newest the rules know, or a GPU architecture TE's "
     "selection was not checked on. Its verdicts apply the rules of the newest known releases and architectures; the "
     "libraries may have changed what they accept since.",
     k_knowledge_fixes, k_knowledge_refs, "src/rules/knowledge.cpp (knowledge_finding)"},
};

} // namespace

std::span<const BuiltinFinding> builtin_findings() { return k_builtin; }

const BuiltinFinding* find_builtin_finding(std::string_view id) {
  for (const auto& f : k_builtin)
    if (f.id == id) return &f;
  return nullptr;
}

} // namespace rules
