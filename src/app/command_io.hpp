// Pieces every command shares: getting the node's facts (probe or replay, then --set), writing
// the output, resolving the rules directories.
#pragma once

#include "app/options.hpp"
#include "model/facts.hpp"
#include "probe/tree_policy.hpp"
#include "util/file_cache.hpp"
#include "util/result.hpp"
#include "util/strings.hpp"

#include <filesystem>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace app {

// The node's facts: a preflight's (the image under --root with --node-facts / --node-root, see
// preflight.hpp), else `--facts FILE` replayed, else probed; then `--set` overrides applied and
// dependent facts derived. Bad snapshots and overrides are util::Fatal, and so is a path option
// that names nothing (--root, --node-root that is missing or not a directory; --facts,
// --node-facts, --image-config, --python that does not exist). With --facts, this shell's NVTE_*
// variables that the snapshot does not share are named as ignored on stderr. When the node is probed,
// overlap (if given) is called once the slow vendor children are running (probe_node's
// after_start): check starts its rules loading there.
model::Facts load_facts(const Options& options, const std::function<void()>& overlap = {});

// Whether root is this machine's own "/" (after resolving links: "/.", a link to "/").
bool is_live_root(const std::filesystem::path& root);

// Where load_facts takes the facts from for these options: a live probe of this machine, a probe
// of an examined tree (--root other than "/", an image's environment), or a file (--facts). Only
// what a live probe found may be run or loaded here (probe/tree_policy.hpp).
probe::FactsOrigin facts_origin(const Options& options);

// The doctor's cache directory across runs: --cache-dir's (run: its state directory), else the
// user's ($XDG_CACHE_HOME/nvte-doctor or ~/.cache/nvte-doctor); none with --no-cache or without
// a usable home. Not made here: each cache makes it private (util::private_cache_directory).
std::optional<std::filesystem::path> cache_directory(const Options& options);

// A cache file across runs (util/file_cache.hpp) in cache_directory(), tagged with this binary's
// identity (another build starts it empty); nullptr without a cache directory.
std::shared_ptr<util::FileCache> open_cache_file(const Options& options, std::string_view name, util::FileCache::Limits limits);

// --python on this machine: the file (a bare name is looked up on PATH), when it is a regular
// file this process may execute; otherwise not_found ("--python X: no such file") or an error
// naming what is wrong with it. option names where the value came from (python_option).
util::Result<std::string> python_on_this_machine(const std::filesystem::path& python, std::string_view option = "--python");

// Where --python's value came from, for its errors: "--python", or "NVTE_DOCTOR_PYTHON" when that
// variable holds the same value (the wheel's launcher sets it; CLI11 takes it for --python).
std::string python_option(const Options& options);

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
using util::rfc3339;
std::string now_rfc3339();

} // namespace app
