// `explain` as text: what TE's NVTE_DEBUG_LEVEL=2 log says, but per backend with the reason it is
// out and what would change that, then the selected backend.
#include "report/render.hpp"
#include "report/style.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <set>

namespace report {

namespace {

struct BackendName {
  std::string_view key;
  std::string_view label;
};

constexpr BackendName k_backends[] = {
    {"flash_attention", "FlashAttention"},
    {"fused_attention", "FusedAttention"},
    {"unfused_attention", "UnfusedDotProductAttention"},
};

std::string workload_line(const model::Workload& w) {
  auto get = [&](std::string_view key) {
    const model::Value* v = w.get(key);
    return v ? v->to_string() : std::string("?");
  };
  std::string line = get("qkv_dtype") + " " + get("qkv_layout") + ", b=" + get("batch_size") + " h=" + get("num_heads") +
                     "/" + get("num_gqa_groups") + " s=" + get("max_seqlen_q") + "/" + get("max_seqlen_kv") + " d=" +
                     get("head_dim_qk") + "/" + get("head_dim_v") + ", " + get("attn_mask_type");
  if (get("window_size") != "-1,-1" && get("window_size") != "-1,0") line += ", window " + get("window_size");
  if (get("core_attention_bias_type") != "no_bias") line += ", " + get("core_attention_bias_type");
  if (get("attention_dropout") != "0.0") line += ", dropout " + get("attention_dropout");
  if (get("context_parallel") == "true") line += ", CP " + get("cp_comm_type") + "×" + get("cp_size");
  if (get("fp8") == "true") line += ", fp8 " + get("fp8_recipe");
  line += get("is_training") == "true" ? ", training" : ", inference";
  return line;
}

} // namespace

namespace {

// The finding whose fixes answer "what do I type": the worst, first of its severity.
// skip_knowledge: the knowledge finding has its own line under the verdict.
const model::Finding* worst_finding(const model::Explanation& e, bool skip_knowledge) {
  const model::Finding* worst = nullptr;
  for (const auto& f : e.findings)
    if (f.severity != model::Severity::info && (!worst || f.severity > worst->severity) &&
        !(skip_knowledge && f.id == model::k_knowledge_finding_id))
      worst = &f;
  return worst;
}

} // namespace

std::string render_knowledge_line(const model::Knowledge& knowledge, const TextOptions& options) {
  if (knowledge.extrapolated.empty()) return {};
  Style style(options.color);
  std::vector<std::string> parts;
  for (const auto& x : knowledge.extrapolated) {
    parts.push_back(x.fact == "gpu.compute_capability" ? "compute capability " + x.value + " (modelled: " + x.newest + ")"
                                                       : x.fact + " " + x.value + " (newest known " + x.newest + ")");
  }
  return "  " + style.mark(model::Severity::warning) + " " +
         style.yellow("extrapolated beyond the rules' knowledge: " + util::join(parts, ", ")) + "  " +
         style.dim("[" + std::string(model::k_knowledge_finding_id) + "]") + "\n";
}

std::string render_verdict_line(const model::Explanation& e, const TextOptions& options) {
  Style style(options.color);
  const model::WorkloadVerdict& v = e.verdict;
  std::string backend = v.backend ? *v.backend + (v.sub_backend ? " (" + *v.sub_backend + ")" : "") : std::string();
  std::string verdict(model::describe(v.verdict));
  std::string head;
  switch (v.verdict) {
  case model::Verdict::runs: head = style.green(verdict + " on " + backend); break;
  case model::Verdict::at_risk: head = style.yellow(verdict + ", on " + backend) + ": " + util::one_line(v.because); break;
  case model::Verdict::fails:
    head = style.red(verdict) + ": " + util::one_line(v.because) + (backend.empty() ? "" : " (TE selects " + backend + ")");
    break;
  case model::Verdict::no_backend: head = style.red(verdict); break;
  case model::Verdict::unknown:
    // What TE would select, unless the reason already says it (TE absent: "TE X would select ...").
    head = style.yellow(verdict) + ": " + util::one_line(v.because) +
           (backend.empty() || v.because.find(*v.backend) != std::string::npos ? "" : " (TE would select " + backend + ")");
    break;
  }
  std::string tail;
  if (v.verdict == model::Verdict::unknown && !v.how_to_know.empty()) tail = " · " + v.how_to_know;
  else if (v.verdict != model::Verdict::runs && v.fix) tail = " · fix: " + style.bold(fix_headline(*v.fix));
  return style.bold(util::one_line(e.workload.name)) + " → " + head + tail + "\n";
}

std::string render_explain_text(const model::Explanation& e, const TextOptions& options, const model::Knowledge* knowledge) {
  Style style(options.color);
  std::string out;
  // The verdict first: name → verdict (and backend), and the one best fix.
  const model::Finding* worst = worst_finding(e, knowledge && !knowledge->extrapolated.empty());
  out += render_verdict_line(e, options);
  out += "  " + workload_line(e.workload) + " · " + style.dim(e.verdict.evidence_text) + "\n";
  const bool knowledge_said = knowledge && !knowledge->extrapolated.empty();
  if (knowledge_said) out += render_knowledge_line(*knowledge, options);
  if (!e.workload.assumed.empty()) {
    // The shape-defining assumptions; -v lists every TE default that was filled in.
    static const std::vector<std::string_view> k_shape = {"qkv_dtype", "qkv_format", "qkv_layout", "attn_mask_type",
        "is_training", "batch_size", "max_seqlen_q", "max_seqlen_kv", "num_gqa_groups", "head_dim_v", "window_size"};
    std::vector<std::string> assumed;
    const bool format_assumed = std::find(e.workload.assumed.begin(), e.workload.assumed.end(), "qkv_format") != e.workload.assumed.end();
    for (const auto& key : e.workload.assumed) {
      if (!options.verbose && std::find(k_shape.begin(), k_shape.end(), key) == k_shape.end()) continue;
      if (!options.verbose && key == "qkv_layout" && format_assumed) continue; // follows from the format
      const model::Value* v = e.workload.get(key);
      assumed.push_back(key + "=" + (v ? v->to_string() : "?"));
    }
    if (!assumed.empty()) out += style.dim("  assumed: " + wrap_text(util::join(assumed, ", "), 11)) + "\n";
  }
  if (options.verbose) {
    for (const auto& note : e.workload.notes) out += style.dim("  note: " + wrap_text(note, 8)) + "\n";
  } else if (!e.workload.notes.empty()) {
    // The importer's first note (packing, when it could not tell) and how many more.
    std::string first = e.workload.notes.front();
    std::size_t more = e.workload.notes.size() - 1;
    out += style.dim("  note: " + wrap_text(first + (more ? " (+" + std::to_string(more) + " more notes; -v shows them)" : ""), 8)) + "\n";
  }

  bool healthy = e.verdict.verdict == model::Verdict::runs && !worst;
  if (options.verbose || !healthy) {
    out += "\n";
    for (const auto& backend : k_backends) {
      auto it = e.backends.find(backend.key);
      model::BackendVerdict verdict = it == e.backends.end() ? model::BackendVerdict{} : it->second;
      std::string label(backend.label);
      if (verdict.sub_backend) label += " (" + *verdict.sub_backend + ")";
      bool is_selected = e.selected && *e.selected == backend.label;
      out += "  " + (verdict.available ? style.mark_ok() : style.mark(model::Severity::error)) + " " + style.bold(label) +
             (is_selected ? style.green("  ← selected") : "") + "\n";
      // Default: a backend's first reason (the one to lift first); -v: every reason with its fixes.
      std::size_t n = 0;
      for (const auto& reason : verdict.reasons) {
        if (!options.verbose && n++ == 1) {
          out += "      " + style.dim("(+" + std::to_string(verdict.reasons.size() - 1) + " more; -v shows them)") + "\n";
          break;
        }
        out += "      " + wrap_text(reason.message, 6) + "  " + style.dim("[" + reason.rule + "]") + "\n";
        if (options.verbose)
          for (const auto& fix : reason.fixes) out += render_fix(fix, style, 6);
      }
    }
  } else {
    // A healthy workload: the backends that do not change the verdict on one line, with the one
    // verified change that makes TE select a backend it ranks above the selected one here
    // ("faster with ..."). TE's order is FlashAttention, FusedAttention, Unfused, except where it
    // deprioritizes FlashAttention itself (Hopper+: FusedAttention for performance): forcing such
    // a backend back (NVTE_FUSED_ATTN=0) goes against TE's own preference and is not "faster".
    std::string faster;
    for (const auto& backend : k_backends) {
      if (e.selected && *e.selected == backend.label) break; // only those TE prefers to the selected
      auto it = e.backends.find(backend.key);
      if (it == e.backends.end() || it->second.available || it->second.deprioritized) continue;
      for (const auto& reason : it->second.reasons)
        for (const auto& fix : reason.fixes)
          if (faster.empty() && fix.verified && fix.verified->backend == backend.label && !fix.command.empty())
            faster = std::string(backend.label) + ": " + fix.command + " (verified)";
    }
    std::vector<std::string> others;
    for (const auto& backend : k_backends) {
      auto it = e.backends.find(backend.key);
      if ((e.selected && *e.selected == backend.label) || it == e.backends.end()) continue;
      // A backend TE passes over for performance (FlashAttention on Hopper+) takes the workload.
      others.push_back(std::string(backend.label) + (it->second.available ? " available"
                                                     : it->second.deprioritized
                                                         ? " available (TE prefers " + e.selected.value_or("") + " here)"
                                                         : " out"));
    }
    if (!faster.empty()) out += "  faster with " + wrap_text(faster, 4) + "\n";
    out += style.dim("  " + wrap_text(util::join(others, ", ") + "; -v shows why", 2)) + "\n";
  }
  // Errors first, then warnings, then (-v) notes: the first shown is the one the verdict line answers.
  std::vector<const model::Finding*> ordered;
  for (auto severity : {model::Severity::error, model::Severity::warning, model::Severity::info})
    for (const auto& f : e.findings)
      if (f.severity == severity && !(knowledge_said && f.id == model::k_knowledge_finding_id)) ordered.push_back(&f);
  std::size_t shown = 0;
  std::set<std::string> fixes_shown; // no fix printed twice for the workload
  for (const model::Finding* finding : ordered) {
    const model::Finding& f = *finding;
    if (f.severity == model::Severity::info && !options.verbose) continue;
    if (!options.verbose && shown++ > 0) {
      // Beyond the worst finding, default text gives each one line and its best fix.
      out += "\n  " + style.mark(f.severity) + " " + style.bold(f.title) + "  " + style.dim("[" + f.id + "]") + "\n";
      if (f.impact != model::Impact::none) out += "      " + style.red("impact: " + std::string(model::describe(f.impact))) + "\n";
      if (const model::Fix* fix = best_fix(f.fixes)) {
        out += "      fix: " + fix_headline(*fix) + "\n";
      } else {
        // No verified fix: the rule's own advice, when it gives one in words.
        for (const auto& advice : f.fixes)
          if (advice.command.empty() && !advice.description.empty()) {
            out += "      fix: " + wrap_text(advice.description, 11) + "\n";
            break;
          }
      }
      continue;
    }
    out += "\n  " + style.mark(f.severity) + " " + style.bold(f.title) + "  " + style.dim("[" + f.id + "]") + "\n";
    if (f.impact != model::Impact::none) out += "      " + style.red("impact: " + std::string(model::describe(f.impact))) + "\n";
    // "No backend" is the verdict line already; its message only points at the reasons above.
    if (options.verbose || f.id != "attention-no-backend") out += "      " + wrap_text(f.message, 6) + "\n";
    out += render_fixes(f.fixes, style, 6, options.verbose, &fixes_shown);
  }
  std::size_t infos = 0;
  for (const auto& f : e.findings) infos += f.severity == model::Severity::info;
  if (infos && !options.verbose)
    out += style.dim("  (" + std::to_string(infos) + " note" + (infos == 1 ? "" : "s") + " hidden; -v shows them)") + "\n";
  // Every value came from the node, a rules file or a workload: no terminal control gets through.
  return util::terminal_safe(out, options.color == Color::yes ? util::Sgr::keep : util::Sgr::show);
}

} // namespace report
