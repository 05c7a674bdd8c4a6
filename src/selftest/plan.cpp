// The parent's plan: which checks run with which arguments (library paths from the probe's
// facts, shapes from the workloads), the Python tier, and the results folded into facts.
#include "selftest/budget.hpp"
#include "selftest/checks.hpp"
#include "selftest/python_reuse.hpp"
#include "selftest/sdpa.hpp"

#include "util/json_text.hpp"
#include "util/logging.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <map>
#include <optional>

#include <unistd.h>

namespace selftest {

namespace {

const CheckEntry k_checks[] = {
    {"driver", check_driver},   {"nvrtc", check_nvrtc},           {"cudnn_sdpa", check_cudnn_sdpa},
    {"cudnn_sdpa_bwd", check_cudnn_sdpa_bwd},
    {"nccl", check_nccl},       {"te_selector", check_te_selector}, {"cuda", check_cuda},
};

// TE's enum values (fused_attn.h, unchanged v1.10-v2.18) for the layouts and masks it names.
const std::map<std::string, int, std::less<>> k_te_layouts = {
    {"sb3hd", 0},  {"sbh3d", 1},  {"sbhd_sb2hd", 2},  {"sbhd_sbh2d", 3},  {"sbhd_sbhd_sbhd", 4},
    {"bs3hd", 5},  {"bsh3d", 6},  {"bshd_bs2hd", 7},  {"bshd_bsh2d", 8},  {"bshd_bshd_bshd", 9},
    {"t3hd", 10},  {"th3d", 11},  {"thd_t2hd", 12},   {"thd_th2d", 13},   {"thd_thd_thd", 14}};
const std::map<std::string, int, std::less<>> k_te_masks = {
    {"no_mask", 0}, {"padding", 1}, {"causal", 2}, {"padding_causal", 3}, {"causal_bottom_right", 4},
    {"padding_causal_bottom_right", 5}};

std::string text_of(const model::Workload& w, std::string_view key) {
  const model::Value* v = w.get(key);
  return v ? v->to_string() : std::string();
}
std::int64_t int_of(const model::Workload& w, std::string_view key, std::int64_t fallback) {
  const model::Value* v = w.get(key);
  return v && v->type() == model::ValueType::integer ? v->as_int() : fallback;
}

std::string fact_text(const model::Facts& facts, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (auto s = facts.get_string(name)) return *s;
  }
  return {};
}

Json with_path(Json args, const std::string& path) {
  if (!path.empty()) args["path"] = path;
  return args;
}

// libtransformer_engine*.so in TE's package directory or the directory above it.
std::string find_te_library(const std::string& te_path) {
  if (te_path.empty()) return {};
  std::filesystem::path dir(te_path);
  for (const auto& d : {dir, dir.parent_path()}) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(d, ec)) {
      std::string name = entry.path().filename().string();
      if (name.starts_with("libtransformer_engine") && name.find(".so") != std::string::npos) return entry.path().string();
    }
  }
  return {};
}

CheckOutcome skipped_outcome(std::string check, std::string label, std::string why) {
  CheckOutcome o;
  o.check = std::move(check);
  o.label = std::move(label);
  o.status = "skipped";
  o.error = std::move(why);
  return o;
}

// One pass's support answer (forward or backward) from the cudnn_sdpa child's result, held
// against its plan build. The child asks cuDNN before it builds the plan; a graph whose
// operations cuDNN refuses is a refusal too. Null when the child ended before asking.
Json support_of(const Json& result, const std::string& error) {
  if (!result.is_object()) return nullptr;
  Json pass;
  if (result.contains("support") && result["support"].is_object() && result["support"].contains("supported")) {
    pass = result["support"];
  } else if (result.value("stage", "") == "graph") {
    pass = Json{{"supported", false}, {"configs", 0}, {"reason", error}};
  } else {
    return nullptr;
  }
  // The plan TE would build: heuristics mode A's (the self-test also tries the other modes).
  if (result.contains("engine") && result["engine"].is_object()) {
    std::string mode = result["engine"].value("heuristics", "");
    pass["plan"] = mode == "heuristics A" ? "built" : "built from " + mode;
    pass["agrees"] = pass["supported"].get<bool>() == (mode == "heuristics A");
  } else if (result.value("stage", "") == "plan" || result.value("stage", "") == "graph") {
    pass["plan"] = "failed";
    pass["agrees"] = !pass["supported"].get<bool>();
  }
  return pass;
}

} // namespace

CheckOutcome support_outcome(const std::vector<CheckOutcome>& passes, const std::string& label) {
  CheckOutcome o;
  o.check = "cudnn_support";
  o.label = label;
  if (passes.empty() || passes.front().status == "skipped") {
    o.status = "skipped";
    o.error = passes.empty() ? "no cuDNN check ran" : passes.front().error;
    return o;
  }
  o.started = passes.front().started;
  Json result{{"status", "ok"}};
  bool answered = false, agrees = true;
  for (const auto& pass : passes) {
    const char* name = pass.check == "cudnn_sdpa_bwd" ? "backward" : "forward";
    Json answer = support_of(pass.result, pass.error);
    if (answer.is_null()) continue;
    answered = true;
    if (answer.contains("agrees")) agrees = agrees && answer["agrees"].get<bool>();
    if (!answer["supported"].get<bool>() && o.status.empty()) {
      o.status = "failed";
      o.error = std::string("cuDNN does not support the ") + name + " graph: " + answer.value("reason", "no reason given");
      result["stage"] = "support";
    }
    result[name] = std::move(answer);
  }
  if (!answered) {
    o.status = "skipped";
    o.error = "the cuDNN child ended before cuDNN was asked: " + passes.front().error;
    return o;
  }
  if (o.status.empty()) o.status = "ok";
  result["status"] = o.status;
  if (!o.error.empty()) result["error"] = o.error;
  result["agrees"] = agrees;
  o.result = std::move(result);
  return o;
}

std::span<const CheckEntry> builtin_checks() { return k_checks; }

util::Result<Json> sdpa_args(const model::Workload& w) {
  std::string dtype = text_of(w, "qkv_dtype");
  std::string mask = text_of(w, "attn_mask_type");
  Json args{{"dtype", dtype},
            {"layout", text_of(w, "qkv_layout")},
            {"batch", int_of(w, "batch_size", 1)},
            {"heads", int_of(w, "num_heads", 16)},
            {"kv_heads", int_of(w, "num_gqa_groups", int_of(w, "num_heads", 16))},
            {"seq_q", int_of(w, "max_seqlen_q", 128)},
            {"seq_kv", int_of(w, "max_seqlen_kv", int_of(w, "max_seqlen_q", 128))},
            {"dim_qk", int_of(w, "head_dim_qk", 64)},
            {"dim_v", int_of(w, "head_dim_v", int_of(w, "head_dim_qk", 64))},
            {"causal", mask == "causal"}};
  if (auto l = k_te_layouts.find(text_of(w, "qkv_layout")); l != k_te_layouts.end()) args["te_layout"] = l->second;
  if (auto m = k_te_masks.find(mask); m != k_te_masks.end()) args["te_mask"] = m->second;
  if (const model::Value* v = w.get("window_size_left"); v && v->type() == model::ValueType::integer) args["window_left"] = v->as_int();
  if (const model::Value* v = w.get("window_size_right"); v && v->type() == model::ValueType::integer) args["window_right"] = v->as_int();
  if (const model::Value* v = w.get("is_training"); v && v->type() == model::ValueType::boolean) args["is_training"] = v->as_bool();
  if (const model::Value* v = w.get("deterministic"); v && v->type() == model::ValueType::boolean) args["deterministic"] = v->as_bool();
  if (dtype != "bf16" && dtype != "fp16") return util::make_error(util::ErrorKind::unsupported, "qkv_dtype " + dtype + ": the kernel self-test runs bf16 and fp16");
  if (mask != "no_mask" && mask != "causal")
    return util::make_error(util::ErrorKind::unsupported, "attn_mask_type " + mask + ": the kernel self-test builds no_mask and causal graphs");
  return args;
}

namespace {

// TE's DotProductAttention choice per shape (the Python tier's "selections") against explain's
// prediction for the same workload: a disagreement fails the tier, as the te_selector check
// fails on the FusedAttention sub-backend.
void compare_te_choices(Json& result, const std::vector<std::string>& predicted, CheckOutcome& outcome) {
  if (!result.contains("selections") || !result["selections"].is_array()) return;
  auto& selections = result["selections"];
  for (std::size_t i = 0; i < selections.size() && i < predicted.size(); ++i) {
    auto& s = selections[i];
    if (predicted[i].empty() || !s.is_object() || !s.contains("chosen") || !s["chosen"].is_string()) continue;
    std::string chosen = s["chosen"].get<std::string>();
    if (chosen == "unknown") continue;
    std::string ran = chosen.substr(0, chosen.find(" ("));
    s["predicted"] = predicted[i];
    s["agrees"] = ran == predicted[i];
    if (ran != predicted[i] && outcome.status != "error") {
      outcome.status = "failed";
      outcome.error = "TE ran " + chosen + " for [" + (s.contains("label") && s["label"].is_string() ? s["label"].get<std::string>() : "") +
                      "] where explain predicted " + predicted[i];
    }
  }
}

} // namespace

namespace {

// Environment variables a re-run can change, by recipe kind: the C++ children load cuDNN, NVRTC
// and TE by the paths in their arguments (CUDNN_PATH cannot move them), TE's selector child reads
// NVTE_*; the Python tier imports torch and TE as a job does.
Json honours(std::string_view kind) {
  if (kind == "python") return Json::array({"CUDNN_PATH", "CUDNN_HOME", "NVTE_", "LD_LIBRARY_PATH"});
  if (kind == "te_selector") return Json::array({"NVTE_"});
  return Json::array();
}

// The python check as it starts: its label and how to run it again alone.
CheckOutcome python_outcome(const std::string& interpreter, const std::string& script, const Json& shapes,
                            const std::vector<std::string>& shape_predictions, const PythonRun& run) {
  CheckOutcome outcome;
  outcome.check = "python";
  outcome.label = interpreter;
  outcome.rerun = Json{{"kind", "python"},
                       {"interpreter", interpreter},
                       {"script", script},
                       {"shapes", shapes},
                       {"predicted", shape_predictions},
                       {"timeout_ms", run.timeout.count()},
                       {"bytecode_cache", run.bytecode_cache},
                       {"honours", honours("python")}};
  return outcome;
}

// The tier's result object (its own or a kept one) as the outcome's: its status and error, and
// TE's choices held against explain's.
void take_python_result(CheckOutcome& outcome, Json result, const std::vector<std::string>& shape_predictions) {
  outcome.status = result["status"].get<std::string>();
  if (result.contains("error") && result["error"].is_string()) outcome.error = result["error"].get<std::string>();
  compare_te_choices(result, shape_predictions, outcome);
  outcome.result = std::move(result);
}

// loaded, when given, receives the result's "loaded" (the files the tier depended on, for
// python_reuse.hpp); it never stays in the outcome's result.
CheckOutcome run_python_shapes(const std::string& interpreter, const std::string& script, const Json& shapes,
                               const std::vector<std::string>& shape_predictions, const PythonRun& run, Json* loaded = nullptr) {
  CheckOutcome outcome = python_outcome(interpreter, script, shapes, shape_predictions, run);
  util::CommandOptions options;
  options.timeout = run.timeout;
  options.stdin_fd = run.gate;
  if (!run.environment.empty()) options.environment = environment_with(run.environment);
  Json args{{"workloads", shapes}};
  if (run.gate >= 0) args["gate"] = true;
  if (!run.bytecode_cache.empty()) args["bytecode_cache"] = run.bytecode_cache;
  auto ran = util::run_command({interpreter, script, util::json_text(args)}, options);
  if (!ran) {
    outcome.status = "error";
    outcome.error = ran.error().message;
    return outcome;
  }
  outcome.seconds = ran->seconds;
  // The script prints one JSON object as its last line of stdout.
  auto lines = util::split(util::trim(ran->out), '\n');
  Json result = lines.empty() ? Json() : Json::parse(lines.back(), nullptr, false);
  if (!ran->succeeded() || result.is_discarded() || !result.is_object() || !result.contains("status") ||
      !result["status"].is_string()) {
    auto err = util::split(util::trim(ran->err), '\n');
    outcome.status = "error";
    outcome.timed_out = ran->timed_out;
    outcome.error = interpreter + " " + script + " " + ran->describe() + (err.empty() ? "" : ": " + std::string(err.back()));
    return outcome;
  }
  if (result.contains("loaded")) {
    if (loaded) *loaded = std::move(result["loaded"]);
    result.erase("loaded");
  }
  take_python_result(outcome, std::move(result), shape_predictions);
  return outcome;
}

// The workloads' shapes the tier runs (those sdpa_args takes), with explain's prediction for each.
Json python_shapes(const std::vector<model::Workload>& workloads, const std::vector<std::string>& predicted,
                   std::vector<std::string>& shape_predictions) {
  Json shapes = Json::array();
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    auto args = sdpa_args(workloads[i]);
    if (!args) continue;
    shapes.push_back(*args);
    shape_predictions.push_back(i < predicted.size() ? predicted[i] : "");
  }
  return shapes;
}

bool executable_file(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

} // namespace

std::string python_tier_unavailable(const std::string& interpreter, const std::string& script) {
  if (script.empty())
    return "the Python tier's script selftest.py was not found (looked at $NVTE_DOCTOR_SELFTEST_PY, next to the binary, "
           "share/nvte-doctor and the source tree)";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(script, ec)) return "the Python tier's script " + script + " does not exist";
  if (interpreter.empty()) return "no Python interpreter is known (--python '' turns the Python tier off; pass --python PATH)";
  if (interpreter.find('/') != std::string::npos) {
    if (!executable_file(interpreter)) return "the Python interpreter " + interpreter + " does not exist or is not executable";
    return {};
  }
  const char* path = std::getenv("PATH");
  for (auto dir : util::split(path ? path : "", ':'))
    if (!dir.empty() && executable_file(std::filesystem::path(std::string(dir)) / interpreter)) return {};
  return "no Python interpreter '" + interpreter + "' on PATH (pass --python PATH)";
}

std::vector<CheckOutcome> python_te_outcomes(const CheckOutcome& tier, const std::vector<int>& workload_indices) {
  std::vector<CheckOutcome> out;
  const Json& r = tier.result;
  if (!r.is_object()) return out;
  auto str = [](const Json& j, const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
  };
  if (r.contains("te_present") && r["te_present"].is_boolean() && !r["te_present"].get<bool>() && tier.status != "skipped") {
    CheckOutcome o;
    o.check = "python_te";
    o.label = tier.label;
    o.status = "skipped";
    o.error = "TransformerEngine is not installed for " + tier.label +
              ": TE's DotProductAttention did not run here (the Python tier ran torch's SDPA backends instead)";
    o.started = tier.started;
    out.push_back(std::move(o));
    return out;
  }
  if (!r.contains("selections") || !r["selections"].is_array() || !r.contains("cases") || !r["cases"].is_array()) return out;
  // The k-th "default" case is the k-th workload's run as TE chose.
  std::vector<const Json*> defaults;
  for (const auto& c : r["cases"])
    if (c.is_object() && str(c, "backend") == "default") defaults.push_back(&c);
  const auto& selections = r["selections"];
  for (std::size_t k = 0; k < selections.size() && k < defaults.size(); ++k) {
    const Json& selection = selections[k];
    const Json& c = *defaults[k];
    CheckOutcome o;
    o.check = "python_te";
    o.label = str(selection, "label");
    o.started = tier.started;
    o.status = str(c, "status");
    if (o.status != "ok" && o.status != "failed" && o.status != "skipped") o.status = "error";
    o.error = str(c, "error");
    if (c.contains("ms") && c["ms"].is_number()) o.seconds = c["ms"].get<double>() / 1000;
    std::string ran = str(c, "ran").empty() ? str(selection, "chosen") : str(c, "ran");
    if (ran != "none" && ran != "unknown") o.backend = ran.substr(0, ran.find(" ("));
    if (k < workload_indices.size()) o.workload = workload_indices[k];
    o.result = Json{{"status", o.status}, {"ran", ran}, {"selection", selection}, {"case", c}};
    if (!o.error.empty()) o.result["error"] = o.error;
    if (tier.rerun.is_object() && tier.rerun.contains("shapes") && k < tier.rerun["shapes"].size()) {
      o.rerun = tier.rerun;
      o.rerun["shapes"] = Json::array({tier.rerun["shapes"][k]});
      o.rerun["predicted"] = Json::array({k < tier.rerun["predicted"].size() ? tier.rerun["predicted"][k] : Json("")});
      o.rerun["pick"] = "python_te";
    }
    out.push_back(std::move(o));
  }
  return out;
}

CheckOutcome rerun_check(const model::SelftestCheck& check, const std::map<std::string, std::string>& environment) {
  const Json& recipe = check.rerun;
  auto fail = [&](std::string why) {
    CheckOutcome o;
    o.check = check.check;
    o.label = check.label;
    o.status = "error";
    o.error = std::move(why);
    return o;
  };
  if (!recipe.is_object() || !recipe.contains("kind")) return fail("this check cannot be re-run alone");
  std::string kind = recipe.value("kind", "");
  std::chrono::milliseconds timeout{recipe.value("timeout_ms", std::int64_t{k_default_timeout.count()})};
  if (kind == "python") {
    std::vector<std::string> predicted;
    for (const auto& p : recipe["predicted"]) predicted.push_back(p.is_string() ? p.get<std::string>() : "");
    PythonRun run;
    run.timeout = timeout;
    run.environment = environment;
    run.bytecode_cache = recipe.value("bytecode_cache", "");
    CheckOutcome tier = run_python_shapes(recipe.value("interpreter", ""), recipe.value("script", ""), recipe["shapes"], predicted, run);
    if (recipe.value("pick", "") != "python_te") return tier;
    auto te = python_te_outcomes(tier, {check.workload});
    if (te.empty() || te.front().status == "skipped")
      return tier.status == "ok" ? fail("the re-run gave no TE result: " + tier.error) : tier;
    return te.front();
  }
  RunnerOptions runner;
  runner.executable = recipe.value("executable", runner.executable);
  runner.timeout = timeout;
  runner.environment = environment;
  if (kind == "cudnn") {
    for (auto& o : run_forward_and_backward(runner, recipe["args"], check.label))
      if (o.check == check.check) return o;
    return fail("the re-run ended before the " + check.check + " part");
  }
  if (kind == "child") return run_check(runner, recipe.value("check", check.check), recipe["args"], check.label);
  return fail("unknown re-run recipe '" + kind + "'");
}

// The backward needs the forward's output and statistics anyway, so one child runs both; its
// result carries the forward's own result whole under "forward", and the child streams it as a
// part as soon as it is known, so that a backward that hangs or crashes leaves it standing.
std::vector<CheckOutcome> run_forward_and_backward(const RunnerOptions& runner, const Json& args, const std::string& label) {
  ChildStream stream;
  CheckOutcome both = run_check(runner, "cudnn_sdpa_bwd", args, label, &stream);
  const Json* forward_result = nullptr;
  if (both.result.is_object() && both.result.contains("forward") && both.result["forward"].is_object()) forward_result = &both.result["forward"];
  else if (both.status == "error" && stream.part("forward")) forward_result = &stream.part("forward")->result;
  if (!forward_result || !forward_result->is_object()) {
    both.check = "cudnn_sdpa";
    return {std::move(both)};
  }
  CheckOutcome forward;
  forward.check = "cudnn_sdpa";
  forward.label = label;
  forward.started = both.started;
  forward.status = "ok";
  forward.result = *forward_result;
  forward.seconds = forward.result.value("seconds", 0.0);
  // The child's phases stay with the backward's outcome: they overlap the forward's.
  if (both.result.is_object()) both.result.erase("forward");
  both.seconds = std::max(0.0, both.seconds - forward.seconds);
  return {std::move(forward), std::move(both)};
}

std::vector<CheckOutcome> run_cuda_checks(const RunnerOptions& runner, const Json& nvrtc_args, const Json& nccl_args) {
  ChildStream stream;
  CheckOutcome nccl = run_check(runner, "cuda", Json{{"nvrtc", nvrtc_args}, {"nccl", nccl_args}}, "NCCL", &stream);
  nccl.check = "nccl";
  std::vector<CheckOutcome> out;
  double before = 0; // the child's time up to the previous part
  for (auto [check, label] : {std::pair{"driver", "CUDA driver"}, {"nvrtc", "NVRTC"}}) {
    CheckOutcome o;
    o.check = check;
    o.label = label;
    o.started = nccl.started;
    if (const auto* part = stream.part(check); part && part->result.is_object() && part->result.contains("status") && part->result["status"].is_string()) {
      o.status = part->result["status"].get<std::string>();
      if (part->result.contains("error") && part->result["error"].is_string()) o.error = part->result["error"].get<std::string>();
      o.result = part->result;
      o.seconds = part->t - before;
      before = part->t;
    } else {
      // The child ended before this answer: the same end as NCCL's, which comes after it.
      o.status = "error";
      o.error = nccl.error.empty() ? "the child ended before this check's result" : nccl.error;
      o.phase = nccl.phase;
      o.timed_out = nccl.timed_out;
    }
    out.push_back(std::move(o));
  }
  nccl.seconds = std::max(0.0, nccl.seconds - before);
  out.push_back(std::move(nccl));
  return out;
}

Results run_all(const Plan& input) {
  Plan plan = input;
  plan.runner.epoch = std::chrono::steady_clock::now();
  Results results;
  const auto& facts = plan.facts;
  auto& out = results.outcomes;
  const bool several_gpus = facts.get_int("gpu.count").value_or(0) > 1;
  // Two processes: the cuda child (driver, NVRTC and NCCL in one context) and the first cuDNN
  // child start together, and the self-test's wall time is that of the longer, not the sum. The
  // driver creates contexts one at a time, and the cuDNN child's is on the critical path: each
  // more process creating one at the same moment delayed it by about 0.1 s on the H100. With
  // several GPUs NCCL measures bus bandwidth, so the cuda child is collected before the cuDNN
  // checks start and never shares the GPUs with their kernels; with one GPU NCCL only initialises
  // and may overlap them. Without a GPU each check says so itself (skipped) in milliseconds.
  // A library path of the facts, or "" (the child's SONAME candidates) where the caller's rule
  // refuses to load it (why goes to refused).
  auto loadable = [&](std::string path, std::string& refused) {
    if (path.empty() || !plan.load_refusal) return path;
    auto why = plan.load_refusal(path);
    if (!why) return path;
    refused = path + ": " + *why;
    return std::string();
  };
  // The Python tier starts now: its interpreter, torch's and TE's imports take seconds, and run
  // beside the CUDA checks. Its GPU work waits at the gate until they are done, so it never
  // shares the GPU's time or memory with them (a large shape's fp32 reference takes tens of GB).
  // Its timeout covers that wait: the CUDA checks' own timeouts bound it.
  std::string python_why = plan.python_skipped;
  if (python_why.empty()) python_why = python_tier_unavailable(plan.python_executable, plan.python_script);
  auto cudnn_timeout = [&](const model::Workload& w) {
    if (plan.runner.timeout_given) return plan.runner.timeout;
    auto args = sdpa_args(w);
    if (!args) return plan.runner.timeout;
    auto shape = parse_shape(*args);
    return shape ? shape_timeout(*shape) : plan.runner.timeout;
  };
  // What the tier's thread reads and writes (its shapes, its files) is declared before the future
  // that waits for it, and the future before the gate so that, should a CUDA check throw, the
  // gate opens before the future waits for the tier's (bounded) child.
  std::vector<std::string> shape_predictions;
  const Json shapes = python_shapes(plan.workloads, plan.predicted_selected, shape_predictions);
  Json loaded;
  std::future<CheckOutcome> python_tier;
  std::optional<util::Gate> gate;
  double python_started = 0;
  // An ok answer of an earlier tier is reused while nothing it loaded has changed
  // (python_reuse.hpp): the CUDA checks below still run, the interpreter does not start.
  std::optional<CacheKey> reuse_key;
  std::optional<CheckOutcome> reused;
  if (python_why.empty() && plan.python_reuse) {
    const auto start = std::chrono::steady_clock::now();
    reuse_key = python_tier_key(plan.python_executable, plan.python_script, shapes, environment_with({}), plan.facts);
    if (auto kept = recall_python_tier(*plan.python_reuse, *reuse_key)) {
      reused = python_outcome(plan.python_executable, plan.python_script, shapes, shape_predictions, PythonRun{});
      reused->started = std::chrono::duration<double>(start - plan.runner.epoch).count();
      reused->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      take_python_result(*reused, std::move(*kept), shape_predictions);
    } else {
      util::log::debug("self-test: the Python tier runs: " + kept.error().message);
    }
  }
  // Starts the tier's child; gated: it waits for the CUDA checks before its first GPU work.
  auto start_tier = [&](bool gated) {
    PythonRun run;
    run.timeout = plan.runner.timeout * 4;
    run.bytecode_cache = plan.python_bytecode_cache;
    if (gated) {
      if (auto made = util::Gate::make()) {
        gate = std::move(*made);
        run.gate = gate->child_end();
        run.timeout += plan.runner.timeout;                                                         // the cuda child
        for (const auto& w : plan.workloads) run.timeout += cudnn_timeout(w) + plan.runner.timeout; // cuDNN's, TE's selector
      }
    }
    python_started = std::chrono::duration<double>(std::chrono::steady_clock::now() - plan.runner.epoch).count();
    python_tier = std::async(std::launch::async, [&plan, &shapes, &shape_predictions, &loaded, run] {
      return run_python_shapes(plan.python_executable, plan.python_script, shapes, shape_predictions, run, &loaded);
    });
  };
  if (python_why.empty() && !reused) start_tier(true);
  std::string refused, te_refused;
  const std::string nvrtc_path = loadable(fact_text(facts, {"te.nvrtc.path", "nvrtc.path"}), refused);
  const std::string nccl_path = loadable(fact_text(facts, {"te.nccl.path", "nccl.path"}), refused);
  const std::string cudnn_path = loadable(fact_text(facts, {"te.cudnn.path", "cudnn.path"}), refused);
  std::string te_library = loadable(fact_text(facts, {"te.path"}), te_refused);
  te_library = loadable(find_te_library(te_library), te_refused);
  if (!refused.empty()) util::log::info("self-test: " + refused + "; its check loads the library by SONAME instead");
  auto cuda_checks = std::async(std::launch::async, [&] {
    return run_cuda_checks(plan.runner, with_path(Json::object(), nvrtc_path), with_path(Json::object(), nccl_path));
  });
  std::optional<std::vector<CheckOutcome>> cuda_outcomes;
  auto collect = [&]() -> std::vector<CheckOutcome>& {
    if (!cuda_outcomes) cuda_outcomes = cuda_checks.get();
    return *cuda_outcomes;
  };
  if (several_gpus) collect();
  auto gpu = [&] {
    const auto& driver = collect().front();
    return driver.status == "ok" || driver.status == "failed";
  };
  std::vector<CheckOutcome> kernel_checks; // after NVRTC's in the report, collected when done
  for (std::size_t i = 0; i < plan.workloads.size(); ++i) {
    const auto& w = plan.workloads[i];
    auto args = sdpa_args(w);
    if (!args) {
      kernel_checks.push_back(skipped_outcome("cudnn_sdpa", w.name, args.error().message));
      kernel_checks.back().workload = static_cast<int>(i);
      continue;
    }
    std::string label = w.name;
    RunnerOptions cudnn_runner = plan.runner;
    cudnn_runner.timeout = cudnn_timeout(w);
    if (auto shape = parse_shape(*args)) label = shape->label();
    Json cudnn_args = with_path(*args, cudnn_path);
    // GPU 0's architecture, so that the child can compile its reference kernels before CUDA is up.
    if (auto sm = facts.get_int("gpu[0].sm"); sm && *sm > 0) cudnn_args["sm"] = *sm;
    if (!nvrtc_path.empty()) cudnn_args["nvrtc_path"] = nvrtc_path;
    if (!plan.kernel_cache.empty()) cudnn_args["kernel_cache"] = plan.kernel_cache;
    // The backward is FusedAttention's only for training: an inference job never runs it.
    const model::Value* training = w.get("is_training");
    const bool trains = !training || !training->is(model::ValueType::boolean) || training->as_bool();
    auto passes = run_forward_and_backward(cudnn_runner, cudnn_args, label);
    CheckOutcome support = support_outcome(passes, label);
    support.workload = static_cast<int>(i);
    for (auto& outcome : passes) {
      outcome.workload = static_cast<int>(i);
      outcome.rerun = Json{{"kind", "cudnn"},
                           {"executable", cudnn_runner.executable},
                           {"args", cudnn_args},
                           {"timeout_ms", cudnn_runner.timeout.count()},
                           {"honours", honours("cudnn")}};
      if (outcome.check == "cudnn_sdpa" || trains) outcome.backend = "FusedAttention";
      kernel_checks.push_back(std::move(outcome));
    }
    kernel_checks.push_back(std::move(support));
    if (te_library.empty()) {
      // TE is there, but its library is not one this process may load: said, never silent.
      if (!te_refused.empty()) {
        kernel_checks.push_back(skipped_outcome("te_selector", label, "not loaded: " + te_refused));
        kernel_checks.back().workload = static_cast<int>(i);
      }
      continue;
    }
    Json te_args = *args;
    te_args["library"] = te_library;
    te_args["te_version"] = fact_text(facts, {"te.version"});
    if (auto v = facts.get_version("te.version")) te_args["te_version"] = v->to_string();
    te_args["cudnn_path"] = cudnn_path;
    te_args["nvrtc_path"] = nvrtc_path;
    CheckOutcome te = gpu() ? run_check(plan.runner, "te_selector", te_args, label)
                            : skipped_outcome("te_selector", label, "no GPU");
    if (te.status == "ok" && i < plan.predicted.size()) {
      std::string got = te.result.contains("backend") ? te.result["backend"].get<std::string>() : "";
      te.result["predicted"] = plan.predicted[i];
      te.result["agrees"] = got == plan.predicted[i];
      if (got != plan.predicted[i]) {
        te.status = "failed";
        te.error = "TE's nvte_get_fused_attn_backend chose " + got + " where explain predicted " + plan.predicted[i];
        te.result["stage"] = "disagree";
      }
    }
    te.workload = static_cast<int>(i);
    kernel_checks.push_back(std::move(te));
  }
  auto& basics = collect(); // driver, NVRTC, NCCL
  out.push_back(std::move(basics[0]));
  out.push_back(std::move(basics[1]));
  for (auto& outcome : kernel_checks) out.push_back(std::move(outcome));
  out.push_back(std::move(basics[2]));
  // The Python tier never skips silently: what kept it from running is its skipped check's reason,
  // the caller's (no interpreter it may run: probe/tree_policy.hpp) or the tier's own.
  if (!python_why.empty()) {
    out.push_back(skipped_outcome("python", plan.python_executable.empty() ? "Python tier" : plan.python_executable, python_why));
    return results;
  }
  // A kept answer holds for the GPUs it ran on: when this run's driver check did not pass (a GPU
  // gone, a driver that fails), the tier runs now and says what it finds.
  if (reused && (out.front().status == "failed" || out.front().status == "error")) {
    util::log::info("self-test: the driver check did not pass; the Python tier runs instead of reusing its answer");
    reused.reset();
    start_tier(false);
  }
  CheckOutcome tier;
  if (reused) {
    tier = std::move(*reused);
  } else {
    if (gate) gate->open();
    tier = python_tier.get();
    tier.started = python_started;
    if (reuse_key && tier.status == "ok") {
      if (auto kept = remember_python_tier(*plan.python_reuse, *reuse_key, tier.result, loaded); !kept)
        util::log::debug("self-test: the Python tier's answer is not kept: " + kept.error().message);
    }
  }
  std::vector<int> indices; // the workloads the tier ran, in its order (those sdpa_args takes)
  for (std::size_t i = 0; i < plan.workloads.size(); ++i)
    if (sdpa_args(plan.workloads[i])) indices.push_back(static_cast<int>(i));
  auto per_workload = python_te_outcomes(tier, indices);
  out.push_back(std::move(tier));
  for (auto& o : per_workload) out.push_back(std::move(o));
  return results;
}

void add_facts(const Results& results, model::Facts& facts) {
  std::map<std::string, std::vector<const CheckOutcome*>> by_check;
  for (const auto& o : results.outcomes) by_check[o.check].push_back(&o);
  for (const auto& [check, outcomes] : by_check) {
    std::string prefix = "selftest." + check + ".";
    const CheckOutcome* first_bad = nullptr;
    bool all_skipped = true;
    double seconds = 0, max_abs = -1, max_rel = -1;
    std::int64_t failed = 0;
    for (const auto* o : outcomes) {
      seconds += o->seconds;
      if (o->status != "skipped") all_skipped = false;
      if (o->status == "failed" || o->status == "error") {
        ++failed;
        if (!first_bad) first_bad = o;
      }
      if (o->result.contains("max_abs_err") && o->result["max_abs_err"].is_number()) max_abs = std::max(max_abs, o->result["max_abs_err"].get<double>());
      if (o->result.contains("max_rel_err") && o->result["max_rel_err"].is_number()) max_rel = std::max(max_rel, o->result["max_rel_err"].get<double>());
    }
    const CheckOutcome& shown = first_bad ? *first_bad : *outcomes.front();
    facts.set(prefix + "status", all_skipped ? "skipped" : first_bad ? first_bad->status : "ok");
    if (!all_skipped) facts.set(prefix + "ok", first_bad == nullptr);
    if (!shown.error.empty()) facts.set(prefix + "error", shown.error);
    facts.set(prefix + "seconds", seconds);
    facts.set(prefix + "cases", static_cast<std::int64_t>(outcomes.size()));
    facts.set(prefix + "failed", failed);
    if (first_bad) {
      facts.set(prefix + "failed_case", first_bad->label);
      const Json& r = first_bad->result;
      bool has_stage = r.is_object() && r.contains("stage") && r["stage"].is_string();
      facts.set(prefix + "stage", has_stage ? r["stage"].get<std::string>() : first_bad->status == "error" ? "child" : "unknown");
      facts.set(prefix + "class", model::classify_selftest_failure(first_bad->status, first_bad->error, first_bad->timed_out,
                                                                   has_stage ? r["stage"].get<std::string>() : ""));
      if (first_bad->status == "error") {
        facts.set(prefix + "timed_out", first_bad->timed_out);
        if (!first_bad->phase.empty()) facts.set(prefix + "phase", first_bad->phase);
      }
    }
    if (max_abs >= 0) facts.set(prefix + "max_abs_err", max_abs);
    if (max_rel >= 0) facts.set(prefix + "max_rel_err", max_rel);
    const Json& r = shown.result;
    if (r.contains("log") && r["log"].is_string()) facts.set(prefix + "log", r["log"].get<std::string>());
    if (r.contains("cuda_major") && r["cuda_major"].is_number_integer()) facts.set(prefix + "cuda_major", r["cuda_major"].get<std::int64_t>());
    if (r.contains("driver_cuda_major") && r["driver_cuda_major"].is_number_integer())
      facts.set(prefix + "driver_cuda_major", r["driver_cuda_major"].get<std::int64_t>());
    if (r.contains("bus_bandwidth_gbps") && r["bus_bandwidth_gbps"].is_number()) facts.set(prefix + "bus_bandwidth_gbps", r["bus_bandwidth_gbps"].get<double>());
    if (r.contains("gpus") && r["gpus"].is_number_integer()) facts.set(prefix + "gpus", r["gpus"].get<std::int64_t>());
    if (r.contains("backend") && r["backend"].is_string()) facts.set(prefix + "backend", r["backend"].get<std::string>());
    if (r.contains("predicted") && r["predicted"].is_string()) facts.set(prefix + "predicted", r["predicted"].get<std::string>());
    if (r.contains("te_present") && r["te_present"].is_boolean()) facts.set(prefix + "te_present", r["te_present"].get<bool>());
    // cudnn_support: whether cuDNN's answer agreed with the plan build in every case that has both.
    std::optional<bool> agrees;
    for (const auto* o : outcomes)
      if (o->result.is_object() && o->result.contains("agrees") && o->result["agrees"].is_boolean())
        agrees = agrees.value_or(true) && o->result["agrees"].get<bool>();
    if (agrees) facts.set(prefix + "agrees", *agrees);
  }
}

namespace {
std::string stage_of(const CheckOutcome& o) {
  return o.result.is_object() && o.result.contains("stage") && o.result["stage"].is_string() ? o.result["stage"].get<std::string>() : "";
}
bool needs_gpu(const CheckOutcome& o) { return o.check != "nvrtc" && !model::is_python_tier_check(o.check); }
} // namespace

int gpu_checks(const Results& results) {
  return static_cast<int>(std::count_if(results.outcomes.begin(), results.outcomes.end(), needs_gpu));
}

int gpu_checks_ran(const Results& results) {
  return static_cast<int>(std::count_if(results.outcomes.begin(), results.outcomes.end(),
                                        [](const CheckOutcome& o) { return needs_gpu(o) && o.status != "skipped"; }));
}

model::SelftestSummary summarize(const Results& results) {
  model::SelftestSummary summary;
  for (const auto& o : results.outcomes) {
    model::SelftestCheck check;
    check.check = o.check;
    check.label = o.label;
    check.status = o.status;
    check.error = o.error;
    check.seconds = o.seconds;
    check.started = o.started;
    check.timed_out = o.timed_out;
    check.phase = o.phase;
    check.result = o.result;
    check.workload = o.workload;
    check.backend = o.backend;
    check.failure_class = model::classify_selftest_failure(o.status, o.error, o.timed_out, stage_of(o));
    check.rerun = o.rerun;
    for (const auto& p : o.phases) check.phases.push_back({p.phase, p.what, p.start, p.seconds, p.open});
    summary.checks.push_back(std::move(check));
  }
  return summary;
}

Json to_json(const Results& results) { return model::to_json(summarize(results)); }

} // namespace selftest
