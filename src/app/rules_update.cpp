// `rules update URL`, `rules sign DIR`, `rules keygen PREFIX`, and where updated rules live.
//
// An update downloads a signed bundle (https through service::http_get; plain http only to a loopback address),
// verifies it against the trusted public keys (--public-key FILE, else the config file's
// rules_update.public_keys), unpacks it into a fresh directory beside the installed bundles,
// lints it, and only then swaps the `current` symlink with rename(2), so readers see the old set
// or the new one and any failure leaves the old set active:
//   <state_dir>/rules/bundles/<digest>/...yaml, BUNDLE.json (source, key, time)
//   <state_dir>/rules/current -> bundles/<digest>
// The previous bundle is kept; older ones are removed. The bundle's signed serial must be above the
// active one's (rollback protection); --allow-downgrade installs an older one on purpose.
#include "app/app.hpp"
#include "app/command_io.hpp"
#include "app/rules_update.hpp"
#include "service/bundle.hpp"
#include "rules/rules.hpp"
#include "service/push.hpp"
#include "service/url_policy.hpp"
#include "util/defer.hpp"
#include "util/file.hpp"
#include "util/input_guard.hpp"
#include "util/json_text.hpp"
#include "util/logging.hpp"
#include "util/stop_signals.hpp"
#include "util/strings.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <csignal>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace app {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t k_max_bundle_bytes = 16u << 20;

} // namespace

util::Result<std::string> fetch_url(const std::string& url, std::chrono::seconds timeout) {
  if (auto allowed = service::require_secure_url(url, "rules updates"); !allowed) return allowed.error();
  return service::http_get(url, std::chrono::duration_cast<std::chrono::milliseconds>(timeout), k_max_bundle_bytes);
}

fs::path updated_rules_root(const Options& options) { return options.state_dir / "rules"; }

void require_private_state_directory(const fs::path& state_dir) {
  // The state directory and its rules/ hold what a root run trusts (run.lock, current, state):
  // another user able to write there could point them elsewhere.
  for (const fs::path& dir : {state_dir, state_dir / "rules", state_dir / "rules" / "bundles"}) {
    auto checked = util::check_private_directory(dir);
    if (!checked && !(dir != state_dir && checked.error().kind == util::ErrorKind::not_found))
      throw util::Fatal{"state directory: " + checked.error().message};
  }
}

void remove_abandoned_incoming(const fs::path& bundles) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(bundles, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(".incoming-", 0) != 0) continue;
    // Its owner holds an flock on it while it writes; a free lock means the owner is gone, unless
    // the directory is so new that its owner has not taken the lock yet (the pid in the name, in
    // this PID namespace, or a minute).
    util::Fd dir(::open(entry.path().c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir && ::flock(dir.get(), LOCK_EX | LOCK_NB) != 0) continue;
    if (!dir && errno != ENOTDIR && errno != ELOOP) continue;
    auto pid = util::parse_int(std::string_view(name).substr(10, name.find('-', 10) - 10));
    bool owner_alive = pid && *pid > 0 && (::kill(static_cast<pid_t>(*pid), 0) == 0 || errno == EPERM);
    auto mtime = fs::last_write_time(entry.path(), ec);
    bool young = !ec && fs::file_time_type::clock::now() - mtime < std::chrono::minutes(1);
    if (owner_alive && young) continue;
    fs::remove_all(entry.path(), ec);
  }
}

std::optional<std::string> unreadable_bundle(const Options& options) {
  fs::path current = updated_rules_root(options) / "current";
  std::error_code ec;
  auto link = fs::symlink_status(current, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) return current.string() + ": " + ec.message();
  if (!fs::exists(link)) return std::nullopt;
  auto target = fs::status(current, ec);
  if (ec || !fs::is_directory(target)) return current.string() + ": " + (ec ? ec.message() : "not a directory");
  if (::access(current.c_str(), R_OK | X_OK) != 0) return current.string() + ": " + util::errno_text(errno);
  return std::nullopt;
}

std::optional<fs::path> active_bundle(const Options& options) {
  fs::path current = updated_rules_root(options) / "current";
  std::error_code ec;
  if (!fs::is_directory(current, ec) || ::access(current.c_str(), R_OK | X_OK) != 0) return std::nullopt;
  auto target = fs::canonical(current, ec);
  if (ec) return std::nullopt;
  return target;
}

service::BundleVersion installed_version(const fs::path& bundle_dir) {
  service::BundleVersion version;
  auto text = util::read_file(bundle_dir / "BUNDLE.json", 1u << 16);
  if (!text) return version;
  auto doc = nlohmann::json::parse(*text, nullptr, false);
  if (!doc.is_object()) return version;
  if (doc.contains("serial") && doc["serial"].is_number_unsigned()) version.serial = doc["serial"].get<std::uint64_t>();
  if (doc.contains("created") && doc["created"].is_number_integer()) version.created = doc["created"].get<std::int64_t>();
  return version;
}

std::string utc_date(std::int64_t unix_seconds) {
  if (unix_seconds <= 0) return "at an unknown time";
  return rfc3339(unix_seconds);
}

std::optional<std::string> bundle_description(const fs::path& bundle_dir) {
  auto text = util::read_file(bundle_dir / "BUNDLE.json", 1u << 16);
  if (!text) return std::nullopt;
  auto doc = util::parse_json<nlohmann::json>(*text, "BUNDLE.json");
  if (!doc) return std::nullopt; // a damaged BUNDLE.json: the bundle is still listed by its directory
  if (!doc->is_object()) return std::nullopt;
  auto version = installed_version(bundle_dir);
  return "bundle " + doc->value("digest", std::string("?")) + " from " + doc->value("source", std::string("?")) + " (serial " +
         std::to_string(version.serial) + ", signed " + utc_date(version.created) + ", key " + doc->value("key_id", std::string("?")) +
         ", installed " + doc->value("installed_at", std::string("?")) + ")";
}

std::vector<std::string> trusted_keys(const Options& options) {
  std::vector<std::string> keys;
  for (const auto& file : options.public_keys) {
    auto text = util::read_file(file, 1u << 16);
    if (!text) throw util::Fatal{text.error().message};
    auto key = service::decode_key(*text, 32, file.string());
    if (!key) throw util::Fatal{key.error().message};
    keys.push_back(std::move(*key));
  }
  if (!keys.empty()) return keys;
  auto configured = service::load_trusted_keys(options.config_file.value_or("/etc/nvte-doctor/config.yaml"));
  if (!configured) throw util::Fatal{configured.error().message};
  if (configured->empty())
    throw util::Fatal{"no trusted public key: pass --public-key FILE or set rules_update.public_keys in " + options.config_file.value_or("/etc/nvte-doctor/config.yaml").string()};
  return std::move(*configured);
}

int run_rules_update(const Options& options) {
  // Refused before anything is downloaded (checked again once rules/bundles exist).
  if (std::error_code ec; fs::exists(options.state_dir, ec)) require_private_state_directory(options.state_dir);
  auto keys = trusted_keys(options);
  auto body = fetch_url(options.update_url, std::chrono::seconds(120));
  if (!body) throw util::Fatal{body.error().message};
  auto bundle = service::unpack_bundle(*body, keys, options.update_url);
  if (!bundle) throw util::Fatal{bundle.error().message};
  // Rollback protection (TUF's rule): the serial is signed, so only the signer can raise it.
  auto active = active_bundle(options);
  const service::BundleVersion active_version = active ? installed_version(*active) : service::BundleVersion{};
  if (active && bundle->version.serial < active_version.serial && !options.allow_downgrade)
    throw util::Fatal{"refusing " + options.update_url + ": bundle serial " + std::to_string(bundle->version.serial) +
                      " (signed " + utc_date(bundle->version.created) + ") is older than the active bundle's serial " +
                      std::to_string(active_version.serial) + " (signed " + utc_date(active_version.created) +
                      "); a rollback needs --allow-downgrade"};

  fs::path root = updated_rules_root(options);
  fs::path bundles = root / "bundles";
  std::error_code ec;
  fs::create_directories(bundles, ec);
  if (ec) throw util::Fatal{"cannot create " + bundles.string() + ": " + ec.message()};
  require_private_state_directory(options.state_dir);
  // From here to the activation a stop (systemd's SIGTERM, Ctrl-C) is caught, checked between the
  // steps, and acted on once the partial directory is gone; its owner's lock tells the next
  // update whether a leftover is still being written.
  util::CatchStopSignals stop;
  remove_abandoned_incoming(bundles);
  std::string incoming_template = (bundles / (".incoming-" + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (!::mkdtemp(incoming_template.data())) throw util::Fatal{"cannot create a directory in " + bundles.string() + ": " + util::errno_text(errno)};
  fs::path incoming = incoming_template;
  bool kept = false;
  util::Defer cleanup([&] {
    if (!kept) fs::remove_all(incoming, ec);
  });
  util::Fd owner(::open(incoming.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!owner || ::flock(owner.get(), LOCK_EX | LOCK_NB) != 0)
    throw util::Fatal{"cannot lock " + incoming.string() + ": " + util::errno_text(errno)};
  // mkdtemp makes 0700: every user's `check` reads the installed rules, not only root's.
  if (::chmod(incoming.c_str(), 0755) != 0) throw util::Fatal{"cannot chmod " + incoming.string() + ": " + util::errno_text(errno)};
  auto stop_if_asked = [&] {
    if (!stop.caught() || kept) return;
    fs::remove_all(incoming, ec);
    kept = true; // nothing left for the cleanup
    util::log::warning("rules update: stopped by signal " + std::to_string(stop.caught()) + "; removed " + incoming.string() +
                       ", the active rules are unchanged");
    stop.end_if_caught();
  };
  for (const auto& file : bundle->files) {
    stop_if_asked();
    fs::path target = incoming / file.path;
    fs::create_directories(target.parent_path(), ec);
    auto written = util::write_file_atomic(target, file.content);
    if (!written) throw util::Fatal{written.error().message};
  }
  stop_if_asked();
  auto problems = rules::lint({incoming});
  if (!problems.empty()) {
    const auto& first = problems.front();
    throw util::Fatal{options.update_url + ": the bundle does not lint: " + first.file + ":" + std::to_string(first.line) + ": " +
                      first.message + (problems.size() > 1 ? " (and " + std::to_string(problems.size() - 1) + " more)" : "")};
  }
  stop_if_asked();
  auto loaded = rules::RuleSet::load({incoming});
  if (!loaded.rules) throw util::Fatal{options.update_url + ": the bundle does not load"};
  stop_if_asked();
  const std::string digest = loaded.rules->digest();

  auto previous = active_bundle(options);
  fs::path final_dir = bundles / digest;
  if (previous && previous->filename() == digest) {
    std::printf("rules update: bundle %s from %s is already active (%zu rules)\n", digest.c_str(),
                options.update_url.c_str(), loaded.rules->size());
    return 0;
  }
  if (previous && bundle->version.serial == active_version.serial && !options.allow_downgrade)
    throw util::Fatal{"refusing " + options.update_url + ": bundle serial " + std::to_string(bundle->version.serial) +
                      " is the active bundle's serial, but the rules differ; every signing needs a higher serial "
                      "(rules sign --serial), or pass --allow-downgrade"};
  nlohmann::ordered_json meta = {{"digest", digest},
                                 {"source", options.update_url},
                                 {"key_id", bundle->key_id},
                                 {"serial", bundle->version.serial},
                                 {"created", bundle->version.created},
                                 {"installed_at", now_rfc3339()},
                                 {"rules", loaded.rules->size()}};
  auto written = util::write_file_atomic(incoming / "BUNDLE.json", util::json_text(meta, 2) + "\n");
  if (!written) throw util::Fatal{written.error().message};
  stop_if_asked();
  fs::remove_all(final_dir, ec); // a leftover of an earlier install of the same digest
  fs::rename(incoming, final_dir, ec);
  if (ec) throw util::Fatal{"cannot move the bundle into " + final_dir.string() + ": " + ec.message()};
  kept = true;

  // The swap: a new symlink beside `current`, renamed over it.
  fs::path link = root / "current";
  fs::path staged = root / (".current-" + std::to_string(::getpid()));
  fs::remove(staged, ec);
  fs::create_directory_symlink(fs::path("bundles") / digest, staged, ec);
  if (ec) throw util::Fatal{"cannot create " + staged.string() + ": " + ec.message()};
  if (::rename(staged.c_str(), link.c_str()) != 0) {
    int err = errno;
    fs::remove(staged, ec);
    throw util::Fatal{"cannot activate the bundle (rename onto " + link.string() + "): " + util::errno_text(err)};
  }
  for (const auto& entry : fs::directory_iterator(bundles, ec)) {
    auto name = entry.path().filename().string();
    if (name == digest || (previous && name == previous->filename().string())) continue;
    if (name.rfind(".incoming-", 0) == 0) continue; // remove_abandoned_incoming's
    fs::remove_all(entry.path(), ec);
  }
  remove_abandoned_incoming(bundles);
  std::printf("rules update: installed bundle %s from %s (%zu rules, serial %llu, signed %s by key %s)%s\n", digest.c_str(),
              options.update_url.c_str(), loaded.rules->size(), static_cast<unsigned long long>(bundle->version.serial),
              utc_date(bundle->version.created).c_str(), bundle->key_id.c_str(),
              previous && bundle->version.serial <= active_version.serial ? " (a downgrade, as --allow-downgrade asked)" : "");
  return 0;
}

int run_rules_sign(const Options& options) {
  auto files = service::read_rules_tree(options.sign_dir);
  if (!files) throw util::Fatal{files.error().message};
  auto problems = rules::lint({options.sign_dir});
  if (!problems.empty()) {
    std::string first = problems.front().rendered();
    throw util::Fatal{"refusing to sign rules that do not lint: " + first.substr(0, first.find('\n'))};
  }
  auto key_text = util::read_file(options.secret_key, 1u << 16);
  if (!key_text) throw util::Fatal{key_text.error().message};
  auto key = service::decode_key(*key_text, 64, options.secret_key.string());
  if (!key) throw util::Fatal{key.error().message};
  const auto now = static_cast<std::int64_t>(std::time(nullptr));
  service::BundleVersion version{options.bundle_serial.value_or(static_cast<std::uint64_t>(now)), now};
  auto bundle = service::pack_bundle(*files, *key, version);
  if (!bundle) throw util::Fatal{bundle.error().message};
  write_output(options, *bundle);
  if (options.output)
    std::fprintf(stderr, "rules sign: %zu files, serial %llu, signed by key %s\n", files->size(),
                 static_cast<unsigned long long>(version.serial), service::key_id(key->substr(32)).c_str());
  return 0;
}

int run_rules_keygen(const Options& options) {
  auto pair = service::generate_key_pair();
  if (!pair) throw util::Fatal{pair.error().message};
  fs::path secret = options.keygen_prefix.string() + ".key";
  fs::path public_key = options.keygen_prefix.string() + ".pub";
  auto written = util::write_file_atomic(
      secret, "# nvte-doctor rules signing key (Ed25519 secret): keep private\n" + service::encode_key(pair->secret_key) + "\n", 0600);
  if (!written) throw util::Fatal{written.error().message};
  written = util::write_file_atomic(
      public_key,
      "# nvte-doctor rules public key " + service::key_id(pair->public_key) + "\n" + service::encode_key(pair->public_key) + "\n", 0644);
  if (!written) throw util::Fatal{written.error().message};
  std::printf("rules keygen: key %s: %s (secret, mode 0600), %s (public)\n", service::key_id(pair->public_key).c_str(), secret.c_str(),
              public_key.c_str());
  return 0;
}

} // namespace app
