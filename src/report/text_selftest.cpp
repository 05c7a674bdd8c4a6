// `selftest` as text (render.hpp): one line per check with its status, time and measurements,
// what went wrong, then how many GPU checks ran and the findings about the self-test. Rendered
// from the typed summary a report carries; each check's own result object stays free-form JSON.
#include "report/render.hpp"

#include "util/strings.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace report {

namespace {

using Json = nlohmann::ordered_json;

// Words of text in lines of at most width characters.
std::vector<std::string> wrap_words(const std::string& text, std::size_t width) {
  std::vector<std::string> lines(1);
  for (auto word : util::split(text, ' ')) {
    if (!lines.back().empty() && lines.back().size() + 1 + word.size() > width) lines.emplace_back();
    if (!lines.back().empty()) lines.back() += ' ';
    lines.back() += std::string(word);
  }
  return lines;
}

// The Python tier's own account: TE's choice per workload (its selector, and what
// DotProductAttention really ran), then each backend's numerics against the fp32 reference.
std::string render_python_tier(const Json& r, bool verbose) {
  std::string out;
  auto str = [](const Json& j, const char* key) { return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string(); };
  if (r.contains("reused") && r["reused"].is_object()) {
    // An earlier run's answer (selftest/python_reuse.hpp): said on the check, with how to refresh it.
    const Json& reused = r["reused"];
    const auto age = reused.value("age_seconds", std::int64_t{0});
    const std::string ago = age < 120    ? std::to_string(age) + " s"
                            : age < 7200 ? std::to_string(age / 60) + " min"
                                         : std::to_string(age / 3600) + " h";
    out += "           reused: the tier's answer of " + str(reused, "ran_at") + " (" + ago + " ago); the " +
           std::to_string(reused.value("files", std::int64_t{0})) +
           " files and directories it loaded, its environment, the GPUs and the driver are unchanged (--fresh runs it again)\n";
  }
  if (verbose && r.contains("not_kept") && r["not_kept"].is_string()) out += "           " + str(r, "not_kept") + "\n";
  if (r.contains("te_version") && r["te_version"].is_string())
    out += "           TransformerEngine " + str(r, "te_version") + " at " + str(r, "te_path") + "\n";
  if (r.contains("selections") && r["selections"].is_array()) {
    for (const auto& s : r["selections"]) {
      std::string selector = s.contains("selector") && s["selector"].is_object()
                                 ? (s["selector"].contains("error") ? "error: " + str(s["selector"], "error") : str(s["selector"], "backend"))
                                 : "";
      out += "           [" + str(s, "label") + "] TE ran " + str(s, "chosen") + " (get_attention_backend: " + selector + ")\n";
    }
  }
  if (!r.contains("cases") || !r["cases"].is_array()) return out;
  for (const auto& c : r["cases"]) {
    std::string status = str(c, "status");
    if (status == "skipped" && !verbose) continue;
    char line[256];
    std::snprintf(line, sizeof line, "           %-7s %-26s", status.c_str(), str(c, "backend").c_str());
    out += line;
    if (c.contains("ran") && c["ran"].is_string()) out += " ran " + str(c, "ran");
    if (c.contains("fwd_max_abs_err") && c["fwd_max_abs_err"].is_number() && c.contains("bwd_max_abs_err") && c["bwd_max_abs_err"].is_number()) {
      std::snprintf(line, sizeof line, "  fwd %.3g bwd %.3g", c["fwd_max_abs_err"].get<double>(), c["bwd_max_abs_err"].get<double>());
      out += line;
    }
    if (c.contains("ms") && c["ms"].is_number()) {
      std::snprintf(line, sizeof line, "  %.1f ms", c["ms"].get<double>());
      out += line;
    }
    if (verbose && c.contains("label") && c["label"].is_string()) out += "  [" + str(c, "label") + "]";
    out += "\n";
    if (!str(c, "error").empty() && (status != "skipped" || verbose)) out += "             " + str(c, "error") + "\n";
  }
  return out;
}

// What kind of failure it was, the finding that explains it, and that finding's fix with what
// re-running the check with it showed.
std::string render_failure_cause(const model::SelftestCheck& o) {
  if (o.failure_class.empty()) return {};
  std::string out = "           class: " + o.failure_class;
  if (!o.explained_by.empty()) out += "; explained by " + o.explained_by;
  out += "\n";
  if (!o.fix) return out;
  out += "           fix: " + (o.fix->command.empty() ? o.fix->description : o.fix->command);
  if (o.fix_verified == "here") out += " (verified here)";
  else if (o.fix_verified == "did_not_help") out += " (did not help here)";
  out += "\n";
  if (!o.fix_note.empty()) out += "             " + o.fix_note + "\n";
  return out;
}

} // namespace

std::string render_selftest_text(const model::SelftestSummary& selftest, const std::vector<model::Explanation>& workloads,
                                 const std::vector<model::Finding>& findings, const TextOptions& options) {
  const bool verbose = options.verbose;
  std::string out;
  // The answer first: each workload's verdict, with what the self-test showed for it.
  for (const auto& e : workloads) out += render_verdict_line(e, options);
  if (!workloads.empty()) out += "\n";
  out += "Self-test\n";
  int gpu_checks = 0, gpu_ran = 0;
  for (const auto& o : selftest.checks) {
    // GPU checks: all but NVRTC's compile and the Python tier; "ran" when not skipped.
    if (o.check != "nvrtc" && !model::is_python_tier_check(o.check)) {
      ++gpu_checks;
      gpu_ran += o.status != "skipped";
    }
    const std::string& check = o.check;
    const std::string& label = o.label;
    const std::string& status = o.status;
    const std::string& error = o.error;
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%6.2f s", o.seconds);
    std::string mark = status == "ok" ? "ok     " : status == "skipped" ? "skipped" : status == "failed" ? "FAILED " : "ERROR  ";
    out += "  " + mark + " " + seconds + "  " + check + (label.empty() ? "" : " [" + label + "]");
    const Json r = o.result.is_object() ? o.result : Json::object();
    if (r.contains("max_abs_err") && r["max_abs_err"].is_number()) out += "  max_abs_err=" + std::to_string(r["max_abs_err"].get<double>());
    if (r.contains("execute_ms") && r["execute_ms"].is_number()) out += "  " + std::to_string(r["execute_ms"].get<double>()) + " ms";
    if (r.contains("tflops") && r["tflops"].is_number()) out += " (" + std::to_string(r["tflops"].get<double>()) + " TFLOP/s)";
    if (r.contains("bus_bandwidth_gbps") && r["bus_bandwidth_gbps"].is_number() && r.contains("gpus") && r["gpus"].is_number_integer() &&
        r["gpus"].get<int>() > 1)
      out += "  busbw=" + std::to_string(r["bus_bandwidth_gbps"].get<double>()) + " GB/s";
    if (r.contains("backend") && r["backend"].is_string()) out += "  TE chose " + r["backend"].get<std::string>();
    out += "\n";
    // The Python tier never skips silently: its reason shows without -v.
    if (!error.empty() && (status != "skipped" || verbose || model::is_python_tier_check(check))) {
      for (auto line : util::split(error, '\n')) out += "           " + std::string(line) + "\n";
    }
    out += render_failure_cause(o);
    if (check == "python" && r.is_object()) out += render_python_tier(r, verbose);
    if (r.contains("scaled") && r["scaled"].is_string()) out += "           " + r["scaled"].get<std::string>() + "\n";
    if (r.contains("note") && r["note"].is_string() && (verbose || r.contains("reference"))) out += "           " + r["note"].get<std::string>() + "\n";
    if (verbose && r.contains("runtime_compilation_seconds") && r.contains("engine") && r["engine"].is_object()) {
      char line[200];
      std::snprintf(line, sizeof line, "           cuDNN engine %lld compiled at plan time in %.3f s (a job pays it on its first step)\n",
                    static_cast<long long>(r["engine"].value("index", std::int64_t{-1})), r["runtime_compilation_seconds"].get<double>());
      out += line;
    }
    // A plan from the doctor's kernel cache was compiled by an earlier run: no compile time to claim.
    if (verbose && r.contains("plan_cache") && r["plan_cache"].is_object() && r["plan_cache"].value("source", "") == "loaded" &&
        r.contains("engine") && r["engine"].is_object() && r["engine"].value("runtime_compiled", false)) {
      char line[220];
      std::snprintf(line, sizeof line,
                    "           cuDNN engine %lld loaded from the kernel cache in %.3f s (compiled by an earlier run; a job compiles it on "
                    "its first step)\n",
                    static_cast<long long>(r["engine"].value("index", std::int64_t{-1})), r["plan_cache"].value("seconds", 0.0));
      out += line;
    }
    if (verbose && r.contains("kernel_seconds") && r.contains("reference_seconds")) {
      char line[160];
      std::snprintf(line, sizeof line, "           cuDNN kernels %.3f s, fp32 reference on the %s %.3f s\n", r["kernel_seconds"].get<double>(),
                    r.contains("reference") && r["reference"].is_object() ? r["reference"].value("where", "").c_str() : "",
                    r["reference_seconds"].get<double>());
      out += line;
    }
    if (verbose && !o.phases.empty()) {
      // The child's own account of where its time went (phases overlap: threads).
      std::string phases;
      for (const auto& p : o.phases) {
        std::string name = p.phase + (p.what.empty() ? "" : " " + p.what);
        char span[160];
        std::snprintf(span, sizeof span, "%s%s %.3f%s", phases.empty() ? "" : ", ", name.c_str(), p.seconds, p.open ? " (open)" : "");
        phases += span;
      }
      for (const auto& line : wrap_words(phases, 96)) out += "           " + line + "\n";
    }
  }
  // A self-test that ran nothing on a GPU has not checked the GPU: say so (exit 3, UNKNOWN).
  out += "\n" + std::to_string(gpu_ran) + " of " + std::to_string(gpu_checks) + " GPU checks ran" +
         (gpu_ran == 0 && gpu_checks > 0 ? ": the GPU is unchecked (no GPU or no driver; see the skipped checks)" : "") + "\n";
  if (!findings.empty()) out += "\nFindings\n";
  for (const auto& f : findings) {
    out += "  [" + std::string(model::to_string(f.severity)) + "] " + f.id + ": " + f.title + "\n";
    for (auto line : util::split(util::trim(f.message), '\n')) out += "      " + std::string(line) + "\n";
    for (const auto& fix : f.fixes) out += "      fix: " + (fix.command.empty() ? fix.description : fix.command) + "\n";
  }
  return out;
}

} // namespace report
