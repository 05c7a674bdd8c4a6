// The self-test: real kernels and TE's real selector on this node, each in a child process.
//
// Protocol (parent <-> child). The parent runs `<doctor> selftest-child <check> <json-args>`
// (the doctor re-executes itself through /proc/self/exe) in a new process group with a hard
// timeout; on timeout the whole group gets SIGKILL. The child first moves its stdout to a private
// descriptor and points fd 1 at stderr, because vendor libraries (NCCL_DEBUG, cuDNN logging)
// print to stdout. On that descriptor (a pipe to the parent) it writes, as it goes, one JSON
// object per line: phase events and parts of the answer (phases.hpp: {"event":"begin","phase":
// "plan","what":"backward","t":0.4}, {"event":"end",...}, {"event":"part","name":"forward",
// "result":{...}}), then exactly one result object (the line without "event"), and exits 0. The
// result always has "status" ("ok", "failed" or "skipped") and, unless ok, "error" (the
// vendor's own text); other members are the check's measurements ("max_abs_err", "seconds",
// ...). Anything else is the parent's to describe as data: a non-zero exit, a signal, a timeout,
// or no result object become status "error" with ChildOutcome::describe()'s text, the phase the
// child was in (a timeout "during plan (backward)"), and the child's last stderr lines.
#pragma once

#include "model/facts.hpp"
#include "model/selftest_summary.hpp"
#include "selftest/phases.hpp"
#include "model/workload.hpp"
#include "util/result.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace selftest {

using Json = nlohmann::ordered_json;

struct PythonReuse;

// A check as the child runs it: args in, phases reported to progress as it goes, result object
// out (with "status").
using CheckFn = Json (*)(const Json& args, Progress& progress);
struct CheckEntry {
  std::string_view name;
  CheckFn run;
};

// The doctor's checks: driver, nvrtc, cudnn_sdpa, cudnn_sdpa_bwd, nccl, te_selector, and cuda
// (driver, nvrtc and nccl in one process).
std::span<const CheckEntry> builtin_checks();

// The child's side of the protocol: runs check with args (JSON text); exits 0 (_exit, right after
// the result is written) or returns 2 for unknown checks, unparsable args or a result it could
// not write, with a message on stderr.
int child_main(std::string_view check, std::string_view args_json, std::span<const CheckEntry> checks);

inline constexpr std::chrono::milliseconds k_default_timeout{120000};

struct RunnerOptions {
  std::string executable = "/proc/self/exe";     // what to re-execute (tests point it elsewhere)
  std::chrono::milliseconds timeout = k_default_timeout; // per check
  bool timeout_given = false; // --timeout: also for the cuDNN checks, instead of their shape's budget (budget.hpp)
  std::chrono::steady_clock::time_point epoch = std::chrono::steady_clock::now(); // CheckOutcome::started counts from here
  std::map<std::string, std::string> environment; // set in the child's environment on top of the doctor's (a fix under test)
};

// One check's outcome as the parent saw it. (Its implicit move is noexcept by its members, which
// clang-tidy cannot see through nlohmann::json's; it stays an aggregate.)
struct CheckOutcome { // NOLINT(bugprone-exception-escape)
  std::string check;  // "cudnn_sdpa"
  std::string label;  // what it ran on: "bf16 bshd_bshd_bshd b2 h16/4 s512 d128 causal"
  std::string status; // ok, failed, skipped, error (crash, timeout, bad output)
  std::string error;  // why, when not ok
  double seconds = 0; // wall time of the child
  double started = 0; // when the child started, seconds after RunnerOptions::epoch
  Json result;        // the child's object (empty when it gave none)
  // When the child ended without a result (status error): the phase it was in ("plan"; empty
  // when it was in none) and whether the timeout ended it.
  std::string phase;
  bool timed_out = false;
  std::vector<PhaseSpan> phases; // every phase the child reported, with its time
  int workload = -1;             // the plan's workload it ran for; -1 for checks of the node
  std::string backend;           // the TE backend it exercised ("FusedAttention" for cuDNN's SDPA), else empty
  // How to run it again alone (rerun_check): {"kind": "cudnn"|"child"|"python", ...}; null when
  // it cannot be. "honours" lists the environment variables (a trailing '_' a prefix) that can
  // change what the re-run does: the C++ children load cuDNN by path, CUDNN_PATH cannot.
  Json rerun;
};

// The doctor's own environment with overrides set on top (a child's environment under a fix).
std::map<std::string, std::string> environment_with(const std::map<std::string, std::string>& overrides);

// Runs check in a child (protocol above). Never fails: what went wrong is in the outcome. The
// stream's parts are returned through parts when given.
CheckOutcome run_check(const RunnerOptions& options, std::string_view check, const Json& args,
                       std::string label = {}, ChildStream* stream = nullptr);

// The cuDNN forward and backward of one shape in one child (check cudnn_sdpa_bwd): cuInit, loading
// cuDNN and the graphs are paid once. Returns the forward's outcome (check cudnn_sdpa) and, when
// the child got past the forward (its result says so, or it streamed the forward's part before it
// crashed or hung), the backward's (cudnn_sdpa_bwd, without the forward's part and its time). A
// child that failed, crashed or hung before its forward was done gives the forward's outcome
// alone, as a forward failure does.
std::vector<CheckOutcome> run_forward_and_backward(const RunnerOptions& runner, const Json& args, const std::string& label);

// cuDNN's own support answer for the workload's graphs (check cudnn_support), from the outcomes
// run_forward_and_backward returned: the child asks cuDNN whether it supports each graph before
// it builds the plan (SdpaGraph::check_support, what TE 2.20 asks instead of its version tables).
// ok when cuDNN supports every graph the child reached, failed (stage "support", cuDNN's reason)
// when it refuses one, skipped when the child never asked; its result says, per pass, whether the
// answer agrees with the plan build from the heuristics mode TE uses ("agrees").
CheckOutcome support_outcome(const std::vector<CheckOutcome>& passes, const std::string& label);

// The driver, NVRTC and NCCL checks in one child (check cuda, one CUDA context): their three
// outcomes, each from its streamed part; those the child did not reach before it crashed or hung
// share its end (status error, phase).
std::vector<CheckOutcome> run_cuda_checks(const RunnerOptions& runner, const Json& nvrtc_args, const Json& nccl_args);

// Arguments of the cudnn_sdpa / te_selector checks for a workload; an error names the key the
// self-test cannot express (thd layouts, fp8, bias, ...).
util::Result<Json> sdpa_args(const model::Workload& workload);

// Everything `nvte-doctor selftest` runs, and how.
struct Plan {
  RunnerOptions runner;
  model::Facts facts;                        // the node's facts: library paths, te.*, python.*
  std::vector<model::Workload> workloads;    // shapes for cudnn_sdpa, te_selector and the Python tier
  std::vector<std::string> predicted;        // explain's FusedAttention sub-backend per workload ("none")
  std::vector<std::string> predicted_selected; // explain's selected backend per workload ("none")
  std::string python_executable;             // empty: no Python tier
  std::string python_script;                 // share/nvte-doctor/selftest.py
  std::string python_skipped;                // why the Python tier does not run, shown as its skipped check
  std::string python_bytecode_cache;         // PythonRun::bytecode_cache (empty: none)
  std::string kernel_cache;                  // the cuDNN checks' compiled plans and reference kernels (kernel_cache.hpp; empty: none)
  // Where the Python tier's ok answer is kept and reused while nothing it loaded changed
  // (python_reuse.hpp); null: it always runs and nothing is kept (--no-cache, facts not of a live
  // probe). With --fresh it is set and recalls nothing: the tier runs, its answer is kept.
  std::shared_ptr<const PythonReuse> python_reuse;
  // Whether a library path the facts name (cudnn.path, nvrtc.path, nccl.path, te.path, ...) may
  // be loaded by a child: the caller's rule for untrusted trees (probe/tree_policy.hpp). nullopt:
  // it may; otherwise why not. A check whose path is refused loads its library by SONAME through
  // this machine's loader (TE's selector, which needs TE's own file, is skipped with the reason).
  // Unset: every path may be loaded.
  std::function<std::optional<std::string>(const std::string& path)> load_refusal;
};

struct Results {
  std::vector<CheckOutcome> outcomes;
};

// Runs every check of the plan (driver first: without a GPU the GPU checks report skipped).
Results run_all(const Plan& plan);

// How the Python tier's child runs.
struct PythonRun {
  std::chrono::milliseconds timeout{60000};
  std::map<std::string, std::string> environment; // set on top of the doctor's own (a fix under test)
  // A private directory of the doctor's where the script has Python keep the bytecode it
  // compiles (sys.pycache_prefix) when torch's or TE's own is missing or stale: such an
  // environment (PYTHONDONTWRITEBYTECODE, a read-only image, pip's --no-compile) compiles every
  // module of torch and TE from source in every process, seconds each time. Empty: none; a
  // PYTHONPYCACHEPREFIX of the caller's wins.
  std::string bytecode_cache;
  // The child's stdin, where it waits after its imports and before its first GPU work
  // (util::Gate::child_end): it then shares no GPU time or memory with other checks. -1: no wait.
  int gate = -1;
};

// Why the Python tier cannot start (no script, no interpreter, an interpreter that is not an
// executable file), or empty when it can. Such a tier is a skipped "python" check with this reason.
std::string python_tier_unavailable(const std::string& interpreter, const std::string& script);

// The Python tier's per-workload checks ("python_te"), from its result: TE's DotProductAttention
// as TE chose under the node's settings, one per workload the tier ran (workload_indices: the
// workloads' indices in the plan, in the tier's order), with the backend TE ran, so a failure of
// that backend at that shape decides the workload's verdict. A tier that found torch but no TE
// gives one skipped check saying so; a tier that did not run gives none.
std::vector<CheckOutcome> python_te_outcomes(const CheckOutcome& tier, const std::vector<int>& workload_indices);

// "export A=x B=y" / "A=x": the assignments when the command is nothing else, else nullopt.
std::optional<std::vector<std::pair<std::string, std::string>>> env_assignments(std::string_view command);

// Re-runs one check of a summary alone (its rerun recipe) with environment applied on top of
// the doctor's: the outcome of the same check. The recipe's absence is an error outcome.
CheckOutcome rerun_check(const model::SelftestCheck& check, const std::map<std::string, std::string>& environment);
using RerunFn = std::function<CheckOutcome(const model::SelftestCheck&, const std::map<std::string, std::string>&)>;

// Verified by experiment: each failed check whose fix (set by rules::join_selftest_failures) is
// only environment assignments of CUDNN_PATH, CUDNN_HOME, NVTE_* or LD_LIBRARY_PATH is re-run
// alone through rerun with them applied: fix_verified "here" when it then passes, "did_not_help"
// when it does not; otherwise fix_note says why it was not tried (no GPU ran, a check the
// variable cannot change). One re-run per recipe and environment.
void verify_env_fixes(model::SelftestSummary& summary, const RerunFn& rerun, bool gpu_ran);

// Facts selftest.<check>.{status,ok,error,seconds,...}; checks run once per workload are folded
// (ok when all ok, the first failure's error and case label, the largest errors).
void add_facts(const Results& results, model::Facts& facts);

// The outcomes as the report carries them.
model::SelftestSummary summarize(const Results& results);
// The whole result as the report's "selftest" object (model::to_json of the summary; its
// summary counts the GPU checks and how many of them ran).
Json to_json(const Results& results);

// How many checks that need a GPU (all but NVRTC's compile and the Python tier) ran, and of how many.
int gpu_checks_ran(const Results& results);
int gpu_checks(const Results& results);

} // namespace selftest
