// Pieces every command shares: getting the node's facts (probe or replay, then --set), writing
// the output, resolving the rules directories.
#pragma once

#include "app/options.hpp"
#include "model/facts.hpp"

#include <filesystem>
#include <functional>
#include <string_view>
#include <vector>

namespace app {

// The node's facts: a preflight's (the image under --root with --node-facts / --node-root, see
// preflight.hpp), else `--facts FILE` replayed, else probed; then `--set` overrides applied and
// dependent facts derived. Bad snapshots and overrides are util::Fatal. When the node is probed,
// overlap (if given) is called once the slow vendor children are running (probe_node's
// after_start): check starts its rules loading there.
model::Facts load_facts(const Options& options, const std::function<void()>& overlap = {});

// Writes the document to --output (atomically; a failed write leaves the old file) or stdout;
// text to a terminal is wrapped at its width (COLUMNS, else the terminal's), never JSON, a
// file or a pipe.
void write_output(const Options& options, std::string_view document);

// The rules to load: --rules-only dirs (or the config's `rules:`), else the shipped set
// ($NVTE_DOCTOR_RULES, else an updated bundle, else (in its build tree) the source tree's, else
// <exe>/../share/nvte-doctor/rules, <exe>/rules, the installed rules); then the --rules dirs
// added to them, each directory once. No shipped set and no --rules is util::Fatal listing
// every place looked.
std::vector<std::filesystem::path> rules_directories(const Options& options);

// util::Fatal unless dir is a directory: "rules directory X does not exist", or "rules directory
// X is not a directory (a character device)" for /dev/zero, a FIFO, a file.
void require_rules_directory(const std::filesystem::path& dir);

// Host name for reports; a Unix time, and the current time, as RFC 3339 (UTC).
std::string host_name();
std::string rfc3339(std::int64_t unix_seconds);
std::string now_rfc3339();

} // namespace app
