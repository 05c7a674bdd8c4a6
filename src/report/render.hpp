// Renderers of the neutral output model (model::Report, model::Explanation, model::Facts).
// They know nothing of how facts were probed or how rules are written; each returns the whole
// document as a string so the caller can write it atomically.
#pragma once

#include "model/finding.hpp"

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
// `check --format json`: the report JSON of DESIGN.md (schema_version 1).
std::string render_check_json(const model::Report& report);

// `probe`: facts grouped by area, what was found and where.
std::string render_probe_text(const model::Facts& facts, const TextOptions& options);

// `explain`: one workload's verdict per backend, then the selected backend.
std::string render_explain_text(const model::Explanation& explanation, const TextOptions& options);
// `explain --format json`: the explain contract of DESIGN.md for one workload; several
// workloads are wrapped as {"schema_version": 1, "workloads": [...]}.
std::string render_explain_json(const std::vector<model::Explanation>& explanations);

} // namespace report
