// Options: what the command line asked for, already parsed by src/cli. One struct for every
// command; each command reads the fields it documents.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace app {

enum class Format { text, json, prometheus, nfd };

// The longest --timeout a check may be given: a day (a longer one is a typo, and seconds past
// LONG_MAX / 1000 made every check time out at once).
inline constexpr double k_max_timeout_seconds = 86400;

struct Options {
  Format format = Format::text;                    // --format
  std::optional<std::filesystem::path> output;     // --output FILE (written atomically), else stdout
  std::vector<std::filesystem::path> rules_dirs;   // --rules DIR (repeatable): added to the shipped rules
  std::vector<std::filesystem::path> rules_only_dirs; // --rules-only DIR (repeatable): instead of the shipped rules
  std::optional<std::filesystem::path> facts_file; // --facts FILE: replay a snapshot instead of probing
  std::vector<std::string> sets;                   // --set KEY=VALUE
  std::vector<std::filesystem::path> workload_files; // --workload FILE
  std::vector<std::string> workload_sets;          // --workload-set KEY=VALUE
  std::vector<std::filesystem::path> hf_configs;   // --hf-config FILE
  std::vector<std::filesystem::path> megatron_args; // --megatron-args FILE: a launch script, argument file or YAML recipe
  std::vector<std::filesystem::path> te_logs;      // --te-log FILE|-: TE's own debug log (NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2)
  std::vector<std::string> sweeps;                 // explain --sweep KEY=V1,V2,...
  bool fixes_only = false;                         // explain --fix: only the ranked verified fixes
  std::filesystem::path root = "/";                // probe --root DIR: a node tree to examine
  std::optional<std::filesystem::path> python;     // --python PATH
  // Preflight (check, probe, explain): the image's userspace under --root against a node's facts.
  std::optional<std::filesystem::path> node_facts_file; // --node-facts FILE: the node's side from a snapshot or report
  std::optional<std::filesystem::path> node_root;       // --node-root DIR: the node's side probed under DIR
  std::string image_name;                               // --image NAME: the image's name in the report
  std::optional<std::filesystem::path> image_config;    // --image-config FILE: the image's environment (OCI config)
  std::optional<std::filesystem::path> termination_log; // check --termination-log FILE: the short verdict
  bool preflight() const { return node_facts_file || node_root; }
  bool deep = false;                               // --deep: also ask NVML and libcuda (probe::Host::deep)
  bool no_cache = false;                           // --no-cache / NVTE_DOCTOR_NO_CACHE=1: no file cache across runs
  std::optional<std::filesystem::path> cache_dir;  // the file cache's directory (run: its state directory; else the user's cache)
  bool color = false;                              // resolved from --no-color, NO_COLOR and isatty
  int verbosity = 0;                               // -v count
  std::string rule_id;                             // rules show ID
  std::vector<std::filesystem::path> lint_dirs;    // rules lint [DIR...]
  std::optional<std::filesystem::path> config_file; // --config FILE (run/daemon default: /etc/nvte-doctor/config.yaml)
  bool force = false;                              // run --force: full check even when nothing changed
  bool wait = false;                               // run --wait: wait for a running run instead of exit 3
  std::vector<std::filesystem::path> fleet_inputs; // fleet REPORT...|DIR
  std::string max_age;                             // fleet --max-age DURATION (default 1d)
  std::size_t fleet_hosts = 8;                     // fleet --hosts N: host-list items per line (0: all)
  bool fleet_all = false;                          // fleet --all: no section is cut to fit 60 lines
  std::optional<std::string> fleet_by;             // fleet --by KEYS: the workload x configuration matrix over gpu,te,...
  bool selftest = false;                           // check --selftest: run the self-test and fold it in
  bool fresh = false; // selftest / check --selftest --fresh: run the Python tier even when its answer may be reused
  std::optional<double> selftest_timeout;          // selftest --timeout S: per check, in seconds (else 120, and each cuDNN check its shape's budget)
  std::filesystem::path state_dir = "/var/lib/nvte-doctor"; // --state-dir: updated rules live in <state_dir>/rules
  std::string update_url;                          // rules update URL
  std::vector<std::filesystem::path> public_keys;  // rules update --public-key FILE (repeatable)
  std::filesystem::path sign_dir;                  // rules sign DIR
  std::filesystem::path secret_key;                // rules sign --secret-key FILE
  std::filesystem::path keygen_prefix;             // rules keygen PREFIX
  bool allow_downgrade = false;                    // rules update --allow-downgrade: install an older serial
  std::optional<unsigned long long> bundle_serial; // rules sign --serial N (default: the current Unix time)
};

} // namespace app
