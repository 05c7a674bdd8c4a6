// nvte-doctor's entry point: argv -> app::Options -> one app command. Nothing else lives here.
// Usage errors and util::Fatal exit with code 3 (UNKNOWN) and a one-line reason on stderr.
#include "app/app.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"
#include "util/logging.hpp"
#include "util/strings.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string_view>
#include <unistd.h>
#include <vector>

#ifndef NVTE_VERSION
#define NVTE_VERSION "0.0.0"
#endif

namespace {

constexpr const char* k_footer = R"(Exit status (Nagios plugin convention):
  0  OK        no warnings or errors
  1  WARNING   warnings only
  2  CRITICAL  at least one error finding (explain: no attention backend available)
  3  UNKNOWN   the doctor could not do its job (bad input, unreadable rules, ...)

Without a command, nvte-doctor runs `check`. See nvte-doctor(1), nvte-doctor-rules(5) and
nvte-doctor.conf(5).)";

const std::map<std::string, app::Format> k_formats = {
    {"text", app::Format::text}, {"json", app::Format::json}, {"prometheus", app::Format::prometheus}, {"nfd", app::Format::nfd}};

// The commands that accept each format; text and json, which every command takes, are not listed.
// (run and daemon write Prometheus and NFD files from their config, not through --format.)
const std::map<std::string, std::vector<std::string>> k_format_commands = {{"prometheus", {"check"}}, {"nfd", {"check"}}};

void add_common(CLI::App& cmd, app::Options& o, std::string& format) {
  cmd.add_option("--format", format, "Output format: text or json (check also: prometheus, nfd)")
      ->check(CLI::IsMember({"text", "json", "prometheus", "nfd"}));
  cmd.add_option("--output,-o", o.output, "Write the output to FILE (atomically) instead of stdout");
  cmd.add_option("--facts", o.facts_file, "Replay a saved facts snapshot (probe --format json) instead of probing");
  cmd.add_option("--set", o.sets, "Override a fact, e.g. --set cudnn.version=9.3.0 (repeatable)");
  cmd.add_option("--root", o.root, "Examine the node tree under DIR instead of / (for saved node images)");
  cmd.add_option("--python", o.python, "The Python interpreter to examine (default: $NVTE_DOCTOR_PYTHON, else the one with TE, else torch)")
      ->envname("NVTE_DOCTOR_PYTHON");
  cmd.add_flag("--deep", o.deep, "Also ask NVML and libcuda (GPU memory, MIG mode, libcuda's CUDA version); tens of ms slower");
}

// A preflight: the job's image (the tree under --root) against a node's GPUs and driver.
void add_preflight_options(CLI::App& cmd, app::Options& o) {
  cmd.add_option("--node-facts", o.node_facts_file,
                 "Preflight: take the node's GPUs, driver and libcuda from FILE (probe --format json or a report); "
                 "the rest comes from the image under --root");
  cmd.add_option("--node-root", o.node_root,
                 "Preflight: probe the node's GPUs, driver and libcuda under DIR (/ on the node or in a GPU pod)");
  cmd.add_option("--image", o.image_name, "Preflight: the image's name for the report (default: the --root directory)");
  cmd.add_option("--image-config", o.image_config,
                 "Preflight: the image's environment from an OCI runtime config (process.env) or image config (config.Env)");
}

void add_rules_option(CLI::App& cmd, app::Options& o) {
  cmd.add_option("--rules", o.rules_dirs, "Rules directory (repeatable; default: the installed rules)");
}

void add_workload_options(CLI::App& cmd, app::Options& o) {
  cmd.add_option("--workload,-w", o.workload_files, "Attention workload file, YAML or JSON (repeatable)");
  cmd.add_option("--workload-set", o.workload_sets, "Workload key, e.g. --workload-set head_dim_qk=192 (repeatable)");
  cmd.add_option("--hf-config", o.hf_configs, "Workloads from a Hugging Face config.json, one per attention variant (repeatable)");
  cmd.add_option("--megatron-args", o.megatron_args,
                 "Workloads from a Megatron-LM launch script or argument file, or a Megatron-Bridge / NeMo 2 YAML recipe (repeatable)");
  cmd.add_option("--te-log", o.te_logs,
                 "Workloads and versions from TE's own debug log (NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2), FILE or - for stdin; "
                 "TE's verdict is compared with the doctor's (repeatable)");
}

void add_config_option(CLI::App& cmd, app::Options& o) {
  cmd.add_option("--config", o.config_file, "Service configuration file (default for run/daemon: /etc/nvte-doctor/config.yaml)");
}

bool want_color(bool no_color) {
  if (no_color) return false;
  if (const char* env = std::getenv("NO_COLOR"); env && *env) return false;
  return ::isatty(STDOUT_FILENO) == 1;
}

} // namespace

int main(int argc, char** argv) {
  // The self-test's child (selftest/selftest.hpp): not a user command, not in --help.
  if (argc >= 2 && std::string_view(argv[1]) == "selftest-child") return app::run_selftest_child(argc, argv);

  // A full file system or a file size limit (RLIMIT_FSIZE) must be an error the atomic writer
  // reports and cleans up after, not SIGXFSZ killing the process with a temporary file left.
  std::signal(SIGXFSZ, SIG_IGN);
  app::Options options;
  std::string format = "text";
  bool no_color = false;
  int verbosity = 0;

  CLI::App cli{"nvte-doctor: will this node run this TransformerEngine attention workload, with which\n"
               "backend, and if not, what exactly do I type to fix it?",
               "nvte-doctor"};
  cli.footer(k_footer);
  cli.set_version_flag("--version", std::string("nvte-doctor ") + NVTE_VERSION);
  cli.add_flag("--no-color", no_color, "Never colour the text output");
  cli.add_flag("-v,--verbose", verbosity, "Show passing checks and informational findings; -vv logs debug detail");
  cli.require_subcommand(0, 1);

  auto* check = cli.add_subcommand("check", "Probe the node, evaluate the rules, print findings and fixes (default)");
  add_common(*check, options, format);
  add_preflight_options(*check, options);
  add_rules_option(*check, options);
  add_workload_options(*check, options);

  check->add_option("--termination-log", options.termination_log,
                    "Also write the short verdict (status, one line per error and warning, at most 4096 bytes) to FILE, "
                    "in place: Kubernetes' /dev/termination-log");

  auto* probe = cli.add_subcommand("probe", "Print what the node has: GPUs, driver, CUDA, every cuDNN/NCCL/NVRTC copy, Python packages");
  add_common(*probe, options, format);
  add_preflight_options(*probe, options);

  auto* explain = cli.add_subcommand("explain", "Predict which attention backend TE selects for a workload, and why the others are out");
  add_common(*explain, options, format);
  add_preflight_options(*explain, options);
  add_rules_option(*explain, options);
  add_workload_options(*explain, options);
  explain->add_option("--sweep", options.sweeps, "Sweep a workload key over values, e.g. --sweep head_dim_qk=64,128,192 (repeatable)");
  explain->add_flag("--fix", options.fixes_only, "Print only the verified fixes, best first, one per line (or as JSON), for scripts");

  auto* selftest = cli.add_subcommand("selftest", "Run real kernels in child processes: CUDA driver, NVRTC, cuDNN attention, NCCL, TE's selector, Python tier");
  add_common(*selftest, options, format);
  add_rules_option(*selftest, options);
  add_workload_options(*selftest, options);
  selftest->add_option("--timeout", options.selftest_timeout,
                       "Seconds each check may run before its process group is killed (default 120; a cuDNN check: 120 plus its workload's work at conservative rates)")
      ->check(CLI::PositiveNumber);
  selftest->add_option("--sweep", options.sweeps, "Run over workload values, e.g. --sweep head_dim_qk=64,128,192,256 (repeatable)");
  check->add_flag("--selftest", options.selftest, "Also run the self-test and fold its results into the report");
  check->add_option("--timeout", options.selftest_timeout, "With --selftest: seconds per check (default 120; a cuDNN check: its workload's budget)")
      ->check(CLI::PositiveNumber);

  auto* rules = cli.add_subcommand("rules", "List, show or lint the rules database");
  rules->require_subcommand(1);
  auto* rules_list = rules->add_subcommand("list", "List every rule: id, severity, title");
  add_rules_option(*rules_list, options);
  rules_list->add_option("--format", format, "text or json")->check(CLI::IsMember({"text", "json"}));
  auto* rules_show = rules->add_subcommand("show", "Show one rule in full");
  add_rules_option(*rules_show, options);
  rules_show->add_option("id", options.rule_id, "Rule id")->required();
  auto* rules_lint = rules->add_subcommand("lint", "Validate rule files: schema, expressions, ids, facts, references, tests");
  rules_lint->add_option("dirs", options.lint_dirs, "Rules directories (default: the installed rules)");
  add_rules_option(*rules_lint, options);

  add_config_option(*check, options);

  auto* run = cli.add_subcommand("run", "Timer entry point: check when the node changed, write the configured outputs, push");
  add_common(*run, options, format);
  add_rules_option(*run, options);
  add_workload_options(*run, options);
  add_config_option(*run, options);
  run->add_flag("--force", options.force, "Run the full check even when nothing changed");
  run->add_flag("--wait", options.wait, "Wait for a run in progress instead of exiting with 3");

  auto* daemon = cli.add_subcommand("daemon", "Run on the configured interval and soon after watched paths change (SIGHUP reloads)");
  add_common(*daemon, options, format);
  add_rules_option(*daemon, options);
  add_workload_options(*daemon, options);
  add_config_option(*daemon, options);

  auto* fleet = cli.add_subcommand(
      "fleet", "Summarise many nodes' report JSONs: configurations, findings and workloads with their hosts, stale reports");
  fleet->add_option("reports", options.fleet_inputs, "Report files or directories of them")->required();
  fleet->add_option("--format", format, "text or json")->check(CLI::IsMember({"text", "json"}));
  fleet->add_option("--output,-o", options.output, "Write the summary to FILE (atomically) instead of stdout");
  fleet->add_option("--max-age", options.max_age, "Reports older than this are stale (default 1d; e.g. 30m, 2h)");
  fleet->add_option("--hosts", options.fleet_hosts, "Text: at most N hosts or host ranges per line (default 8; 0: all)");
  fleet->add_flag("--all", options.fleet_all,
                  "Text: every configuration, finding, workload and stale node (default: the largest, in 60 lines)");

  auto* rules_update = rules->add_subcommand("update", "Download a signed rules bundle, verify, lint and activate it atomically");
  rules_update->add_option("url", options.update_url, "Bundle URL (https://; http:// only to 127.0.0.0/8, ::1 or localhost)")->required();
  rules_update->add_option("--public-key", options.public_keys, "Trusted Ed25519 public key file (repeatable; default: the config's rules_update.public_keys)");
  rules_update->add_flag("--allow-downgrade", options.allow_downgrade,
                         "Install a bundle whose signed serial is not above the active bundle's (a deliberate rollback)");
  add_config_option(*rules_update, options);
  auto* rules_sign = rules->add_subcommand("sign", "Make a signed rules bundle from a rules directory");
  rules_sign->add_option("dir", options.sign_dir, "Rules directory")->required();
  rules_sign->add_option("--secret-key", options.secret_key, "Ed25519 secret key file (rules keygen)")->required();
  rules_sign->add_option("--output,-o", options.output, "Write the bundle to FILE (atomically) instead of stdout");
  rules_sign->add_option("--serial", options.bundle_serial,
                         "Bundle serial, signed with it; must grow with every release (default: the current Unix time)");
  auto* rules_keygen = rules->add_subcommand("keygen", "Make a rules signing key pair: PREFIX.key (secret) and PREFIX.pub");
  rules_keygen->add_option("prefix", options.keygen_prefix, "Path prefix of the key files")->required();
  for (auto* sub : {rules_list, rules_show, rules_update})
    sub->add_option("--state-dir", options.state_dir, "State directory holding updated rules (default /var/lib/nvte-doctor)");


  for (auto* sub : {check, probe, explain, selftest, rules, rules_list, rules_show, rules_lint, run, daemon, fleet, rules_update, rules_sign,
                    rules_keygen}) sub->fallthrough();

  // The default command takes the same options at top level: `nvte-doctor --format json`.
  add_common(cli, options, format);
  add_rules_option(cli, options);
  add_workload_options(cli, options);
  add_config_option(cli, options);
  cli.add_option("--state-dir", options.state_dir, "State directory holding updated rules (default /var/lib/nvte-doctor)");

  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return cli.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return cli.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return cli.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "nvte-doctor: %s (try --help)\n", util::terminal_safe(e.what()).c_str());
    return 3;
  }

  options.format = k_formats.at(format);
  std::string command = "check"; // the default command
  for (const auto* sub : cli.get_subcommands())
    if (sub->parsed()) command = sub->get_name();
  if (auto accepting = k_format_commands.find(format);
      accepting != k_format_commands.end() &&
      std::find(accepting->second.begin(), accepting->second.end(), command) == accepting->second.end()) {
    std::fprintf(stderr, "nvte-doctor: --format %s applies to %s only\n", format.c_str(), util::join(accepting->second, ", ").c_str());
    return 3;
  }
  options.color = want_color(no_color);
  options.verbosity = verbosity;
  util::log::set_level(verbosity >= 2 ? util::log::Level::debug : util::log::Level::warning);

  try {
    if (probe->parsed()) return app::run_probe(options);
    if (explain->parsed()) return app::run_explain(options);
    if (selftest->parsed()) return app::run_selftest(options);
    if (rules_list->parsed()) return app::run_rules_list(options);
    if (rules_show->parsed()) return app::run_rules_show(options);
    if (rules_lint->parsed()) return app::run_rules_lint(options);
    if (run->parsed()) return app::run_run(options);
    if (daemon->parsed()) return app::run_daemon(options);
    if (fleet->parsed()) return app::run_fleet(options);
    if (rules_update->parsed()) return app::run_rules_update(options);
    if (rules_sign->parsed()) return app::run_rules_sign(options);
    if (rules_keygen->parsed()) return app::run_rules_keygen(options);
    return app::run_check(options);
  } catch (const util::Fatal& fatal) {
    std::fprintf(stderr, "nvte-doctor: %s\n", util::terminal_safe(fatal.message).c_str());
    return 3;
  }
}
