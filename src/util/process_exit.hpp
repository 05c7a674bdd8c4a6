// The end of a one-shot process. A command such as `check` builds large structures (the compiled
// rules, the report) that nothing needs once its output is written; freeing them is work the
// kernel does for nothing when the process ends (~4 M instructions for check's rules: about a
// millisecond of a command that takes twenty on a GPU node). keep_until_exit holds such an object
// past the command's return, and main() ends with exit_process, which flushes stdio and ends the
// process without running destructors. A long-lived process (the daemon) keeps nothing: it says
// so once (set_long_lived) and keep_until_exit then lets the object go as usual.
#pragma once

#include <memory>

namespace util {

void keep_until_exit(std::shared_ptr<const void> object);

// This process runs many commands (the daemon): keep_until_exit keeps nothing from now on.
void set_long_lived();

// Flushes stdout/stderr (C and C++ streams) and ends the process with code, skipping destructors.
[[noreturn]] void exit_process(int code);

} // namespace util
