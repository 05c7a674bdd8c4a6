// `selftest`: real kernels and TE's real selector on this node (src/selftest), their results
// as facts, the rules over them, and a report of each check.
#include "app/app.hpp"
#include "app/command_io.hpp"
#include "app/rules_loading.hpp"
#include "app/selftest_command.hpp"
#include "app/sweep.hpp"
#include "app/workloads.hpp"
#include "app/diagnosis.hpp"
#include "probe/tree_policy.hpp"
#include "report/render.hpp"
#include "rules/verdict.hpp"
#include "selftest/bytecode_cache.hpp"
#include "selftest/python_reuse.hpp"
#include "selftest/selftest.hpp"
#include "util/json_text.hpp"
#include "util/logging.hpp"
#include "util/path_trust.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <filesystem>
#include <unistd.h>

namespace app {

namespace {

// The Python tier's script: $NVTE_DOCTOR_SELFTEST_PY, next to the binary, <prefix>/share/nvte-doctor
// (the relocatable bundle ships it there), the installed data directory. The source tree's copy
// only for a binary that runs from its build tree, and first there: an installed or bundled binary
// never runs a script from the path it was built at, which anyone may create on a node. Empty when
// there is none; looked lists the places.
std::string find_python_script(std::vector<std::string>& looked) {
  if (const char* env = std::getenv("NVTE_DOCTOR_SELFTEST_PY"); env && *env) return env;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::vector<std::filesystem::path> candidates;
  if (!ec && exe.parent_path() == std::filesystem::path(NVTE_BUILD_DIR))
    candidates.push_back(std::filesystem::path(NVTE_SOURCE_DIR) / "src/selftest/selftest.py");
  if (!ec) {
    candidates.push_back(exe.parent_path() / "selftest.py");
    candidates.push_back(exe.parent_path().parent_path() / "share/nvte-doctor/selftest.py");
  }
  candidates.push_back(std::filesystem::path(NVTE_DATADIR) / "selftest.py");
  for (const auto& c : candidates) {
    if (std::filesystem::is_regular_file(c, ec)) return c.string();
    looked.push_back(c.string());
  }
  return {};
}

// The Python tier's interpreter and script, or why it does not run (its skipped check, in text
// and JSON: never silent; selftest::python_tier_unavailable adds the tier's own reasons). The
// interpreter is --python (NVTE_DOCTOR_PYTHON, which the wheel's launcher sets, is the same
// choice), or the one a live probe of this machine found; never one that facts of a file or an
// examined tree name (probe/tree_policy.hpp). --python '' leaves it empty: "no Python interpreter
// is known".
void choose_python_tier(const Options& options, const model::Facts& facts, selftest::Plan& plan) {
  if (options.python && !options.python->empty()) {
    auto found = python_on_this_machine(*options.python, python_option(options));
    if (!found) throw util::Fatal{found.error().message};
    plan.python_executable = *found;
  } else if (options.python) {
    // --python '': python_tier_unavailable says so.
  } else if (!probe::may_run_named_paths(facts_origin(options))) {
    plan.python_skipped =
        std::string("pass --python to run the Python tier: the facts come from ") +
        (options.facts_file ? "--facts " + options.facts_file->string() : "the tree under --root " + options.root.string()) +
        ", and an interpreter they name is never run here";
    return;
  } else if (auto executable = facts.get_string("python.executable")) {
    plan.python_executable = *executable;
  } else {
    plan.python_skipped = "no Python interpreter found on this machine; pass --python to run the Python tier";
    return;
  }
  std::vector<std::string> looked;
  plan.python_script = find_python_script(looked);
  if (plan.python_script.empty())
    plan.python_skipped =
        "no selftest.py for the Python tier (looked in " + util::join(looked, ", ") + "; NVTE_DOCTOR_SELFTEST_PY names another)";
}

// A private directory name in the doctor's cache directory, made when missing: the Python
// tier's bytecode (python-bytecode, selftest::PythonRun::bytecode_cache) and the cuDNN checks'
// compiled kernels (selftest-kernels, selftest::Plan::kernel_cache); none with --no-cache or
// where none can be had.
std::string private_cache_subdirectory(const Options& options, const char* name) {
  auto base = cache_directory(options);
  if (!base) return {};
  auto dir = *base / name;
  auto made = util::private_cache_directory(*base);
  if (made) made = util::private_cache_directory(dir);
  if (!made) {
    util::log::debug(std::string("self-test: no ") + name + " cache: " + made.error().message);
    return {};
  }
  return dir.string();
}

// Whether a library path of the facts may be loaded by a self-test child: only what a live probe
// of this machine found, and as root only a file no other user can change (probe/tree_policy.hpp).
std::function<std::optional<std::string>(const std::string&)> library_refusal(const Options& options) {
  if (!probe::may_run_named_paths(facts_origin(options))) {
    return [](const std::string&) -> std::optional<std::string> {
      return std::string("the facts do not come from a live probe of this machine, and a library they name is never loaded here");
    };
  }
  return [](const std::string& path) { return probe::ownership_refusal(path, ::geteuid()); };
}

std::vector<model::Workload> selftest_workloads(const Options& options) {
  bool given = !options.workload_files.empty() || !options.hf_configs.empty() || !options.megatron_args.empty() ||
               !options.te_logs.empty() || !options.workload_sets.empty();
  // Without a workload: a small training-like shape (bf16, bshd, causal, GQA off).
  const std::vector<std::string> k_default = {"qkv_format=bshd", "batch_size=2", "max_seqlen_q=512", "head_dim_qk=128",
                                              "attn_mask_type=causal"};
  // Each file is read once (a TE log on standard input can only be); each sweep cell completes
  // the same workloads with its settings. A cell starts children: at most 1024 of them.
  const SourceWorkloads source = read_workloads(options);
  std::vector<model::Workload> out;
  for (const auto& cell : sweep_cells(parse_sweeps(options.sweeps), 1024)) {
    std::vector<std::string> settings = given ? std::vector<std::string>{} : k_default;
    settings.insert(settings.end(), cell.settings.begin(), cell.settings.end());
    for (auto& w : complete_workloads(source, options, settings)) out.push_back(std::move(w));
  }
  return out;
}

// explain's answer for what the self-test really runs: only the keys sdpa_args() hands the
// te_selector child and the Python tier (dtype, layout, shape, head dims, causal or not, window,
// training, determinism). A model's other settings (logit softcapping, dropout, a bias) are not
// part of those runs, so they must not be part of the prediction the runs are held against
// (Gemma-2's softcapping made explain say "none" where TE's selector, asked without it, chose
// F16_arbitrary_seqlen: seen on the H100). nullopt when the self-test does not run the workload.
std::optional<model::Explanation> shape_explanation(const rules::RuleSet& rules, const model::Facts& facts, const model::Workload& w) {
  auto args = selftest::sdpa_args(w);
  if (!args) return std::nullopt;
  const auto& a = *args;
  auto number = [&](const char* key) { return std::to_string(a[key].get<long long>()); };
  std::vector<std::string> settings = {"qkv_dtype=" + a["dtype"].get<std::string>(),
                                       "qkv_layout=" + a["layout"].get<std::string>(),
                                       "batch_size=" + number("batch"),
                                       "num_heads=" + number("heads"),
                                       "num_gqa_groups=" + number("kv_heads"),
                                       "max_seqlen_q=" + number("seq_q"),
                                       "max_seqlen_kv=" + number("seq_kv"),
                                       "head_dim_qk=" + number("dim_qk"),
                                       "head_dim_v=" + number("dim_v"),
                                       std::string("attn_mask_type=") + (a["causal"].get<bool>() ? "causal" : "no_mask")};
  if (a.contains("window_left") && a["window_left"].get<long long>() >= 0)
    settings.push_back("window_size=" + number("window_left") + "," + (a.contains("window_right") ? number("window_right") : "-1"));
  for (const char* key : {"is_training", "deterministic"})
    if (a.contains(key)) settings.push_back(std::string(key) + "=" + (a[key].get<bool>() ? "true" : "false"));
  try {
    auto shaped = load_workloads(Options{}, settings);
    if (shaped.empty()) return std::nullopt;
    return rules::explain(rules, facts, shaped.front());
  } catch (const util::Fatal&) {
    return std::nullopt;
  }
}

selftest::Results run_plan(const Options& options, const model::Facts& facts, const rules::RuleSet& rules,
                           const std::vector<model::Workload>& workloads) {
  selftest::Plan plan;
  if (options.selftest_timeout) {
    // The command line refuses what is not in (0, a day]; held here too, so that no value (NaN,
    // 1e300) reaches the conversion, whose result is undefined past the integer's range.
    double seconds = *options.selftest_timeout;
    seconds = seconds > 0 ? std::min(seconds, k_max_timeout_seconds) : 0.001;
    plan.runner.timeout = std::chrono::milliseconds(static_cast<long>(seconds * 1000));
    plan.runner.timeout_given = true;
  }
  plan.facts = facts;
  plan.workloads = workloads;
  for (const auto& w : workloads) {
    auto e = shape_explanation(rules, facts, w);
    std::string sub_backend = "none";
    if (e) {
      if (auto fused = e->backends.find("fused_attention");
          fused != e->backends.end() && fused->second.available && fused->second.sub_backend)
        sub_backend = *fused->second.sub_backend;
    }
    plan.predicted.push_back(sub_backend);
    plan.predicted_selected.push_back(e ? e->selected.value_or("none") : std::string());
  }
  choose_python_tier(options, facts, plan);
  if (!plan.python_executable.empty()) {
    // Bounded first: an oversized tree goes whole, and the tier fills it again.
    if (auto base = cache_directory(options))
      if (auto removed = selftest::bound_bytecode_cache(*base / "python-bytecode")) util::log::info(*removed);
    plan.python_bytecode_cache = private_cache_subdirectory(options, "python-bytecode");
  }
  // The tier's ok answer is reused while nothing it loaded changed (python_reuse.hpp); only for
  // this machine's own facts: those of a file or an examined tree are not what the tier ran on.
  // --fresh recalls nothing; its answer replaces the kept one.
  if (!plan.python_executable.empty() && probe::may_run_named_paths(facts_origin(options))) {
    if (auto dir = private_cache_subdirectory(options, "selftest-python"); !dir.empty()) {
      auto reuse = std::make_shared<selftest::PythonReuse>();
      reuse->cache = selftest::KernelCache::open(dir, {.max_file_bytes = 32u << 20, .max_files = 16});
      reuse->fresh = options.fresh;
      plan.python_reuse = std::move(reuse);
    }
  }
  plan.kernel_cache = private_cache_subdirectory(options, "selftest-kernels");
  plan.load_refusal = library_refusal(options);
  return selftest::run_all(plan);
}

} // namespace

void explain_selftest_failures(model::SelftestSummary& summary, const std::vector<model::Finding>& node_findings,
                               const std::vector<model::Explanation>& workloads) {
  rules::join_selftest_failures(summary, node_findings, workloads);
  bool gpu_ran = false;
  for (const auto& c : summary.checks)
    gpu_ran = gpu_ran || (c.check != "nvrtc" && !model::is_python_tier_check(c.check) && c.status != "skipped");
  selftest::verify_env_fixes(summary, selftest::rerun_check, gpu_ran);
}

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
  for (const auto& f : findings) {
    bool about_selftest = false;
    for (const auto& [name, value] : f.evidence) about_selftest = about_selftest || name.starts_with("selftest.");
    if (about_selftest) selftest_findings.push_back(f);
  }
  // Each workload's verdict with the self-test's checks at its shape as evidence; the node
  // findings that concern a backend (two cuDNN copies) take part as in explain. A failed check is
  // first joined to the node finding that explains it (and its environment fix tried), so that
  // the verdict can say the fix passed here; then to the workloads' own findings.
  std::vector<model::Finding> node_findings = verdict_node_findings(rules, facts);
  model::SelftestSummary summary = selftest::summarize(results);
  explain_selftest_failures(summary, node_findings);
  explain_selftest_failures(summary, findings);
  DiagnosisInputs inputs{FixSearch::yes, &node_findings, &summary, {}};
  std::vector<model::Explanation> explanations = diagnose(rules, facts, workloads, {}, inputs);
  explain_selftest_failures(summary, node_findings, explanations);
  // The findings that explain a failed check belong with the self-test's own.
  for (const auto& c : summary.checks) {
    if (c.explained_by.empty()) continue;
    auto named = [&](const model::Finding& f) { return f.id == c.explained_by; };
    if (std::any_of(selftest_findings.begin(), selftest_findings.end(), named)) continue;
    if (auto it = std::find_if(node_findings.begin(), node_findings.end(), named); it != node_findings.end())
      selftest_findings.push_back(*it);
    else if (auto jt = std::find_if(findings.begin(), findings.end(), named); jt != findings.end()) selftest_findings.push_back(*jt);
  }

  model::Report report;
  report.findings = selftest_findings;
  report.summarize();
  int code = report.summary.exit_code();
  for (const auto& o : results.outcomes) {
    if ((o.status == "failed" || o.status == "error") && code < 1) code = 1;
  }
  // Nothing ran on a GPU (none, or no driver) and nothing failed: the GPU's health is unknown.
  if (code == 0 && selftest::gpu_checks_ran(results) == 0) code = 3;
  if (options.format == Format::json) {
    write_output(options, report::render_selftest_json(summary, explanations, selftest_findings, facts));
  } else {
    write_output(options, report::render_selftest_text(summary, explanations, selftest_findings,
                                                       {options.color ? report::Color::yes : report::Color::no, options.verbosity > 0}));
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
