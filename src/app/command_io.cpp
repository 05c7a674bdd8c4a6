#include "app/command_io.hpp"

#include "app/preflight.hpp"
#include "app/rules_update.hpp"

#include "probe/node_path.hpp"
#include "probe/probe.hpp"
#include "util/file.hpp"
#include "util/input_guard.hpp"
#include "util/logging.hpp"
#include "util/strings.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <sys/stat.h>
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
    if (auto found = python_on_this_machine(*options.python); !found) throw util::Fatal{found.error().message};
  } else if (probe::node_file_type(std::filesystem::absolute(options.root), *options.python) != probe::NodeFileType::regular) {
    throw util::Fatal{"--python " + options.python->string() + ": no such file in the tree under " + options.root.string()};
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

util::Result<std::string> python_on_this_machine(const std::filesystem::path& python) {
  const std::string text = python.string();
  std::vector<std::filesystem::path> candidates;
  if (text.find('/') != std::string::npos) {
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
      return util::Error{util::ErrorKind::invalid, "--python " + text + ": not an interpreter (" + util::file_type_text(st.st_mode) + ")"};
    if (::access(candidate.c_str(), X_OK) != 0) return util::Error{util::ErrorKind::permission, "--python " + text + ": not executable"};
    return candidate.string();
  }
  return util::Error{util::ErrorKind::not_found, "--python " + text + (candidates.size() == 1 ? ": no such file" : ": not found on PATH")};
}

probe::FactsOrigin facts_origin(const Options& options) {
  if (options.facts_file) return probe::FactsOrigin::data;
  if (!is_live_root(options.root) || options.image_config) return probe::FactsOrigin::examined;
  return probe::FactsOrigin::live;
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
    facts = probe::probe_node(host, {}, overlap);
  }
  for (const auto& assignment : options.sets) {
    auto applied = facts.apply_override(assignment);
    if (!applied) throw util::Fatal{applied.error().message};
  }
  facts.derive();
  return facts;
}

void write_output(const Options& options, std::string_view document) {
  if (!options.output || options.output->string() == "-") {
    std::fwrite(document.data(), 1, document.size(), stdout);
    std::fflush(stdout);
    return;
  }
  auto written = util::write_file_atomic(*options.output, document);
  if (!written) throw util::Fatal{written.error().message};
}

std::vector<std::filesystem::path> rules_directories(const Options& options) {
  if (!options.rules_dirs.empty()) return options.rules_dirs;
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
  std::vector<std::string> looked;
  for (const auto& candidate : candidates) {
    if (std::filesystem::is_directory(candidate, ec)) return {candidate};
    looked.push_back(candidate.string());
  }
  throw util::Fatal{"no rules directory found (looked in " + util::join(looked, ", ") + "); pass --rules DIR or set NVTE_DOCTOR_RULES"};
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::string rfc3339(std::int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm utc{};
  ::gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string now_rfc3339() { return rfc3339(static_cast<std::int64_t>(std::time(nullptr))); }

} // namespace app
