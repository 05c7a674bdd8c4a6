// Renderers of the neutral output model (model::Report, model::Explanation, model::Facts).
// They know nothing of how facts were probed or how rules are written; each returns the whole
// document as a string so the caller can write it atomically.
#pragma once

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
// `check --format json`: the report JSON of ARCHITECTURE.md (schema_version 1).
std::string render_check_json(const model::Report& report);

// `probe`: facts grouped by area, what was found and where.
std::string render_probe_text(const model::Facts& facts, const TextOptions& options);

// `explain`: one workload's verdict per backend, then the selected backend.
std::string render_explain_text(const model::Explanation& explanation, const TextOptions& options);
// `explain --format json`: {"schema_version": 1, "workloads": [...]}, one explanation per
// workload (packaging/schema/explain.schema.json), however many workloads there are.
// te_logs (empty, or one per explanation, null where none): what TE's own log said of each
// workload read with --te-log, rendered as its "te_log" member next to the doctor's verdict.
std::string render_explain_json(const std::vector<model::Explanation>& explanations,
                                const std::vector<const model::ObservedSelection*>& te_logs = {});

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

// `selftest` as text, from the self-test's result object (selftest::to_json, as a report carries
// it) and the findings about it; ends with how many of the GPU checks ran.
std::string render_selftest_text(const std::string& selftest_json, const std::vector<model::Finding>& findings, const TextOptions& options);

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

} // namespace report
