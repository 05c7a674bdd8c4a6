// nvte-doctor's entry point: argv -> app::Options -> one app command. Nothing else lives here.
// Usage errors, util::Fatal and std::bad_alloc exit with code 3 (UNKNOWN) and a one-line reason on stderr.
#include "app/app.hpp"
#include "util/error.hpp"
#include "util/logging.hpp"
#include "util/process_exit.hpp"
#include "util/strings.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <new>
#include <string_view>
#include <unistd.h>
#include <utility>
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
nvte-doctor.conf(5).

Examples:
  nvte-doctor
  nvte-doctor explain --te-log job.log)";

// Two examples per command, shown at the end of its --help (tests/cli/help_examples_test.py). A
// constant table: nothing to build before main.
constexpr std::pair<std::string_view, std::string_view> k_examples[] = {
    {"check", "  nvte-doctor check --hf-config config.json\n"
              "  nvte-doctor check --format prometheus -o /var/lib/prometheus/node-exporter/nvte_doctor.prom"},
    {"probe", "  nvte-doctor probe\n"
              "  nvte-doctor probe --format json -o node-facts.json"},
    {"explain", "  nvte-doctor explain --te-log job.log\n"
                "  nvte-doctor explain --hf-config config.json --sweep max_seqlen_q=4096,32768 --set cudnn.version=9.3.0"},
    {"selftest", "  nvte-doctor selftest\n"
                 "  nvte-doctor selftest --hf-config config.json --timeout 300 --format json"},
    {"rules", "  nvte-doctor rules list\n"
              "  nvte-doctor rules show attention-no-backend"},
    {"list", "  nvte-doctor rules list\n"
             "  nvte-doctor rules list --rules /etc/nvte-doctor/site-rules --format json"},
    {"show", "  nvte-doctor rules show attention-no-backend\n"
             "  nvte-doctor rules show site-rule --rules /etc/nvte-doctor/site-rules"},
    {"lint", "  nvte-doctor rules lint\n"
             "  nvte-doctor rules lint /etc/nvte-doctor/site-rules"},
    {"update", "  nvte-doctor rules update https://rules.example/nvte-doctor.bundle\n"
               "  nvte-doctor rules update https://rules.example/old.bundle --allow-downgrade"},
    {"sign", "  nvte-doctor rules sign rules/ --secret-key site.key -o rules.bundle\n"
             "  nvte-doctor rules sign rules/ --secret-key site.key --serial 42 -o rules.bundle"},
    {"keygen", "  nvte-doctor rules keygen /root/keys/site\n"
               "  nvte-doctor rules keygen ./site   (writes ./site.key and ./site.pub)"},
    {"run", "  nvte-doctor run\n"
            "  nvte-doctor run --force --config /etc/nvte-doctor/config.yaml"},
    {"daemon", "  nvte-doctor daemon\n"
               "  nvte-doctor daemon --config /etc/nvte-doctor/config.yaml -v"},
    {"fleet", "  nvte-doctor fleet /srv/www/reports\n"
              "  nvte-doctor fleet /srv/www/reports --by gpu,te"},
};

std::string examples_of(std::string_view command) {
  for (const auto& [name, examples] : k_examples)
    if (name == command) return std::string(examples);
  return {};
}

const std::map<std::string, app::Format> k_formats = {
    {"text", app::Format::text}, {"json", app::Format::json}, {"prometheus", app::Format::prometheus}, {"nfd", app::Format::nfd}};

// The commands that accept each format; text and json, which every command takes, are not listed.
// (run and daemon write Prometheus and NFD files from their config, not through --format.)
const std::map<std::string, std::vector<std::string>> k_format_commands = {{"prometheus", {"check"}}, {"nfd", {"check"}}};

// The formats a command takes; help and completions offer exactly these.
const std::vector<std::string> k_text_json = {"text", "json"};
const std::vector<std::string> k_check_formats = {"text", "json", "prometheus", "nfd"};

void add_common(CLI::App& cmd, app::Options& o, std::string& format, const std::vector<std::string>& formats = k_text_json) {
  cmd.add_option("--format", format, "Output format (default text)")->check(CLI::IsMember(formats));
  cmd.add_option("--output,-o", o.output, "Write the output to FILE (atomically) instead of stdout");
  cmd.add_option("--facts", o.facts_file, "Replay a saved facts snapshot (probe --format json) instead of probing");
  cmd.add_option("--set", o.sets, "Override a fact, e.g. --set cudnn.version=9.3.0 (repeatable)");
  cmd.add_option("--root", o.root, "Examine the node tree under DIR instead of / (for saved node images)");
  cmd.add_option("--python", o.python, "The Python interpreter to examine (default: $NVTE_DOCTOR_PYTHON, else the one with TE, else torch)")
      ->envname("NVTE_DOCTOR_PYTHON");
  cmd.add_flag("--deep", o.deep, "Also ask NVML and libcuda (GPU memory, MIG mode, libcuda's CUDA version); tens of ms slower");
  cmd.add_flag("--no-cache", o.no_cache,
               "Neither read nor write the doctor's caches (the probe's file cache; the self-test's Python bytecode and compiled kernels)")
      ->envname("NVTE_DOCTOR_NO_CACHE");
}

constexpr const char* k_fresh_help =
    "Run the Python tier even when its ok answer of the last day may be reused (by default it is, while every file "
    "it loaded, its environment, the GPUs and the driver are unchanged; the CUDA checks always run)";

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
  cmd.add_option("--rules", o.rules_dirs, "Add the rules of DIR to the shipped rules (repeatable)");
  cmd.add_option("--rules-only", o.rules_only_dirs, "Use the rules of DIR instead of the shipped rules (repeatable)");
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

// "did you mean --format?" for a mistyped option (any of the command's and, since options fall
// through, its parents'), "did you mean explain?" for a mistyped subcommand; "" when nothing is
// close (at most 2 edits).
std::string did_you_mean(const CLI::App& cli, const std::string& what, int argc, char** argv) {
  std::vector<std::string> extras;
  if (auto colon = what.find(": "); colon != std::string::npos) {
    for (auto word : util::split(std::string_view(what).substr(colon + 2), ' '))
      if (!word.empty()) extras.emplace_back(word);
  } else {
    // "A subcommand is required" (rules lsit): CLI11 names no word; the command line's do.
    for (int i = 1; i < argc; ++i) extras.emplace_back(argv[i]);
  }
  // The command the words are given to: the subcommands named on the command line, in order
  // (CLI11 may throw before it marks the last one parsed).
  const CLI::App* app = &cli;
  for (int i = 1; i < argc; ++i) {
    std::string_view word = argv[i];
    for (const auto* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
      if (sub->get_name() == word) {
        app = sub;
        break;
      }
    }
  }
  for (const auto& extra : extras) {
    std::vector<std::string> known;
    bool dashed = extra.starts_with("-");
    if (dashed) {
      for (const CLI::App* a = app; a; a = a->get_parent()) {
        for (const auto* opt : a->get_options()) {
          for (const auto& name : opt->get_lnames()) known.push_back("--" + name);
        }
      }
    } else {
      for (const auto* sub : app->get_subcommands([](const CLI::App*) { return true; })) known.push_back(sub->get_name());
    }
    std::string word = dashed ? extra.substr(0, extra.find('=')) : extra;
    std::string best;
    std::size_t best_distance = 3;                                            // at most 2 edits: a swapped pair (lsit) is two
    if (std::find(known.begin(), known.end(), word) != known.end()) continue; // a word it knows
    for (const auto& name : known) {
      if (auto d = util::edit_distance(word, name); d < best_distance) {
        best_distance = d;
        best = name;
      }
    }
    if (!best.empty()) return " (did you mean " + best + "?)";
  }
  return {};
}

// --timeout: seconds, a finite number in (0, a day] (audit 2026-12-01 item 25: NaN passed
// PositiveNumber, and 1e300 or inf reached an undefined conversion or printed DBL_MAX in full).
CLI::Validator timeout_seconds() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        auto seconds = util::parse_double(util::trim(input));
        if (seconds && *seconds > 0 && *seconds <= app::k_max_timeout_seconds) return {};
        std::string shown = input.size() > 32 ? input.substr(0, 32) + "..." : input;
        return "must be a number of seconds in (0, " + std::to_string(static_cast<long>(app::k_max_timeout_seconds)) + "], got " + shown;
      },
      "SECONDS in (0, 86400]");
}

bool want_color(bool no_color) {
  if (no_color) return false;
  if (const char* env = std::getenv("NO_COLOR"); env && *env) return false;
  return ::isatty(STDOUT_FILENO) == 1;
}

} // namespace

namespace {

int run_command_line(int argc, char** argv) {
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

  // Every command with its help line and footer (--help lists them, "did you mean" knows them);
  // its options only when its name is one of the command line's words. CLI11 selects a command
  // by its exact name only, so a command not named is never parsed and its options are never read
  // (issue 40, round 5: building all of them was 2 M instructions of every process, --version's
  // and an unchanged run's too). Each command's options keep their order of old, which --help shows.
  auto named = [argc, argv](const CLI::App* sub) {
    for (int i = 1; i < argc; ++i)
      if (sub->get_name() == argv[i]) return true;
    return false;
  };
  auto* check = cli.add_subcommand("check", "Probe the node, evaluate the rules, print findings and fixes (default)");
  auto* probe = cli.add_subcommand("probe", "Print what the node has: GPUs, driver, CUDA, every cuDNN/NCCL/NVRTC copy, Python packages");
  auto* explain = cli.add_subcommand("explain", "Predict which attention backend TE selects for a workload, and why the others are out");
  auto* selftest = cli.add_subcommand(
      "selftest", "Run real kernels in child processes: CUDA driver, NVRTC, cuDNN attention, NCCL, TE's selector, Python tier");
  auto* rules = cli.add_subcommand("rules", "List, show or lint the rules database");
  rules->require_subcommand(1);
  auto* rules_list = rules->add_subcommand("list", "List every rule: id, severity, title");
  auto* rules_show = rules->add_subcommand("show", "Show one rule in full");
  auto* rules_lint = rules->add_subcommand("lint", "Validate rule files: schema, expressions, ids, facts, references, tests");
  auto* run = cli.add_subcommand("run", "Timer entry point: check when the node changed, write the configured outputs, push");
  auto* daemon = cli.add_subcommand("daemon", "Run on the configured interval and soon after watched paths change (SIGHUP reloads)");
  auto* fleet = cli.add_subcommand(
      "fleet", "Summarise many nodes' report JSONs: configurations, findings and workloads with their hosts, stale reports");
  auto* rules_update = rules->add_subcommand("update", "Download a signed rules bundle, verify, lint and activate it atomically");
  auto* rules_sign = rules->add_subcommand("sign", "Make a signed rules bundle from a rules directory");
  auto* rules_keygen = rules->add_subcommand("keygen", "Make a rules signing key pair: PREFIX.key (secret) and PREFIX.pub");

  if (named(check)) {
    add_common(*check, options, format, k_check_formats);
    add_preflight_options(*check, options);
    add_rules_option(*check, options);
    add_workload_options(*check, options);
    check->add_option("--termination-log", options.termination_log,
                      "Also write the short verdict (status, one line per error and warning, at most 4096 bytes) to FILE, "
                      "in place: Kubernetes' /dev/termination-log");
    auto* with_selftest = check->add_flag("--selftest", options.selftest, "Also run the self-test and fold its results into the report");
    check
        ->add_option("--timeout", options.selftest_timeout,
                     "With --selftest: seconds per check (default 120; a cuDNN check: its workload's budget)")
        ->check(timeout_seconds());
    check->add_flag("--fresh", options.fresh, k_fresh_help)->needs(with_selftest);
    add_config_option(*check, options);
  }
  if (named(probe)) {
    add_common(*probe, options, format);
    add_preflight_options(*probe, options);
  }
  if (named(explain)) {
    add_common(*explain, options, format);
    add_preflight_options(*explain, options);
    add_rules_option(*explain, options);
    add_workload_options(*explain, options);
    explain->add_option("--sweep", options.sweeps, "Sweep a workload key over values, e.g. --sweep head_dim_qk=64,128,192 (repeatable)");
    explain->add_flag("--fix", options.fixes_only, "Print only the verified fixes, best first, one per line (or as JSON), for scripts");
  }
  if (named(selftest)) {
    add_common(*selftest, options, format);
    add_rules_option(*selftest, options);
    add_workload_options(*selftest, options);
    selftest
        ->add_option("--timeout", options.selftest_timeout,
                     "Seconds each check may run before its process group is killed (default 120; a cuDNN check: 120 plus its workload's "
                     "work at conservative rates)")
        ->check(timeout_seconds());
    selftest->add_option("--sweep", options.sweeps, "Run over workload values, e.g. --sweep head_dim_qk=64,128,192,256 (repeatable)");
    selftest->add_flag("--fresh", options.fresh, k_fresh_help);
  }
  if (named(rules_list)) {
    add_rules_option(*rules_list, options);
    rules_list->add_option("--format", format, "Output format (default text)")->check(CLI::IsMember(k_text_json));
  }
  if (named(rules_show)) {
    add_rules_option(*rules_show, options);
    rules_show->add_option("id", options.rule_id, "Rule id")->required();
  }
  if (named(rules_lint)) {
    rules_lint->add_option("dirs", options.lint_dirs, "Rules directories (default: the installed rules)");
    add_rules_option(*rules_lint, options);
  }
  if (named(run)) {
    add_common(*run, options, format);
    add_rules_option(*run, options);
    add_workload_options(*run, options);
    add_config_option(*run, options);
    run->add_flag("--force", options.force, "Run the full check even when nothing changed");
    run->add_flag("--wait", options.wait, "Wait for a run in progress instead of exiting with 3");
  }
  if (named(daemon)) {
    add_common(*daemon, options, format);
    add_rules_option(*daemon, options);
    add_workload_options(*daemon, options);
    add_config_option(*daemon, options);
  }
  if (named(fleet)) {
    fleet->add_option("reports", options.fleet_inputs, "Report files or directories of them")->required();
    fleet->add_option("--format", format, "Output format (default text)")->check(CLI::IsMember(k_text_json));
    fleet->add_option("--output,-o", options.output, "Write the summary to FILE (atomically) instead of stdout");
    fleet->add_option("--max-age", options.max_age, "Reports older than this are stale (default 1d; e.g. 30m, 2h)");
    fleet->add_option("--hosts", options.fleet_hosts, "Text: at most N hosts or host ranges per line (default 8; 0: all)");
    fleet->add_flag("--all", options.fleet_all,
                    "Text: every configuration, finding, workload and stale node (default: the largest, in 60 lines)");
    fleet->add_option("--by", options.fleet_by,
                      "The workload x configuration matrix: nodes grouped by KEYS (gpu, driver, cuda, cudnn, nccl, torch, te; "
                      "e.g. gpu,te), each cell the verdict there and its fix");
  }
  if (named(rules_update)) {
    rules_update->add_option("url", options.update_url, "Bundle URL (https://; http:// only to 127.0.0.0/8, ::1 or localhost)")->required();
    rules_update->add_option("--public-key", options.public_keys,
                             "Trusted Ed25519 public key file (repeatable; default: the config's rules_update.public_keys)");
    rules_update->add_flag("--allow-downgrade", options.allow_downgrade,
                           "Install a bundle whose signed serial is not above the active bundle's (a deliberate rollback)");
    add_config_option(*rules_update, options);
  }
  if (named(rules_sign)) {
    rules_sign->add_option("dir", options.sign_dir, "Rules directory")->required();
    rules_sign->add_option("--secret-key", options.secret_key, "Ed25519 secret key file (rules keygen)")->required();
    rules_sign->add_option("--output,-o", options.output, "Write the bundle to FILE (atomically) instead of stdout");
    rules_sign->add_option("--serial", options.bundle_serial,
                           "Bundle serial, signed with it; must grow with every release (default: the current Unix time)");
  }
  if (named(rules_keygen)) rules_keygen->add_option("prefix", options.keygen_prefix, "Path prefix of the key files")->required();
  for (auto* sub : {rules_list, rules_show, rules_update})
    if (named(sub))
      sub->add_option("--state-dir", options.state_dir, "State directory holding updated rules (default /var/lib/nvte-doctor)");

  for (auto* sub : {check, probe, explain, selftest, rules, rules_list, rules_show, rules_lint, run, daemon, fleet, rules_update,
                    rules_sign, rules_keygen}) {
    sub->fallthrough();
    sub->footer("Examples:\n" + examples_of(sub->get_name()));
  }

  // The default command takes the same options at top level: `nvte-doctor --format json`.
  add_common(cli, options, format, k_check_formats);
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
    std::string hint = did_you_mean(cli, e.what(), argc, argv);
    std::fprintf(stderr, "nvte-doctor: %s%s (try --help)\n", util::terminal_safe(e.what()).c_str(), util::terminal_safe(hint).c_str());
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
  // rules update, sign and keygen print one line of text or write a file of their own: no JSON.
  for (const auto* own_output : {rules_update, rules_sign, rules_keygen}) {
    if (format == "json" && own_output->parsed()) {
      std::fprintf(stderr, "nvte-doctor: --format json does not apply to rules %s\n", own_output->get_name().c_str());
      return 3;
    }
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
  } catch (const std::bad_alloc&) {
    // Every input has a limit (util/input_guard.hpp); this is what is left when memory runs out
    // anyway (a pod's limit, ulimit -v): UNKNOWN with a line, never SIGABRT (audit 2026-12-01 item 12).
    std::fputs("nvte-doctor: out of memory (std::bad_alloc); the node or the input is too large for the memory this process may use\n",
               stderr);
    return 3;
  }
}

} // namespace

// Nothing escapes main: an exception from building the command line (CLI11's construction, an
// allocation) is one line and exit 3 like every other failure, not std::terminate.
int main(int argc, char** argv) {
  int code = 3;
  try {
    code = run_command_line(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nvte-doctor: internal error: %s\n", util::terminal_safe(e.what()).c_str());
  } catch (...) {
    std::fputs("nvte-doctor: internal error\n", stderr);
  }
  // Every command is done and its output written: the rest is the kernel's to free.
  util::exit_process(code);
}
