#include "app/command_io.hpp"

#include "app/preflight.hpp"
#include "app/rules_update.hpp"

#include "probe/probe.hpp"
#include "util/file.hpp"
#include "util/input_guard.hpp"
#include "util/logging.hpp"
#include "util/strings.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
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

model::Facts load_facts(const Options& options, const std::function<void()>& overlap) {
  model::Facts facts;
  if (!options.preflight() && (!options.image_name.empty() || options.image_config))
    throw util::Fatal{"--image and --image-config describe a preflight: add --node-facts FILE or --node-root DIR"};
  if (options.preflight()) {
    facts = load_preflight_facts(options, overlap);
  } else if (options.facts_file) {
    auto text = util::read_input(*options.facts_file); // the size cap of the input layer
    if (!text) throw util::Fatal{text.error().message};
    auto loaded = model::Facts::from_json(*text, options.facts_file->string());
    if (!loaded) throw util::Fatal{loaded.error().message};
    facts = std::move(*loaded);
  } else {
    probe::Host host = probe::Host::current();
    host.root = std::filesystem::absolute(options.root);
    host.python = options.python;
    host.deep = options.deep;
    facts = probe::probe_node(host, {}, overlap);
  }
  // The environment's cap, whatever the facts came from (util::k_max_environment_facts).
  std::size_t env = 0;
  for (auto it = facts.entries().lower_bound("env."); it != facts.entries().end() && it->first.starts_with("env."); ++it) ++env;
  if (env > util::k_max_environment_facts) {
    std::string where = options.facts_file && !options.preflight() ? options.facts_file->string()
                        : options.preflight()                      ? "the image's environment"
                                                                   : "the environment";
    throw util::Fatal{where + ": " + std::to_string(env) +
                      " variables the doctor records (NVTE_*, NCCL_*, CUDA_*, CUDNN_*, ...), more than " +
                      std::to_string(util::k_max_environment_facts) + " (limit " + std::to_string(util::k_max_environment_facts) + ")"};
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
