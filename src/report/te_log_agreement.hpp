// A workload read from TE's own debug log (--te-log) carries TE's verdict: this renders it next
// to the doctor's. Agreement is one line; a disagreement names what differs, TE's Disabling
// lines and the doctor's rules for that backend, and one line for the user to paste into a
// report (a disagreement is a knowledge bug of the doctor's rules).
#pragma once

#include "model/finding.hpp"
#include "model/observed_selection.hpp"
#include "report/json_model.hpp"
#include "report/render.hpp"

#include <string>

namespace report {

// explain's text for a workload read from a TE log: the agreement line, or the differences and
// the line to paste. With options.verbose, also every field read from TE's config line and what
// was ignored. Terminal-safe, as every text renderer's output (util::terminal_safe).
std::string render_te_log_text(const model::Explanation& explanation, const model::ObservedSelection& te, const TextOptions& options);

// explain --format json's "te_log" member of a workload read from a TE log: TE's logged verdict,
// the doctor's, whether they agree ("agrees", "disagrees", or "no_verdict" when the log holds no
// verdict after its config line) and, per difference, which backend or filter differs with TE's
// Disabling lines and the doctor's rules (report.schema.json#/$defs/te_log).
Json te_log_to_json(const model::Explanation& explanation, const model::ObservedSelection& te);

// check's finding for a workload read from a TE log: te-log-agrees (info) or te-log-disagrees
// (warning, the paste line in its message).
model::Finding te_log_finding(const model::Explanation& explanation, const model::ObservedSelection& te);

// The one line to paste into a report: tool version, TE's facts, the workload's keys, and each
// difference with TE's and the doctor's answer.
std::string te_log_report_line(const model::Explanation& explanation, const model::ObservedSelection& te);

} // namespace report
