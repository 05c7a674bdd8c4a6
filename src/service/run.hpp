// The pieces of `nvte-doctor run` that need no probe, rule or renderer: the node fingerprint,
// the saved run state, the decision "full check or refresh only", the run lock, and the cheap
// refresh of the textfile's last-run metric. app::run_run wires them around the check.
//
// The fingerprint is what would make a new check answer differently, read without probing any
// vendor library: the driver version files, stat() of every path the last report's facts name
// (each library copy, interpreter, site-packages), ld.so.cache, the site-packages directories
// and their *.dist-info entries, the relevant environment, the rules files, the workload files,
// the config file and the doctor's version. Each input is one line "name<TAB>value"; the digest
// is a hash of the sorted lines, and the lines are saved so a change can be named.
#pragma once

#include "service/config.hpp"
#include "util/fd.hpp"
#include "util/result.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace service {

struct FingerprintInputs {
  std::filesystem::path root = "/";                   // node tree (tests use a fixture root)
  std::optional<std::string> last_report_json;        // the last report, for the paths its facts name
  std::vector<std::filesystem::path> rules_dirs;      // *.yaml under them: path, size, mtime
  std::vector<std::filesystem::path> workload_files;  // content hashed
  std::optional<std::filesystem::path> config_file;   // content hashed
  std::map<std::string, std::string> environment;     // the process environment (filtered here)
  std::string tool_version;
  // What save_report_paths kept of the last report at its full run: read instead of parsing
  // the report again when it holds the same text (issue 40, round 5); none or stale: parsed.
  std::optional<std::filesystem::path> report_paths_file;
};

struct Fingerprint {
  std::string digest;              // 16 hex digits
  std::vector<std::string> inputs; // sorted "name\tvalue" lines
  // The last report's summary.status, read with its paths (report_status's answer; nullopt
  // without a report or when it is not a readable report).
  std::optional<std::string> last_report_status;
};

// Computes the fingerprint. Never fails: an unreadable or missing input is itself a value.
Fingerprint compute_fingerprint(const FingerprintInputs& inputs);

// The process environment as a map (for FingerprintInputs::environment).
std::map<std::string, std::string> current_environment();

// Whether an environment variable can change the doctor's answer (NVTE_*, CUDA_*, CUDNN_*,
// NCCL_*, NVIDIA_*, LD_LIBRARY_PATH, LD_PRELOAD, PYTHONPATH, PYTHONHOME, VIRTUAL_ENV, CONDA_PREFIX, PATH).
bool is_relevant_environment(std::string_view name);

// The files of a workloads directory: *.yaml / *.yml / *.json workload files, Hugging Face
// configs (*/config.json one level down, or a *.json with "num_attention_heads") and Megatron-LM
// launch scripts or argument files (*.sh, *.args), sorted.
struct WorkloadFiles {
  std::vector<std::filesystem::path> workload_files;
  std::vector<std::filesystem::path> hf_configs;
  std::vector<std::filesystem::path> megatron_args;
};
util::Result<WorkloadFiles> list_workload_files(const std::filesystem::path& dir);

// What the last full run left in <state_dir>/state.json.
struct RunState {
  std::string fingerprint;
  double last_full_run = 0; // Unix time
  std::vector<std::string> inputs;
};
// nullopt when there is no state yet, or when it is unreadable (warned: a full run repairs it).
std::optional<RunState> load_state(const std::filesystem::path& file);
util::Result<void> save_state(const std::filesystem::path& file, const RunState& state);

struct Decision {
  bool full = true;
  std::string reason; // "first run", "fingerprint changed: cudnn ...", "report older than 24h", ...
};
enum class Force { yes, no };
// How far in the future the last full run may lie before it counts as corrupted (clock slew
// between the run that saved it and now).
constexpr double k_clock_slack_seconds = 300;
// Full when forced, when there is no state or no report, when the fingerprint changed, when
// the last full run is max_age old or dated in the future (a corrupted state or a clock set back
// must not postpone the next check indefinitely); else refresh only.
Decision decide(const std::optional<RunState>& last, const Fingerprint& now, bool report_exists,
                std::chrono::seconds max_age, double now_seconds, Force force);

// summary.status of the last report ("OK", "WARNING", ...); nullopt when the text is not a doctor
// report (truncated, corrupted): then the unchanged path cannot answer from it.
std::optional<std::string> report_status(std::string_view report_json);

// Keeps in FILE what an unchanged run needs of a report (its size and hash, summary.status and
// the paths its facts name), so that the next runs need not parse it; removes FILE when the
// report has no facts or status. A failure only makes the next run parse the report.
void save_report_paths(const std::filesystem::path& file, std::string_view report_json);

// Whether a Prometheus textfile is whole: every line a comment or "name[{labels}] value", and a
// final newline. A torn or corrupted file would make node_exporter drop all of it, so `run`
// rewrites it from a full check rather than patching one sample.
bool textfile_intact(std::string_view textfile);

// The textfile with the sample line of metric (no labels) set to value; the metric is appended
// with HELP/TYPE lines when the file lacks it.
std::string refresh_metric(std::string_view textfile, std::string_view metric, double value);

// An exclusive flock(2) on a lock file, held while the object lives. The file holds the
// holder's pid for the message of the one that finds it busy.
class RunLock {
public:
  enum class Wait { yes, no };
  // Wait::no: a busy lock is an error (ErrorKind::timeout) naming the file and the holder's pid.
  static util::Result<RunLock> acquire(const std::filesystem::path& file, Wait wait);
  RunLock(RunLock&&) = default;
  RunLock& operator=(RunLock&&) = default;
  ~RunLock(); // empties the pid (a later holder's message must not name a finished run), unlocks

private:
  explicit RunLock(util::Fd fd) : m_fd(std::move(fd)) {}
  util::Fd m_fd;
};

// Unix time now, with sub-second precision.
double unix_now();

} // namespace service
