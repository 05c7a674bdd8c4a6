// The service configuration: /etc/nvte-doctor/config.yaml (or --config FILE), read by `run`,
// `daemon` and, for its workloads directory, `check`. Every key is documented in
// nvte-doctor.conf(5) and packaging/config.yaml. Unknown keys and bad values are errors that
// start with "file:line:column:", and an unknown key gets a did-you-mean hint.
#pragma once

#include "util/result.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace service {

inline constexpr std::string_view k_default_config_path = "/etc/nvte-doctor/config.yaml";

enum class SelftestPolicy { never, on_change, always };
std::string_view to_string(SelftestPolicy policy);

enum class PushMethod { post, put };

struct PushConfig {
  std::string url;                                  // https://... (http:// only to loopback); {host}: the report's host
  PushMethod method = PushMethod::post;             // PUT: one file per node on a WebDAV or object store
  std::optional<std::filesystem::path> token_file;  // bearer token; mode must be 0600 or stricter
  std::chrono::milliseconds connect_timeout{5000};  // TCP + TLS handshake
  std::chrono::milliseconds timeout{30000};         // whole request
  int retries = 3;                                  // extra attempts per report after the first
  std::chrono::milliseconds backoff{1000};          // first retry delay; doubles, with jitter
  std::chrono::milliseconds max_backoff{60000};     // cap of one delay
  std::filesystem::path spool_dir;                  // default: <state_dir>/spool
  std::size_t spool_max_reports = 100;              // oldest dropped beyond this
  std::uint64_t spool_max_bytes = 64ull << 20;      // oldest dropped beyond this
};

struct Outputs {
  std::filesystem::path report;                     // report JSON; default <state_dir>/report.json
  std::optional<std::filesystem::path> prometheus;  // node_exporter textfile (*.prom)
  std::optional<std::filesystem::path> nfd;         // NFD features.d file
};

struct Config {
  std::filesystem::path source;                     // the file read; empty = built-in defaults
  std::optional<std::filesystem::path> workloads_dir; // *.yaml/*.yml/*.json workloads, */config.json
  std::vector<std::filesystem::path> rules_dirs;    // empty = the installed rules
  std::vector<std::string> sets;                    // set: KEY=VALUE facts, applied before --set
  std::filesystem::path state_dir = "/var/lib/nvte-doctor";
  std::chrono::seconds interval{900};               // daemon: time between runs
  std::chrono::seconds max_age{86400};              // run: full check at least this often
  Outputs outputs;
  std::optional<PushConfig> push;
  SelftestPolicy selftest_policy = SelftestPolicy::on_change;
  std::chrono::seconds selftest_timeout{120};
  std::chrono::milliseconds debounce{5000};         // daemon: wait after a watched path changed
  std::vector<std::filesystem::path> watch;         // daemon: extra paths to watch
  std::vector<std::string> rules_update_public_keys; // rules update: trusted Ed25519 keys (base64; checked there)
};

// Parses config text; origin names the file in errors. Relative paths are taken relative to
// the file's directory. Defaults fill what the text does not say.
util::Result<Config> parse_config(std::string_view text, const std::filesystem::path& origin);

// Reads path. Missing file: an error when explicit, else the built-in defaults.
enum class ConfigRequired { yes, no };
util::Result<Config> load_config(const std::filesystem::path& path, ConfigRequired required);

// "90", "90s", "15m", "2h", "1d", "500ms" -> milliseconds; nullopt when malformed.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);
// "1048576", "512K", "64M", "1G" (also KiB/MiB/GiB; powers of 1024) -> bytes.
std::optional<std::uint64_t> parse_size(std::string_view text);

} // namespace service
