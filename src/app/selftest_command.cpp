// `selftest`: real kernels and TE's real selector on this node (src/selftest), their results
// as facts, the rules over them, and a report of each check.
#include "app/app.hpp"
#include "app/command_io.hpp"
#include "app/rules_loading.hpp"
#include "app/selftest_command.hpp"
#include "app/workloads.hpp"
#include "report/render.hpp"
#include "selftest/selftest.hpp"
#include "util/json_text.hpp"
#include "util/strings.hpp"

#include <cstdlib>
#include <filesystem>
#include <unistd.h>

namespace app {

namespace {

// The Python tier's script: $NVTE_DOCTOR_SELFTEST_PY, next to the binary, the installed data
// directory, the source tree.
std::string find_python_script() {
  if (const char* env = std::getenv("NVTE_DOCTOR_SELFTEST_PY"); env && *env) return env;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::vector<std::filesystem::path> candidates;
  if (!ec) {
    candidates.push_back(exe.parent_path() / "selftest.py");
    candidates.push_back(exe.parent_path().parent_path() / "share/nvte-doctor/selftest.py");
  }
  candidates.push_back(std::filesystem::path(NVTE_DATADIR) / "selftest.py");
  candidates.push_back(std::filesystem::path(NVTE_SOURCE_DIR) / "src/selftest/selftest.py");
  for (const auto& c : candidates) {
    if (std::filesystem::exists(c, ec)) return c.string();
  }
  return {};
}

// --sweep KEY=V1,V2 (repeatable) as the cartesian product of settings.
std::vector<std::vector<std::string>> sweep_settings(const std::vector<std::string>& specs) {
  std::vector<std::vector<std::string>> cells = {{}};
  for (const auto& spec : specs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) throw util::Fatal{"--sweep '" + spec + "': expected KEY=V1,V2,..."};
    std::vector<std::vector<std::string>> next;
    for (const auto& cell : cells) {
      for (auto value : util::split(std::string_view(spec).substr(eq + 1), ',')) {
        auto extended = cell;
        extended.push_back(spec.substr(0, eq) + "=" + std::string(util::trim(value)));
        next.push_back(std::move(extended));
      }
    }
    cells = std::move(next);
  }
  if (cells.size() > 1024) throw util::Fatal{"--sweep: " + std::to_string(cells.size()) + " cases is too many (at most 1024)"};
  return cells;
}

std::vector<model::Workload> selftest_workloads(const Options& options) {
  bool given = !options.workload_files.empty() || !options.hf_configs.empty() || !options.megatron_args.empty() ||
               !options.workload_sets.empty();
  // Without a workload: a small training-like shape (bf16, bshd, causal, GQA off).
  const std::vector<std::string> k_default = {"qkv_format=bshd", "batch_size=2", "max_seqlen_q=512", "head_dim_qk=128",
                                              "attn_mask_type=causal"};
  std::vector<model::Workload> out;
  for (const auto& cell : sweep_settings(options.sweeps)) {
    std::vector<std::string> settings = given ? std::vector<std::string>{} : k_default;
    settings.insert(settings.end(), cell.begin(), cell.end());
    for (auto& w : load_workloads(options, settings)) out.push_back(std::move(w));
  }
  return out;
}

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
std::string render_python_tier(const selftest::Json& r, bool verbose) {
  std::string out;
  auto str = [](const selftest::Json& j, const char* key) { return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string(); };
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

std::string render_text(const selftest::Results& results, const std::vector<model::Finding>& findings, bool verbose) {
  std::string out = "Self-test\n";
  for (const auto& o : results.outcomes) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%6.2f s", o.seconds);
    std::string mark = o.status == "ok" ? "ok     " : o.status == "skipped" ? "skipped" : o.status == "failed" ? "FAILED " : "ERROR  ";
    out += "  " + mark + " " + seconds + "  " + o.check + (o.label.empty() ? "" : " [" + o.label + "]");
    const auto& r = o.result;
    if (r.contains("max_abs_err")) out += "  max_abs_err=" + std::to_string(r["max_abs_err"].get<double>());
    if (r.contains("execute_ms")) out += "  " + std::to_string(r["execute_ms"].get<double>()) + " ms";
    if (r.contains("tflops")) out += " (" + std::to_string(r["tflops"].get<double>()) + " TFLOP/s)";
    if (r.contains("bus_bandwidth_gbps") && r.contains("gpus") && r["gpus"].get<int>() > 1) out += "  busbw=" + std::to_string(r["bus_bandwidth_gbps"].get<double>()) + " GB/s";
    if (r.contains("backend")) out += "  TE chose " + r["backend"].get<std::string>();
    out += "\n";
    if (!o.error.empty() && (o.status != "skipped" || verbose)) {
      for (auto line : util::split(o.error, '\n')) out += "           " + std::string(line) + "\n";
    }
    if (o.check == "python" && r.is_object()) out += render_python_tier(r, verbose);
    if (r.contains("scaled") && r["scaled"].is_string()) out += "           " + r["scaled"].get<std::string>() + "\n";
    if (r.contains("note") && r["note"].is_string() && (verbose || r.contains("reference"))) out += "           " + r["note"].get<std::string>() + "\n";
    if (verbose && r.contains("runtime_compilation_seconds") && r.contains("engine") && r["engine"].is_object()) {
      char line[200];
      std::snprintf(line, sizeof line, "           cuDNN engine %lld compiled at plan time in %.3f s (a job pays it on its first step)\n",
                    static_cast<long long>(r["engine"].value("index", std::int64_t{-1})), r["runtime_compilation_seconds"].get<double>());
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
        char span[96];
        std::snprintf(span, sizeof span, "%s%s %.3f%s", phases.empty() ? "" : ", ", p.name().c_str(), p.seconds, p.open ? " (open)" : "");
        phases += span;
      }
      for (auto line : wrap_words(phases, 96)) out += "           " + line + "\n";
    }
  }
  if (!findings.empty()) out += "\nFindings\n";
  for (const auto& f : findings) {
    out += "  [" + std::string(model::to_string(f.severity)) + "] " + f.id + ": " + f.title + "\n";
    for (auto line : util::split(util::trim(f.message), '\n')) out += "      " + std::string(line) + "\n";
    for (const auto& fix : f.fixes) out += "      fix: " + (fix.command.empty() ? fix.description : fix.command) + "\n";
  }
  return out;
}

// explain's choice for what the Python tier really runs: only the keys sdpa_args() hands it
// (dtype, layout, shape, head dims, causal or not, window); a model's other settings (logit
// softcapping, dropout, a bias) are not part of the tier's run, so they must not be part of the
// prediction it is held against. "" when the tier does not run this workload.
std::string python_tier_prediction(const rules::RuleSet& rules, const model::Facts& facts, const model::Workload& w) {
  auto args = selftest::sdpa_args(w);
  if (!args) return {};
  const auto& a = *args;
  auto number = [&](const char* key) { return std::to_string(a[key].get<long long>()); };
  std::vector<std::string> settings = {
      "qkv_dtype=" + a["dtype"].get<std::string>(), "qkv_layout=" + a["layout"].get<std::string>(),
      "batch_size=" + number("batch"), "num_heads=" + number("heads"), "num_gqa_groups=" + number("kv_heads"),
      "max_seqlen_q=" + number("seq_q"), "max_seqlen_kv=" + number("seq_kv"), "head_dim_qk=" + number("dim_qk"),
      "head_dim_v=" + number("dim_v"), std::string("attn_mask_type=") + (a["causal"].get<bool>() ? "causal" : "no_mask")};
  if (a.contains("window_left") && a["window_left"].get<long long>() >= 0)
    settings.push_back("window_size=" + number("window_left") + "," + (a.contains("window_right") ? number("window_right") : "-1"));
  try {
    auto shaped = load_workloads(Options{}, settings);
    return shaped.empty() ? std::string() : rules::explain(rules, facts, shaped.front()).selected.value_or("none");
  } catch (const util::Fatal&) {
    return {};
  }
}

selftest::Results run_plan(const Options& options, const model::Facts& facts, const rules::RuleSet& rules,
                           const std::vector<model::Workload>& workloads) {
  selftest::Plan plan;
  if (options.selftest_timeout) {
    plan.runner.timeout = std::chrono::milliseconds(static_cast<long>(*options.selftest_timeout * 1000));
    plan.runner.timeout_given = true;
  }
  plan.facts = facts;
  plan.workloads = workloads;
  for (const auto& w : workloads) {
    model::Explanation e = rules::explain(rules, facts, w);
    auto fused = e.backends.find("fused_attention");
    plan.predicted.push_back(fused != e.backends.end() && fused->second.available && fused->second.sub_backend
                                 ? *fused->second.sub_backend : "none");
    plan.predicted_selected.push_back(python_tier_prediction(rules, facts, w));
  }
  plan.python_executable = options.python ? options.python->string() : facts.get_string("python.executable").value_or("python3");
  plan.python_script = find_python_script();
  return selftest::run_all(plan);
}

} // namespace

model::SelftestSummary run_selftest_step(const Options& options, model::Facts& facts, const rules::RuleSet& rules,
                                         const std::vector<model::Workload>& workloads) {
  std::vector<model::Workload> shapes = workloads;
  if (shapes.empty()) shapes = selftest_workloads(options);
  auto results = run_plan(options, facts, rules, shapes);
  selftest::add_facts(results, facts);
  return selftest::summarize(results);
}

int run_selftest(const Options& options) {
  model::Facts facts = load_facts(options);
  rules::RuleSet rules = load_rules(options);
  auto workloads = selftest_workloads(options);
  auto results = run_plan(options, facts, rules, workloads);
  selftest::add_facts(results, facts);
  auto findings = rules::evaluate_node(rules, facts);
  std::vector<model::Finding> selftest_findings;
  for (auto& f : findings) {
    bool about_selftest = false;
    for (const auto& [name, value] : f.evidence) about_selftest = about_selftest || name.starts_with("selftest.");
    if (about_selftest) selftest_findings.push_back(std::move(f));
  }
  model::Report report;
  report.findings = selftest_findings;
  report.summarize();
  int code = report.summary.exit_code();
  for (const auto& o : results.outcomes) {
    if ((o.status == "failed" || o.status == "error") && code < 1) code = 1;
  }
  if (options.format == Format::json) {
    selftest::Json doc = selftest::to_json(results);
    selftest::Json list = selftest::Json::array();
    for (const auto& f : selftest_findings) {
      selftest::Json fixes = selftest::Json::array();
      for (const auto& fix : f.fixes) fixes.push_back({{"kind", fix.kind}, {"command", fix.command}, {"description", fix.description}});
      list.push_back({{"id", f.id}, {"severity", model::to_string(f.severity)}, {"title", f.title}, {"message", f.message},
                      {"fixes", fixes}, {"references", f.references}});
    }
    doc["findings"] = list;
    selftest::Json facts_out = selftest::Json::object();
    for (const auto& [name, value] : facts.entries()) {
      if (name.starts_with("selftest.")) facts_out[name] = value.to_string();
    }
    doc["facts"] = facts_out;
    doc = selftest::Json{{"schema_version", 1}, {"selftest", doc}};
    write_output(options, util::json_text(doc, 2) + "\n");
  } else {
    write_output(options, render_text(results, selftest_findings, options.verbosity > 0));
  }
  return code;
}

int run_selftest_child(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: nvte-doctor selftest-child CHECK JSON-ARGS (started by `nvte-doctor selftest`)\n");
    return 2;
  }
  return selftest::child_main(argv[2], argv[3], selftest::builtin_checks());
}

} // namespace app
