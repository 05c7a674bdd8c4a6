// Renderers of the neutral output model (model::Report, model::Explanation, model::Facts).
// They know nothing of how facts were probed or how rules are written; each returns the whole
// document as a string so the caller can write it atomically.
#pragma once

#include "model/fleet.hpp"
#include "model/observed_selection.hpp"
#include "model/report.hpp"

#include <string>

namespace report {

enum class Color { yes, no };

struct TextOptions {
  Color color = Color::no;
  bool verbose = false; // -v: also list passing areas' details and every fact consulted
};

// `check`: the doctor-style text report (area lines with ✓ / ! / ✗, then findings with cause,
// evidence, fixes and references, then the summary).
std::string render_check_text(const model::Report& report, const TextOptions& options);
// `check --termination-log FILE`: the status, what was checked, then one line per error and
// warning finding (title, workload, id, first fix), at most max_bytes (the kubelet keeps 4096).
std::string render_termination_message(const model::Report& report, std::size_t max_bytes = 4096);
// `check --format json`: the report JSON of ARCHITECTURE.md (schema_version 1).
std::string render_check_json(const model::Report& report);

// `probe`: facts grouped by area, what was found and where.
std::string render_probe_text(const model::Facts& facts, const TextOptions& options);

// `explain`: one workload's verdict per backend, then the selected backend.
// With knowledge, a fact beyond the rules' knowledge is said in one line under the verdict (and
// its finding, knowledge-extrapolated, is not repeated below).
std::string render_explain_text(const model::Explanation& explanation, const TextOptions& options,
                                const model::Knowledge* knowledge = nullptr);
// The first line of a workload's answer: "name → verdict[ on backend][: why][ · fix: ...]" (the
// one best fix unless it runs; for unknown, how to know). Check's text and explain's share it.
std::string render_verdict_line(const model::Explanation& explanation, const TextOptions& options);
// `explain --format json`: {"schema_version": 1, "workloads": [...]}, one explanation per
// workload (packaging/schema/explain.schema.json), however many workloads there are.
// te_logs (empty, or one per explanation, null where none): what TE's own log said of each
// workload read with --te-log, rendered as its "te_log" member next to the doctor's verdict.
// With knowledge, its `knowledge` block too.
std::string render_explain_json(const std::vector<model::Explanation>& explanations,
                                const std::vector<const model::ObservedSelection*>& te_logs = {},
                                const model::Knowledge* knowledge = nullptr);
// One line on the edge of the knowledge ("! beyond the rules' knowledge: ..."), empty when
// nothing is extrapolated.
std::string render_knowledge_line(const model::Knowledge& knowledge, const TextOptions& options);

// `explain --sweep`: the support matrix of one workload over the swept keys (a table for two
// keys, one row per cell otherwise), and all cells as JSON.
struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
};
struct SweepCell {
  std::vector<std::string> values; // one per axis
  model::Explanation explanation;
};
std::string render_sweep_text(const std::vector<SweepAxis>& axes, const std::vector<SweepCell>& cells, const std::string& workload);
std::string render_sweep_json(const std::vector<SweepAxis>& axes, const std::vector<SweepCell>& cells);

// `explain --fix`: the verified fixes a user can make on the node, best first. Text: one
// tab-separated line per fix (workload, finding, rank, what the workload then gets, command or
// "-", changes as key=value;...); JSON: {"schema_version": 1, "fixes": [...]}. Counterfactuals
// (a GPU, the model's shape) and logging aids are not fixes and are left out.
std::string render_fix_list_text(const std::vector<model::Explanation>& explanations);
std::string render_fix_list_json(const std::vector<model::Explanation>& explanations);

// `selftest` as text: each workload's verdict line, then every check of the self-test (as a
// report carries it) and the findings about it; ends with how many of the GPU checks ran.
std::string render_selftest_text(const model::SelftestSummary& selftest, const std::vector<model::Explanation>& workloads,
                                 const std::vector<model::Finding>& findings, const TextOptions& options);

// `selftest --format json`: {"schema_version": 1, "selftest": {checks, summary, findings, facts,
// workloads}}: the checks as a report carries them, the findings about the self-test, the
// selftest.* facts and each workload's explanation with its verdict.
std::string render_selftest_json(const model::SelftestSummary& selftest, const std::vector<model::Explanation>& workloads,
                                 const std::vector<model::Finding>& findings, const model::Facts& facts);

// What the report itself does not know: when this run happened and how long it took.
struct RunTiming {
  double timestamp_seconds = 0; // Unix time of this run (last_run_timestamp_seconds)
  double duration_seconds = 0;  // wall time of the check that produced the report
};

// `--format prometheus`: a node_exporter textfile-collector file (nvte_doctor_ prefix, HELP and
// TYPE lines, _info with versions as labels, one series per finding, backend availability per
// workload, self-test results, last run time and duration). Label values are escaped.
std::string render_prometheus(const model::Report& report, const RunTiming& timing);
// The metric `run` rewrites when nothing changed; its line starts with this name and a space.
inline constexpr std::string_view k_last_run_metric = "nvte_doctor_last_run_timestamp_seconds";

// `--format nfd`: a Node Feature Discovery local features file (features.d): one
// `nvte-doctor.<name>=<value>` line per label; names and values sanitised to NFD's rules.
// expires_at (RFC 3339, optional) adds NFD's `# +expiry-time=` directive.
std::string render_nfd(const model::Report& report, const std::string& expires_at = {});
// NFD label pieces: at most 63 characters of [A-Za-z0-9._-], starting and ending alphanumeric
// (empty for an empty or unusable value). Long or changed text keeps a hash suffix to stay unique.
std::string nfd_sanitize(std::string_view text);

// `fleet`: the summary of many nodes' reports. Text is at most 60 lines (unless all): the
// largest configurations, findings and workloads, each with its hosts as a Slurm host list cut
// after `hosts` items (a range of consecutive hosts is one item; 0: all), and how many were left
// out. JSON (packaging/schema/fleet.schema.json) has everything, in a stable order.
struct FleetTextOptions {
  std::size_t hosts = 8; // host-list items per line; 0: all
  bool all = false;      // every configuration, finding, workload, stale node and unreadable file
};
std::string render_fleet_text(const model::FleetSummary& summary, const FleetTextOptions& options);
std::string render_fleet_json(const model::FleetSummary& summary);
// "42 s", "5 min", "3 h", "2 d" (whole units, rounded down; the sign is dropped).
std::string human_duration(double seconds);
// "3 h ago"; a negative age (the node's clock runs ahead) is "5 min in the future".
std::string human_age(double age_seconds);

} // namespace report
