// The commands. Each returns the process exit code (ARCHITECTURE.md: 0 OK, 1 WARNING, 2 CRITICAL,
// 3 UNKNOWN); bad input is thrown as util::Fatal with a one-line reason and becomes exit 3 in main.
#pragma once

#include "app/options.hpp"

namespace app {

int run_probe(const Options& options);   // nvte-doctor probe
int run_check(const Options& options);   // nvte-doctor check (the default command)
int run_explain(const Options& options); // nvte-doctor explain
int run_rules_list(const Options& options);
int run_rules_show(const Options& options);
int run_rules_lint(const Options& options);
int run_run(const Options& options);    // nvte-doctor run (the timer's entry point)
int run_daemon(const Options& options); // nvte-doctor daemon
int run_fleet(const Options& options);  // nvte-doctor fleet REPORT...|DIR
int run_selftest(const Options& options); // nvte-doctor selftest
// The hidden `selftest-child CHECK JSON` the self-test re-executes (selftest/selftest.hpp).
int run_selftest_child(int argc, char** argv);
int run_rules_update(const Options& options); // rules update URL: verified, linted, swapped in atomically
int run_rules_sign(const Options& options);   // rules sign DIR --secret-key FILE: a signed bundle
int run_rules_keygen(const Options& options); // rules keygen PREFIX: PREFIX.key (0600) and PREFIX.pub

} // namespace app
