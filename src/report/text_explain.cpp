// `explain` as text: what TE's NVTE_DEBUG_LEVEL=2 log says, but per backend with the reason it is
// out and what would change that, then the selected backend.
#include "report/render.hpp"
#include "report/style.hpp"

#include "util/strings.hpp"

#include <algorithm>

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

std::string render_explain_text(const model::Explanation& e, const TextOptions& options) {
  Style style(options.color);
  std::string out;
  out += style.bold("Workload " + util::one_line(e.workload.name)) + ": " + workload_line(e.workload) + "\n";
  if (!e.workload.assumed.empty()) {
    // The shape-defining assumptions; -v lists every TE default that was filled in.
    static const std::vector<std::string_view> k_shape = {"qkv_dtype", "qkv_format", "qkv_layout", "attn_mask_type",
        "is_training", "batch_size", "max_seqlen_q", "max_seqlen_kv", "num_gqa_groups", "head_dim_v", "window_size"};
    std::vector<std::string> assumed;
    for (const auto& key : e.workload.assumed) {
      if (!options.verbose && std::find(k_shape.begin(), k_shape.end(), key) == k_shape.end()) continue;
      const model::Value* v = e.workload.get(key);
      assumed.push_back(key + "=" + (v ? v->to_string() : "?"));
    }
    if (!assumed.empty()) out += style.dim("  assumed: " + wrap_text(util::join(assumed, ", "), 11)) + "\n";
  }
  for (const auto& note : e.workload.notes) out += style.dim("  note: " + wrap_text(note, 8)) + "\n";
  out += "  TransformerEngine " + e.te_version +
         (e.te_version_assumed ? style.yellow(" (assumed: TE is not installed; --set te.version=X to choose)") : "") + "\n\n";

  for (const auto& backend : k_backends) {
    auto it = e.backends.find(backend.key);
    model::BackendVerdict verdict = it == e.backends.end() ? model::BackendVerdict{} : it->second;
    std::string label(backend.label);
    if (verdict.sub_backend) label += " (" + *verdict.sub_backend + ")";
    bool is_selected = e.selected && *e.selected == backend.label;
    out += "  " + (verdict.available ? style.mark_ok() : style.mark(model::Severity::error)) + " " + style.bold(label) +
           (is_selected ? style.green("  ← selected") : "") + "\n";
    for (const auto& reason : verdict.reasons) {
      out += "      " + wrap_text(reason.message, 6) + "  " + style.dim("[" + reason.rule + "]") + "\n";
      for (const auto& fix : reason.fixes) out += render_fix(fix, style, 6);
    }
  }
  out += "\n";
  if (e.selected) {
    out += "  Selected: " + style.green(*e.selected) + "\n";
  } else {
    out += "  " + style.red("No dot product attention backend is available for this workload.") + "\n";
  }
  for (const auto& f : e.findings) {
    out += "\n  " + style.mark(f.severity) + " " + style.bold(f.title) + "  " + style.dim("[" + f.id + "]") + "\n";
    out += "      " + wrap_text(f.message, 6) + "\n";
    out += render_fixes(f.fixes, style, 6, options.verbose);
  }
  // Every value came from the node, a rules file or a workload: no terminal control gets through.
  return util::terminal_safe(out, options.color == Color::yes ? util::Sgr::keep : util::Sgr::show);
}

} // namespace report
