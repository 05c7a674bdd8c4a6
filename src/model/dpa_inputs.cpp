#include "model/dpa_inputs.hpp"

#include "util/strings.hpp"

#include <string>

namespace model {

namespace {

// References (TE's code, per tag): DotProductAttention.init_fp8_metadata's NVTE_DPA_FP8_RECIPE
// switch (v2.8 dot_product_attention.py:540-640, v2.15 :605-748, v2.18 :606-747) and the
// selector's use of fp8_meta["local_recipes"][0] (v2.18 utils.py:566-569);
// DotProductAttention.__init__ self.deterministic
// (v1.12 attention.py:7463, v2.3 dot_product_attention.py:280, HEAD :761); forward's window check
// and KV-cache block (v1.12 attention.py:7827-7846, v2.2 attention.py:5925-6031, HEAD
// dot_product_attention.py:1745-1849); InferenceParams.step (v2.3 attention/inference.py);
// check_set_window_size and get_qkv_layout in the selector's module.

class Step {
public:
  explicit Step(const Workload& given) : m_w(given) {}

  std::string text(std::string_view key) const {
    const Value* v = m_w.get(key);
    return v && v->is(ValueType::string) ? v->as_string() : std::string();
  }
  bool flag(std::string_view key) const {
    const Value* v = m_w.get(key);
    return v && v->is(ValueType::boolean) && v->as_bool();
  }
  void set(std::string_view key, Value value, std::string note) {
    m_w.values.insert_or_assign(std::string(key), std::move(value));
    if (!note.empty()) m_w.notes.push_back(std::move(note));
  }
  void note(std::string text) { m_w.notes.push_back(std::move(text)); }
  Workload done() && { return std::move(m_w); }

  void window(const std::string& mask) {
    const Value* l = m_w.get("window_size_left");
    const Value* r = m_w.get("window_size_right");
    if (!l || !r || !l->is(ValueType::integer) || !r->is(ValueType::integer)) return;
    long left = l->as_int(), right = r->as_int();
    long new_left = left, new_right = right;
    bool causal = mask.find("causal") != std::string::npos;
    if (causal) {
      if ((left == -1 && right == -1) || (left >= 0 && right != 0)) new_right = 0;
      else if (!(left == -1 && right == 0) && (left < 0 || right != 0)) {
        note("TE refuses window_size " + std::to_string(left) + "," + std::to_string(right) + " for the " + mask +
             " mask (check_set_window_size asserts)");
        return;
      }
    } else {
      if (left == -1 && right == 0) new_right = -1;
      else if (!(left == -1 && right == -1) && (left < 0 || right < 0)) {
        note("TE refuses window_size " + std::to_string(left) + "," + std::to_string(right) + " for the " + mask +
             " mask (check_set_window_size asserts)");
        return;
      }
    }
    if (new_left == left && new_right == right) return;
    std::string corrected = std::to_string(new_left) + "," + std::to_string(new_right);
    set("window_size", Value(corrected),
        "window_size " + std::to_string(left) + "," + std::to_string(right) + " corrected to " + corrected + " for the " + mask +
            " mask, as DotProductAttention does (check_set_window_size)");
    set("window_size_left", Value(new_left), {});
    set("window_size_right", Value(new_right), {});
  }

  void diagonal(const std::string& mask, bool quiet) { align_diagonal_to_mask(m_w, mask, quiet); }

  void determinism(const Facts& node) {
    auto env = node.get_string("env.NVTE_ALLOW_NONDETERMINISTIC_ALGO");
    if (!env || flag("deterministic")) return;
    auto value = util::parse_int(util::trim(*env));
    if (!value) {
      note("NVTE_ALLOW_NONDETERMINISTIC_ALGO=" + *env + " is not an integer: DotProductAttention fails on it");
      return;
    }
    if (*value == 0)
      set("deterministic", Value(true), "deterministic: NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 makes DotProductAttention deterministic");
  }

  // init_fp8_metadata's switch on NVTE_DPA_FP8_RECIPE (TE 2.8+, inside an FP8 autocast): "F16"
  // turns FP8 attention off; "DelayedScaling", "Float8CurrentScaling" and (2.15+)
  // "MXFP8BlockScaling" replace the autocast recipe for attention where TE has that switch; the
  // selector then checks the recipe attention runs. TE 2.8-2.14 asserts on any other recipe than
  // delayed/current scaling with fp8_dpa or fp8_mha (noted, left as given).
  void fp8_recipe(const Facts& node, const Version& te) {
    if (!flag("fp8") || te < Version{2, 8}) return;
    const bool mxfp8_switch = te >= Version{2, 15};
    const std::string given = text("fp8_recipe");
    auto env = node.get_string("env.NVTE_DPA_FP8_RECIPE");
    std::string recipe = given;
    if (env && *env == "F16") {
      if (flag("fp8_dpa") || flag("fp8_mha")) {
        set("fp8_dpa", Value(false), "NVTE_DPA_FP8_RECIPE=F16: DotProductAttention runs in BF16/FP16 (fp8_dpa and fp8_mha off)");
        set("fp8_mha", Value(false), {});
      }
      return;
    }
    if (env) {
      bool from_current = given == "current", from_delayed = given == "delayed", from_nvfp4 = given == "nvfp4";
      bool from_mxfp8 = mxfp8_switch && given == "mxfp8";
      if (*env == "DelayedScaling" && (from_current || from_nvfp4 || from_mxfp8)) recipe = "delayed";
      else if (*env == "Float8CurrentScaling" && (from_delayed || from_nvfp4 || from_mxfp8)) recipe = "current";
      else if (mxfp8_switch && *env == "MXFP8BlockScaling" && (from_delayed || from_current || from_nvfp4)) recipe = "mxfp8";
    }
    if (recipe != given)
      set("fp8_recipe", Value(recipe),
          "fp8_recipe " + given + " becomes " + recipe + " for attention: NVTE_DPA_FP8_RECIPE=" + *env + " (TE " + te.to_string() +
              ", DotProductAttention.init_fp8_metadata)");
    if (!mxfp8_switch && recipe != "delayed" && recipe != "current" && (flag("fp8_dpa") || flag("fp8_mha")))
      note("TE " + te.to_string() + " refuses the " + recipe +
           " recipe in DotProductAttention with fp8_dpa/fp8_mha (init_fp8_metadata asserts; per-tensor scaling only before 2.15)");
  }

  // forward's KV-cache block (an input TE refuses is noted and left as given).
  void kv_cache(const Version& te) {
    if (!flag("inference")) return;
    std::string mask = text("attn_mask_type");
    std::string layout = text("qkv_layout");
    std::string format = qkv_format_of_layout(layout);
    bool new_cache = te >= Version{2, 2};
    if (format.find("_2") != std::string::npos || format == "bhsd") {
      note("TE's KV cache takes one qkv_format for Q, K and V (bshd, sbhd or thd), not " + layout);
      return;
    }
    if (new_cache && mask.find("padding") == std::string::npos) {
      note("TE " + te.to_string() + " refuses a KV cache without a padding mask (\"KV caching requires padding mask\")");
      return;
    }
    if (!new_cache && format == "thd") {
      note("TE " + te.to_string() + " has no KV cache for thd (from TE 2.2)");
      return;
    }
    if (mask == "padding_causal" || (!new_cache && mask == "causal")) {
      set("attn_mask_type", Value(mask + "_bottom_right"),
          mask + " becomes " + mask + "_bottom_right with a KV cache, as DotProductAttention does");
      diagonal(mask + "_bottom_right", true);
    }
    // K and V from the cache: contiguous in the input's format (before 2.2) or bshd (2.2 on).
    std::string kv = new_cache ? "bshd" : format;
    std::string rewritten = format + "_" + kv + "_" + kv;
    if (rewritten != layout)
      set("qkv_layout", Value(rewritten),
          "qkv_layout " + layout + " becomes " + rewritten + " with " +
              (new_cache ? "TE's KV cache (K and V in bshd)" : "a KV cache (K and V contiguous)"));
    set("qkv_format", Value(qkv_format_of_layout(rewritten)), "");
  }

private:
  Workload m_w;
};

} // namespace

void align_diagonal_to_mask(Workload& w, const std::string& mask, bool quiet) {
  bool forced = mask == "causal" || mask == "padding_causal" || mask.ends_with("bottom_right");
  bool aligned = mask.ends_with("bottom_right");
  const Value* given = w.get("bottom_right_diagonal");
  if (!forced || !given || !given->is(ValueType::boolean) || given->as_bool() == aligned) return;
  // A diagonal the user did not give (the default) changes silently.
  for (const auto& key : w.assumed) quiet = quiet || key == "bottom_right_diagonal";
  w.values.insert_or_assign("bottom_right_diagonal", Value(aligned));
  if (!quiet)
    w.notes.push_back("bottom_right_diagonal set to " + std::string(aligned ? "true" : "false") + " for the " + mask +
                      " mask, as DotProductAttention does");
}

std::string qkv_format_of_layout(std::string_view layout) {
  std::string format;
  for (auto part : util::split(layout, '_')) {
    std::string p(part);
    for (char c : {'2', '3'}) {
      if (auto pos = p.find(c); pos != std::string::npos) p.erase(pos, 1);
    }
    if (!format.empty()) {
      if (format != p && format.find('_') == std::string::npos) format += "_2" + p;
      continue;
    }
    format = p;
  }
  return format;
}

Workload selector_inputs(const Workload& given, const Facts& node, const std::optional<Version>& te) {
  Step step(given);
  std::string mask = step.text("attn_mask_type");
  step.determinism(node);
  if (te) step.fp8_recipe(node, *te);
  step.window(mask);
  step.diagonal(mask, false);
  if (te) step.kv_cache(*te);
  return std::move(step).done();
}

} // namespace model
