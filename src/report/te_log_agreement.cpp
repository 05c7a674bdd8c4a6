#include "report/te_log_agreement.hpp"

#include "model/observed_selection.hpp"
#include "report/style.hpp"
#include "util/strings.hpp"

#ifndef NVTE_VERSION_STRING
#define NVTE_VERSION_STRING "0.0.0"
#endif

namespace report {

namespace {

// "FusedAttention (F16_arbitrary_seqlen)" / "no backend": TE's logged choice.
std::string te_choice(const model::ObservedSelection& te) {
  if (!te.selected_known) return "?";
  if (!te.selected) return te.raised_no_backend ? "no backend (ValueError)" : "no backend";
  std::string out = *te.selected;
  if (*te.selected == "FusedAttention" && te.fused_sub_backend) out += " (" + *te.fused_sub_backend + ")";
  if (*te.selected == "FlashAttention" && te.flash_version) out += " (" + *te.flash_version + ")";
  return out;
}

std::string difference_text(const model::SelectionDifference& d) {
  std::string out = d.what + ": TE " + d.te + ", doctor " + d.doctor;
  if (!d.doctor_rules.empty()) out += " [" + util::join(d.doctor_rules, ",") + "]";
  return out;
}

} // namespace

std::string te_log_report_line(const model::Explanation& e, const model::ObservedSelection& te) {
  std::vector<std::string> facts, keys, diffs;
  for (const auto& [name, value] : te.node_facts) facts.push_back(name + "=" + (value.empty() ? "none" : value));
  for (const auto& [key, value] : e.workload.values) keys.push_back(key + "=" + value.to_string());
  for (const auto& d : model::compare_selection(te, e)) diffs.push_back(difference_text(d));
  return std::string("nvte-doctor ") + NVTE_VERSION_STRING + " te-log " + (diffs.empty() ? "agrees" : "disagrees") + " | " +
         util::join(facts, " ") + " | " + util::join(keys, " ") + " | " + (diffs.empty() ? "TE " + te_choice(te) : util::join(diffs, "; "));
}

std::string render_te_log_text(const model::Explanation& e, const model::ObservedSelection& te_log, const TextOptions& options) {
  const model::ObservedSelection* te = &te_log;
  Style style(options.color);
  std::string out;
  auto diffs = model::compare_selection(*te, e);
  if (!te->selected_known && te->available.empty()) {
    out += "  " + style.yellow("TE's log") + " (" + te->source +
           ") has no verdict after its config line (no Available/Selected backend line, no ValueError): nothing to compare\n";
  } else if (diffs.empty()) {
    out += "  " + style.mark_ok() + " TE's log agrees: " + te_choice(*te) + " (" + te->source + ")\n";
  } else {
    out += "  " + style.mark(model::Severity::warning) + " " + style.bold("TE's log disagrees with the doctor") + " (" + te->source +
           "): a gap in the doctor's rules\n";
    for (const auto& d : diffs) {
      out += "    " + wrap_text(difference_text(d), 6) + "\n";
      for (const auto& line : d.te_reasons) out += style.dim("      TE: " + wrap_text(line, 10)) + "\n";
    }
    out += "    please report it with this line:\n";
    out += "    " + te_log_report_line(e, *te) + "\n";
  }
  if (options.verbose) {
    out += style.dim("  read from TE's config line:") + "\n";
    for (const auto& field : te->parsed_fields) out += style.dim("    " + field) + "\n";
    for (const auto& line : te->disabling) out += style.dim("    TE: " + line) + "\n";
    out += style.dim("  ignored: " + std::to_string(te->ignored_fields.size()) + " field(s)" +
                     (te->ignored_fields.empty() ? "" : " (" + util::join(te->ignored_fields, ", ") + ")") + ", " +
                     std::to_string(te->ignored_lines) + " other line(s) of the log") +
           "\n";
  }
  // The log's path and TE's lines are the user's data: no terminal control gets through, as in
  // every other text renderer (audit 2026-12-01 item 23: a file name that set the window title).
  return util::terminal_safe(out, options.color == Color::yes ? util::Sgr::keep : util::Sgr::show);
}

Json te_log_to_json(const model::Explanation& e, const model::ObservedSelection& te) {
  auto diffs = model::compare_selection(te, e);
  auto backend_or_null = [](const std::optional<std::string>& name) { return name ? Json(*name) : Json(nullptr); };
  Json logged{{"selected_known", te.selected_known},
              {"selected", backend_or_null(te.selected)},
              {"raised_no_backend", te.raised_no_backend},
              {"available", Json::object()},
              {"fused_sub_backend", backend_or_null(te.fused_sub_backend)},
              {"flash_version", backend_or_null(te.flash_version)},
              {"disabling", te.disabling}};
  for (const auto& [backend, available] : te.available) logged["available"][backend] = available;
  Json differences = Json::array();
  for (const auto& d : diffs)
    differences.push_back(
        Json{{"what", d.what}, {"te", d.te}, {"doctor", d.doctor}, {"te_reasons", d.te_reasons}, {"doctor_rules", d.doctor_rules}});
  bool verdict = te.selected_known || !te.available.empty();
  Json out{{"source", te.source},
           {"te", std::move(logged)},
           {"doctor_selected", backend_or_null(e.selected)},
           {"agreement", !verdict        ? "no_verdict"
                         : diffs.empty() ? "agrees"
                                         : "disagrees"},
           {"differences", std::move(differences)}};
  if (!diffs.empty()) out["report_line"] = te_log_report_line(e, te);
  return out;
}

model::Finding te_log_finding(const model::Explanation& e, const model::ObservedSelection& te_log) {
  const model::ObservedSelection* te = &te_log;
  auto diffs = model::compare_selection(*te, e);
  model::Finding f;
  f.area = "attention";
  f.workload = e.workload.name;
  f.evidence.emplace_back("te_log", te->source);
  if (diffs.empty()) {
    f.id = "te-log-agrees";
    f.severity = model::Severity::info;
    f.title = "TE's own log agrees with the doctor for workload " + e.workload.name + ": " + te_choice(*te);
    f.message = "TE's debug log (" + te->source + ") and the doctor's rules select the same backend.";
    return f;
  }
  f.id = "te-log-disagrees";
  f.severity = model::Severity::warning;
  f.title = "TE's own log disagrees with the doctor for workload " + e.workload.name;
  f.message = "TE's debug log (" + te->source + ") and the doctor's rules differ; the doctor's verdict for this workload is not "
              "to be trusted (a gap in its rules):";
  for (const auto& d : diffs) {
    f.message += "\n" + difference_text(d);
    for (const auto& line : d.te_reasons) f.message += "\n  TE: " + line;
  }
  f.message += "\nPlease report it with this line:\n" + te_log_report_line(e, *te);
  return f;
}

} // namespace report
