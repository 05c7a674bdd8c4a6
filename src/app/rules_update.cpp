// `rules update URL`, `rules sign DIR`, `rules keygen PREFIX`, and where updated rules live.
//
// An update downloads a signed bundle (https through service::http_get; plain http only to a loopback address),
// verifies it against the trusted public keys (--public-key FILE, else the config file's
// rules_update.public_keys), unpacks it into a fresh directory beside the installed bundles,
// lints it, and only then swaps the `current` symlink with rename(2), so readers see the old set
// or the new one and any failure leaves the old set active:
//   <state_dir>/rules/bundles/<digest>/...yaml, BUNDLE.json (source, key, time)
//   <state_dir>/rules/current -> bundles/<digest>
// The previous bundle is kept (one step of rollback by hand); older ones are removed.
#include "app/app.hpp"
#include "app/command_io.hpp"
#include "app/rules_update.hpp"
#include "service/bundle.hpp"
#include "rules/rules.hpp"
#include "service/push.hpp"
#include "util/defer.hpp"
#include "util/file.hpp"
#include "util/input_guard.hpp"
#include "util/json_text.hpp"
#include "util/logging.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

namespace app {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t k_max_bundle_bytes = 16u << 20;

bool is_loopback_http(std::string_view url) {
  for (std::string_view prefix : {"http://127.0.0.1:", "http://127.0.0.1/", "http://localhost:", "http://localhost/", "http://[::1]:"}) {
    if (url.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

} // namespace

util::Result<std::string> fetch_url(const std::string& url, std::chrono::seconds timeout) {
  if (url.rfind("https://", 0) != 0 && !is_loopback_http(url))
    return util::make_error(util::ErrorKind::invalid, "refusing " + url + ": rules updates use https:// (plain http only to 127.0.0.1)");
  return service::http_get(url, std::chrono::duration_cast<std::chrono::milliseconds>(timeout), k_max_bundle_bytes);
}

fs::path updated_rules_root(const Options& options) { return options.state_dir / "rules"; }

std::optional<fs::path> active_bundle(const Options& options) {
  fs::path current = updated_rules_root(options) / "current";
  std::error_code ec;
  if (!fs::is_directory(current, ec)) return std::nullopt;
  auto target = fs::canonical(current, ec);
  if (ec) return std::nullopt;
  return target;
}

std::optional<std::string> bundle_description(const fs::path& bundle_dir) {
  auto text = util::read_file(bundle_dir / "BUNDLE.json", 1u << 16);
  if (!text) return std::nullopt;
  auto doc = util::parse_json<nlohmann::json>(*text, "BUNDLE.json");
  if (!doc) return std::nullopt; // a damaged BUNDLE.json: the bundle is still listed by its directory
  if (!doc->is_object()) return std::nullopt;
  return "bundle " + doc->value("digest", std::string("?")) + " from " + doc->value("source", std::string("?")) + " (key " +
         doc->value("key_id", std::string("?")) + ", installed " + doc->value("installed_at", std::string("?")) + ")";
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
  auto keys = trusted_keys(options);
  auto body = fetch_url(options.update_url, std::chrono::seconds(120));
  if (!body) throw util::Fatal{body.error().message};
  auto bundle = service::unpack_bundle(*body, keys, options.update_url);
  if (!bundle) throw util::Fatal{bundle.error().message};

  fs::path root = updated_rules_root(options);
  fs::path bundles = root / "bundles";
  std::error_code ec;
  fs::create_directories(bundles, ec);
  if (ec) throw util::Fatal{"cannot create " + bundles.string() + ": " + ec.message()};
  std::string incoming_template = (bundles / ".incoming-XXXXXX").string();
  if (!::mkdtemp(incoming_template.data())) throw util::Fatal{"cannot create a directory in " + bundles.string() + ": " + util::errno_text(errno)};
  fs::path incoming = incoming_template;
  bool kept = false;
  util::Defer cleanup([&] {
    if (!kept) fs::remove_all(incoming, ec);
  });
  for (const auto& file : bundle->files) {
    fs::path target = incoming / file.path;
    fs::create_directories(target.parent_path(), ec);
    auto written = util::write_file_atomic(target, file.content);
    if (!written) throw util::Fatal{written.error().message};
  }
  auto problems = rules::lint({incoming});
  if (!problems.empty()) {
    const auto& first = problems.front();
    throw util::Fatal{options.update_url + ": the bundle does not lint: " + first.file + ":" + std::to_string(first.line) + ": " +
                      first.message + (problems.size() > 1 ? " (and " + std::to_string(problems.size() - 1) + " more)" : "")};
  }
  auto loaded = rules::RuleSet::load({incoming});
  if (!loaded.rules) throw util::Fatal{options.update_url + ": the bundle does not load"};
  const std::string digest = loaded.rules->digest();

  auto previous = active_bundle(options);
  fs::path final_dir = bundles / digest;
  if (previous && previous->filename() == digest) {
    std::printf("rules update: bundle %s from %s is already active (%zu rules)\n", digest.c_str(),
                options.update_url.c_str(), loaded.rules->size());
    return 0;
  }
  nlohmann::ordered_json meta = {{"digest", digest}, {"source", options.update_url}, {"key_id", bundle->key_id},
                                 {"installed_at", now_rfc3339()}, {"rules", loaded.rules->size()}};
  auto written = util::write_file_atomic(incoming / "BUNDLE.json", util::json_text(meta, 2) + "\n");
  if (!written) throw util::Fatal{written.error().message};
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
    if (name.rfind(".incoming-", 0) == 0) continue; // another update may be under way
    fs::remove_all(entry.path(), ec);
  }
  std::printf("rules update: installed bundle %s from %s (%zu rules, signed by key %s)\n", digest.c_str(),
              options.update_url.c_str(), loaded.rules->size(), bundle->key_id.c_str());
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
  auto bundle = service::pack_bundle(*files, *key);
  if (!bundle) throw util::Fatal{bundle.error().message};
  write_output(options, *bundle);
  if (options.output)
    std::fprintf(stderr, "rules sign: %zu files signed by key %s\n", files->size(), service::key_id(key->substr(32)).c_str());
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
