#include "app/command_io.hpp"

#include "app/preflight.hpp"
#include "app/rules_update.hpp"

#include "probe/node_path.hpp"
#include "probe/probe.hpp"
#include "util/file.hpp"
#include "util/file_cache.hpp"
#include "util/input_guard.hpp"
#include "util/logging.hpp"
#include "util/strings.hpp"
#include "util/text_wrap.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <unistd.h>

#ifndef NVTE_DATADIR
#define NVTE_DATADIR "/usr/share/nvte-doctor"
#endif
#ifndef NVTE_BUILD_DIR
#define NVTE_BUILD_DIR ""
#endif
#ifndef NVTE_SOURCE_DIR
#define NVTE_SOURCE_DIR ""
#endif

namespace app {

namespace {

// --root DIR, --node-root DIR: a directory, or exit 3. A typo or an image that is not mounted must
// not be checked as an empty tree (OK, or "no GPU"), which a preflight wrapper lets run.
void require_directory(std::string_view option, const std::filesystem::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) throw util::Fatal{std::string(option) + " " + dir.string() + ": no such directory"};
    throw util::Fatal{std::string(option) + " " + dir.string() + ": " + util::errno_text(err)};
  }
  if (!S_ISDIR(st.st_mode))
    throw util::Fatal{std::string(option) + " " + dir.string() + ": not a directory (" + util::file_type_text(st.st_mode) + ")"};
}

// --facts FILE, --node-facts FILE: the option's name with the cause, before any reader runs.
void require_file(std::string_view option, const std::filesystem::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) throw util::Fatal{std::string(option) + " " + file.string() + ": no such file"};
    throw util::Fatal{std::string(option) + " " + file.string() + ": " + util::errno_text(err)};
  }
}

// Every path option names something that is there, or the command is exit 3 with the option's
// name: never a report about something else (issue 36, audit 2026-12-01 item 20).
void check_path_options(const Options& options) {
  if (!is_live_root(options.root)) require_directory("--root", options.root);
  if (options.node_root) require_directory("--node-root", *options.node_root);
  if (options.facts_file) require_file("--facts", *options.facts_file);
  if (options.node_facts_file) require_file("--node-facts", *options.node_facts_file);
  if (options.image_config) require_file("--image-config", *options.image_config);
  if (!options.python || options.python->empty()) return;
  // --python names the interpreter to examine: on this machine, or a path inside the tree.
  if (is_live_root(options.root)) {
    if (auto found = python_on_this_machine(*options.python, python_option(options)); !found) throw util::Fatal{found.error().message};
  } else if (probe::node_file_type(std::filesystem::absolute(options.root), *options.python) != probe::NodeFileType::regular) {
    throw util::Fatal{python_option(options) + " " + options.python->string() + ": no such file in the tree under " +
                      options.root.string()};
  }
}

// A snapshot describes another node or moment, so the NVTE_* variables of this shell are not
// part of it: each one that would change what the snapshot says is named as ignored, never
// applied silently and never dropped silently; --set env.NAME=VALUE applies one (issue 36).
void warn_ignored_environment(const Options& options, const model::Facts& snapshot) {
  std::vector<std::string> ignored;
  for (const auto& [name, value] : probe::Host::current().env) {
    if (!name.starts_with("NVTE_") || name.starts_with("NVTE_DOCTOR_")) continue;
    bool set = false;
    for (const auto& assignment : options.sets) set = set || assignment.starts_with("env." + name + "=");
    if (set || snapshot.get_string("env." + name) == value) continue;
    ignored.push_back(name);
  }
  if (ignored.empty()) return;
  util::log::warning("--facts " + options.facts_file->string() + " replays that node's environment; " + util::join(ignored, ", ") +
                     " from this shell " + (ignored.size() == 1 ? "is" : "are") + " ignored (apply with --set env." + ignored.front() +
                     "=VALUE)");
}

} // namespace

bool is_live_root(const std::filesystem::path& root) {
  if (root.empty()) return true;
  std::error_code ec;
  auto canonical = std::filesystem::weakly_canonical(std::filesystem::absolute(root), ec);
  return !ec && canonical == "/";
}

std::string python_option(const Options& options) {
  const char* env = std::getenv("NVTE_DOCTOR_PYTHON");
  return env && options.python && options.python->string() == env ? "NVTE_DOCTOR_PYTHON" : "--python";
}

util::Result<std::string> python_on_this_machine(const std::filesystem::path& python, std::string_view option) {
  const std::string text = std::string(option) + " " + python.string();
  std::vector<std::filesystem::path> candidates;
  if (python.string().find('/') != std::string::npos) {
    candidates.push_back(python);
  } else {
    const char* path = std::getenv("PATH");
    for (auto dir : util::split(path ? path : "/usr/bin:/bin", ':'))
      candidates.push_back(std::filesystem::path(dir.empty() ? "." : std::string(dir)) / python);
  }
  for (const auto& candidate : candidates) {
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0) continue;
    if (!S_ISREG(st.st_mode))
      return util::Error{util::ErrorKind::invalid, text + ": not an interpreter (" + util::file_type_text(st.st_mode) + ")"};
    if (::access(candidate.c_str(), X_OK) != 0) return util::Error{util::ErrorKind::permission, text + ": not executable"};
    return candidate.string();
  }
  return util::Error{util::ErrorKind::not_found, text + (candidates.size() == 1 ? ": no such file" : ": not found on PATH")};
}

probe::FactsOrigin facts_origin(const Options& options) {
  if (options.facts_file) return probe::FactsOrigin::data;
  if (!is_live_root(options.root) || options.image_config) return probe::FactsOrigin::examined;
  return probe::FactsOrigin::live;
}

std::optional<std::filesystem::path> cache_directory(const Options& options) {
  if (options.no_cache) return std::nullopt;
  if (options.cache_dir) return *options.cache_dir;
  if (auto user = util::user_cache_directory()) return *user / "nvte-doctor";
  return std::nullopt;
}

std::shared_ptr<util::FileCache> open_cache_file(const Options& options, std::string_view name, util::FileCache::Limits limits) {
  auto found = cache_directory(options);
  if (!found) return nullptr;
  // Another build (a new release, a rebuilt binary) may compute a value differently: its own
  // identity is in the tag, so its cache starts empty.
  std::string tag = NVTE_VERSION_STRING;
  struct stat self {};
  if (::stat("/proc/self/exe", &self) == 0) tag += " " + util::identity_text(util::file_identity(self));
  return util::FileCache::open(*found, name, tag, limits);
}

model::Facts load_facts(const Options& options, const std::function<void()>& overlap) {
  model::Facts facts;
  if (!options.preflight() && (!options.image_name.empty() || options.image_config))
    throw util::Fatal{"--image and --image-config describe a preflight: add --node-facts FILE or --node-root DIR"};
  check_path_options(options);
  if (options.preflight()) {
    facts = load_preflight_facts(options, overlap);
  } else if (options.facts_file) {
    auto text = util::read_input(*options.facts_file); // the size cap of the input layer
    if (!text) throw util::Fatal{text.error().message};
    auto loaded = model::Facts::from_json(*text, options.facts_file->string());
    if (!loaded) throw util::Fatal{loaded.error().message};
    facts = std::move(*loaded);
    warn_ignored_environment(options, facts);
  } else {
    probe::Host host = probe::Host::current();
    host.root = std::filesystem::absolute(options.root);
    if (options.python && !options.python->empty()) host.python = options.python; // --python '': none
    host.deep = options.deep;
    host.file_cache = open_cache_file(options, "probe-files.cache", {});
    util::log::Laps laps("probe");
    facts = probe::probe_node(host, {}, overlap);
    laps.lap("returned (its files unmapped)");
    if (host.file_cache) host.file_cache->save();
    laps.lap("file cache saved");
  }
  // A probe that ran into a cap of the input layer (a directory walk too deep or too large) saw
  // only part of the tree: exit 3 naming the cap, never a verdict on the part.
  if (auto cap = facts.get_string("probe.limit_exceeded"); cap && !options.facts_file) throw util::Fatal{"probe: " + *cap};
  // The environment's cap, whatever the facts came from (util::k_max_environment_facts).
  std::size_t env = 0;
  for (auto it = facts.entries().lower_bound("env."); it != facts.entries().end() && it->first.starts_with("env."); ++it) ++env;
  if (env > util::k_max_environment_facts) {
    std::string where = options.facts_file && !options.preflight() ? options.facts_file->string()
                        : options.preflight()                      ? "the image's environment"
                                                                   : "the environment";
    const std::string cap = std::to_string(util::k_max_environment_facts);
    throw util::Fatal{where + ": " + std::to_string(env) +
                      " variables the doctor records (NVTE_*, NCCL_*, CUDA_*, CUDNN_*, ...), more than " + cap + " (limit " + cap +
                      ", the environment cap); " +
                      (options.facts_file ? "remove the ones the check does not need from it" : "unset the ones the job does not need")};
  }
  for (const auto& assignment : options.sets) {
    auto applied = facts.apply_override(assignment);
    if (!applied) throw util::Fatal{applied.error().message};
  }
  facts.derive();
  return facts;
}

namespace {

// Narrower than this, wrapping would make the text harder to read, not easier.
constexpr long k_min_wrap_width = 30;

// The width to wrap text output at: only text, only to a terminal (COLUMNS, else the terminal's
// own width); 0 (no wrapping) for JSON and the other formats, a file, a pipe.
std::size_t terminal_width(const Options& options) {
  if (options.format != Format::text || (options.output && options.output->string() != "-")) return 0;
  if (::isatty(STDOUT_FILENO) != 1) return 0;
  if (const char* columns = std::getenv("COLUMNS"); columns && *columns) {
    char* end = nullptr;
    long value = std::strtol(columns, &end, 10);
    if (end && *end == '\0' && value > 0) return value < k_min_wrap_width ? 0 : static_cast<std::size_t>(value);
  }
  winsize size{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col >= k_min_wrap_width) return size.ws_col;
  return 0;
}

} // namespace

void write_output(const Options& options, std::string_view document) {
  if (!options.output || options.output->string() == "-") {
    std::string wrapped;
    if (auto width = terminal_width(options)) {
      wrapped = util::wrap_text(document, width);
      document = wrapped;
    }
    std::fwrite(document.data(), 1, document.size(), stdout);
    std::fflush(stdout);
    return;
  }
  auto written = util::write_file_atomic(*options.output, document);
  if (!written) throw util::Fatal{written.error().message};
}

namespace {

// The shipped rules: NVTE_DOCTOR_RULES, the updated bundle, the build tree's, the installed ones;
// nullopt with the places looked in when there are none.
std::optional<std::filesystem::path> shipped_rules(const Options& options, std::vector<std::string>& looked) {
  if (const char* env = std::getenv("NVTE_DOCTOR_RULES"); env && *env) return {env};
  if (auto updated = active_bundle(options)) return {*updated}; // `rules update` replaced the installed set
  // An installed bundle this user cannot read (a 0750 state directory): said, never silent.
  if (auto why = unreadable_bundle(options)) util::log::warning("cannot read the updated rules (" + *why + "); using the packaged rules");
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::filesystem::path source = std::filesystem::path(NVTE_SOURCE_DIR) / "rules";
  // A binary in its build tree uses the rules of its source tree, even where a package is installed.
  if (!ec && exe.parent_path() == std::filesystem::path(NVTE_BUILD_DIR) && std::filesystem::is_directory(source, ec)) return {source};
  // Then the places a relocated binary carries its rules (a tarball, a container, a module-file
  // prefix): <prefix>/bin/nvte-doctor with <prefix>/share/nvte-doctor/rules, or rules/ beside
  // the binary; then the configured install prefix. A binary copied out of its build tree is a
  // relocated binary too: it does not fall back to the source tree behind the user's back.
  std::vector<std::filesystem::path> candidates;
  if (!ec) {
    candidates.push_back(exe.parent_path().parent_path() / "share" / "nvte-doctor" / "rules");
    candidates.push_back(exe.parent_path() / "rules");
  }
  candidates.push_back(std::filesystem::path(NVTE_DATADIR) / "rules");
  for (const auto& candidate : candidates) {
    if (std::filesystem::is_directory(candidate, ec)) return {candidate};
    looked.push_back(candidate.string());
  }
  return std::nullopt;
}

// dirs with each directory once (a --rules naming the shipped directory adds nothing).
std::vector<std::filesystem::path> distinct_dirs(const std::vector<std::filesystem::path>& dirs) {
  std::vector<std::filesystem::path> out;
  std::vector<std::filesystem::path> seen;
  for (const auto& dir : dirs) {
    std::error_code ec;
    auto canonical = std::filesystem::weakly_canonical(dir, ec);
    if (ec) canonical = dir;
    if (std::find(seen.begin(), seen.end(), canonical) != seen.end()) continue;
    seen.push_back(canonical);
    out.push_back(dir);
  }
  return out;
}

} // namespace

std::vector<std::filesystem::path> rules_directories(const Options& options) {
  std::vector<std::filesystem::path> dirs;
  if (!options.rules_only_dirs.empty()) {
    dirs = options.rules_only_dirs;
  } else {
    std::vector<std::string> looked;
    if (auto shipped = shipped_rules(options, looked)) {
      dirs.push_back(*shipped);
    } else if (options.rules_dirs.empty()) {
      throw util::Fatal{"no rules directory found (looked in " + util::join(looked, ", ") +
                        "); pass --rules-only DIR or set NVTE_DOCTOR_RULES"};
    } else {
      util::log::warning("no shipped rules found (looked in " + util::join(looked, ", ") + "); using only the --rules directories");
    }
  }
  dirs.insert(dirs.end(), options.rules_dirs.begin(), options.rules_dirs.end());
  return distinct_dirs(dirs);
}

void require_rules_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return;
  std::string kind = util::file_kind(dir);
  if (kind.empty()) throw util::Fatal{"rules directory " + dir.string() + " does not exist"};
  throw util::Fatal{"rules directory " + dir.string() + " is not a directory (" + kind + ")"};
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::string now_rfc3339() { return rfc3339(static_cast<std::int64_t>(std::time(nullptr))); }

} // namespace app
