// Signed rules bundles (see bundle.hpp for the format). The only libsodium user. Parsing is
// strict and bounded: the header is four fixed lines, the payload length must match exactly,
// and the payload is parsed only after crypto_sign_verify_detached accepted it.
#include "service/bundle.hpp"

#include "util/file.hpp"
#include "util/input_guard.hpp"
#include "util/path_trust.hpp"
#include "util/yaml_load.hpp"
#include "util/strings.hpp"

#include <sodium.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <system_error>

namespace service {

namespace {

constexpr std::string_view k_magic = "nvte-doctor-rules-bundle 2";
constexpr std::string_view k_magic_v1 = "nvte-doctor-rules-bundle 1"; // no serial: read as serial 0
constexpr std::size_t k_max_files = 4096;

// sodium_init is idempotent and thread-safe; a failure (no entropy source) is an error value.
std::optional<util::Error> init_sodium() {
  if (::sodium_init() < 0) return util::make_error(util::ErrorKind::io, "libsodium failed to initialise");
  return std::nullopt;
}

std::string to_hex(std::string_view raw) {
  std::string out(raw.size() * 2 + 1, '\0');
  ::sodium_bin2hex(out.data(), out.size(), reinterpret_cast<const unsigned char*>(raw.data()), raw.size());
  out.pop_back();
  return out;
}

std::optional<std::string> from_hex(std::string_view hex, std::size_t raw_size) {
  if (hex.size() != raw_size * 2) return std::nullopt;
  std::string out(raw_size, '\0');
  std::size_t length = 0;
  if (::sodium_hex2bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), hex.data(), hex.size(), nullptr,
                       &length, nullptr) != 0 || length != raw_size)
    return std::nullopt;
  return out;
}

bool path_is_carried(std::string_view path) {
  if (path.empty() || path.size() > 255 || !util::ends_with(path, ".yaml")) return false;
  for (char c : path) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '/')) return false;
  }
  for (auto segment : util::split(path, '/')) {
    if (segment.empty() || segment == "." || segment == "..") return false;
  }
  return true;
}

// The next "\n"-terminated line of text from pos; nullopt at the end without a newline.
std::optional<std::string_view> next_line(std::string_view text, std::size_t& pos) {
  auto end = text.find('\n', pos);
  if (end == std::string_view::npos) return std::nullopt;
  std::string_view line = text.substr(pos, end - pos);
  pos = end + 1;
  return line;
}

util::Error malformed(std::string_view origin, std::string_view what) {
  return util::make_error(util::ErrorKind::parse, std::string(origin) + ": not a rules bundle: " + std::string(what));
}

} // namespace

util::Result<KeyPair> generate_key_pair() {
  if (auto failed = init_sodium()) return *failed;
  KeyPair pair{std::string(crypto_sign_PUBLICKEYBYTES, '\0'), std::string(crypto_sign_SECRETKEYBYTES, '\0')};
  ::crypto_sign_keypair(reinterpret_cast<unsigned char*>(pair.public_key.data()),
                        reinterpret_cast<unsigned char*>(pair.secret_key.data()));
  return pair;
}

std::string encode_key(std::string_view raw) {
  const int variant = sodium_base64_VARIANT_ORIGINAL;
  std::string out(sodium_base64_ENCODED_LEN(raw.size(), variant), '\0');
  ::sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(raw.data()), raw.size(), variant);
  out.resize(std::char_traits<char>::length(out.c_str()));
  return out;
}

util::Result<std::string> decode_key(std::string_view text, std::size_t raw_size, std::string_view origin) {
  std::string encoded;
  for (auto line : util::split(text, '\n')) {
    line = util::trim(line);
    if (line.empty() || line.front() == '#') continue;
    encoded += line;
  }
  std::string raw(raw_size + 1, '\0');
  std::size_t length = 0;
  if (::sodium_base642bin(reinterpret_cast<unsigned char*>(raw.data()), raw.size(), encoded.data(), encoded.size(),
                          nullptr, &length, nullptr, sodium_base64_VARIANT_ORIGINAL) != 0 || length != raw_size)
    return util::make_error(util::ErrorKind::parse, std::string(origin) + ": not a base64 Ed25519 " +
                                                        (raw_size == crypto_sign_PUBLICKEYBYTES ? "public" : "secret") +
                                                        " key of " + std::to_string(raw_size) + " bytes");
  raw.resize(raw_size);
  return raw;
}

std::string key_id(std::string_view public_key) { return to_hex(public_key.substr(0, 8)); }

util::Result<std::vector<BundleFile>> read_rules_tree(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::vector<BundleFile> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, ec), end;
  if (ec) return util::make_error(util::ErrorKind::not_found, "cannot read rules directory " + dir.string() + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return util::make_error(util::ErrorKind::io, "cannot read rules directory " + dir.string() + ": " + ec.message());
    if (!it->is_regular_file(ec) || it->path().extension() != ".yaml") continue;
    std::string relative = fs::relative(it->path(), dir, ec).generic_string();
    if (!path_is_carried(relative))
      return util::make_error(util::ErrorKind::invalid, it->path().string() + ": a bundle cannot carry this file name");
    files.push_back({relative, NVTE_TRY(util::read_file(it->path()))});
  }
  if (files.empty()) return util::make_error(util::ErrorKind::not_found, "no *.yaml rules under " + dir.string());
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return files;
}

util::Result<std::string> pack_bundle(std::span<const BundleFile> files, std::string_view secret_key,
                                      const BundleVersion& version) {
  if (auto failed = init_sodium()) return *failed;
  if (secret_key.size() != crypto_sign_SECRETKEYBYTES)
    return util::make_error(util::ErrorKind::invalid, "an Ed25519 secret key has 64 bytes");
  std::string payload = "serial " + std::to_string(version.serial) + "\ncreated " + std::to_string(version.created) + "\n";
  for (const auto& file : files) {
    if (!path_is_carried(file.path)) return util::make_error(util::ErrorKind::invalid, file.path + ": a bundle cannot carry this file name");
    payload += "file " + std::to_string(file.content.size()) + " " + file.path + "\n" + file.content + "\n";
  }
  std::string signature(crypto_sign_BYTES, '\0');
  ::crypto_sign_detached(reinterpret_cast<unsigned char*>(signature.data()), nullptr,
                         reinterpret_cast<const unsigned char*>(payload.data()), payload.size(),
                         reinterpret_cast<const unsigned char*>(secret_key.data()));
  // The public key is the second half of a libsodium Ed25519 secret key.
  return std::string(k_magic) + "\nkey-id " + key_id(secret_key.substr(32)) + "\nsignature " + to_hex(signature) +
         "\nlength " + std::to_string(payload.size()) + "\n\n" + payload;
}

util::Result<UnpackedBundle> unpack_bundle(std::string_view bundle, std::span<const std::string> public_keys,
                                           std::string_view origin) {
  if (auto failed = init_sodium()) return *failed;
  std::size_t pos = 0;
  auto magic = next_line(bundle, pos);
  if (!magic || (*magic != k_magic && *magic != k_magic_v1))
    return malformed(origin, "the first line is not '" + std::string(k_magic) + "'");
  const bool versioned = *magic == k_magic;
  auto key_line = next_line(bundle, pos);
  auto signature_line = next_line(bundle, pos);
  auto length_line = next_line(bundle, pos);
  auto blank = next_line(bundle, pos);
  if (!key_line || !signature_line || !length_line || !blank) return malformed(origin, "truncated header");
  if (!util::starts_with(*key_line, "key-id ") || !util::starts_with(*signature_line, "signature ") ||
      !util::starts_with(*length_line, "length ") || !blank->empty())
    return malformed(origin, "header lines must be key-id, signature, length and an empty line");
  auto signature = from_hex(signature_line->substr(10), crypto_sign_BYTES);
  if (!signature) return malformed(origin, "the signature is not 128 hex digits");
  auto length = util::parse_int(length_line->substr(7));
  std::string_view payload = bundle.substr(pos);
  if (!length || *length < 0) return malformed(origin, "bad length");
  if (static_cast<unsigned long long>(*length) != payload.size())
    return malformed(origin, "truncated or padded: the header says " + std::to_string(*length) + " payload bytes, " +
                                 std::to_string(payload.size()) + " arrived");

  std::string verified_by;
  for (const auto& key : public_keys) {
    if (key.size() != crypto_sign_PUBLICKEYBYTES) continue;
    if (::crypto_sign_verify_detached(reinterpret_cast<const unsigned char*>(signature->data()),
                                      reinterpret_cast<const unsigned char*>(payload.data()), payload.size(),
                                      reinterpret_cast<const unsigned char*>(key.data())) == 0) {
      verified_by = key_id(key);
      break;
    }
  }
  if (verified_by.empty())
    return util::make_error(util::ErrorKind::permission,
                            std::string(origin) + ": the signature (key " + std::string(key_line->substr(7)) +
                                ") does not verify against any of the " + std::to_string(public_keys.size()) +
                                " trusted public key(s)");

  UnpackedBundle out;
  out.key_id = verified_by;
  std::size_t at = 0;
  if (versioned) {
    auto serial = next_line(payload, at);
    auto created = next_line(payload, at);
    if (!serial || !created || !util::starts_with(*serial, "serial ") || !util::starts_with(*created, "created "))
      return malformed(origin, "the payload does not start with its serial and creation time");
    auto serial_value = util::parse_int(serial->substr(7));
    auto created_value = util::parse_int(created->substr(8));
    if (!serial_value || *serial_value < 0 || !created_value || *created_value < 0)
      return malformed(origin, "bad serial or creation time");
    out.version = {static_cast<std::uint64_t>(*serial_value), static_cast<std::int64_t>(*created_value)};
  }
  while (at < payload.size()) {
    auto header = next_line(payload, at);
    if (!header || !util::starts_with(*header, "file ")) return malformed(origin, "bad file entry");
    auto rest = header->substr(5);
    auto space = rest.find(' ');
    if (space == std::string_view::npos) return malformed(origin, "bad file entry");
    auto size = util::parse_int(rest.substr(0, space));
    std::string path(rest.substr(space + 1));
    if (!size || *size < 0 || static_cast<unsigned long long>(*size) + 1 > payload.size() - at)
      return malformed(origin, "file entry " + path + " runs past the payload");
    if (!path_is_carried(path)) return malformed(origin, "file name '" + path + "' is not allowed");
    auto content_size = static_cast<std::size_t>(*size);
    if (payload[at + content_size] != '\n') return malformed(origin, "file entry " + path + " lacks its final newline");
    for (const auto& seen : out.files) {
      if (seen.path == path) return malformed(origin, "file " + path + " appears twice");
    }
    if (out.files.size() >= k_max_files) return malformed(origin, "more than 4096 files");
    out.files.push_back({path, std::string(payload.substr(at, content_size))});
    at += content_size + 1;
  }
  if (out.files.empty()) return malformed(origin, "no files");
  return out;
}

util::Result<std::optional<long>> load_bundle_max_age_days(const std::filesystem::path& config) {
  std::error_code ec;
  if (!std::filesystem::exists(config, ec)) return std::optional<long>{};
  std::string text = NVTE_TRY(util::read_file(config, 1u << 20));
  YAML::Node root = NVTE_TRY(util::load_yaml(text, config.string())); // depth, aliases, one document
  try {
    if (!root.IsMap() || !root["rules_update"] || !root["rules_update"].IsMap()) return std::optional<long>{};
    YAML::Node days = root["rules_update"]["max_age_days"];
    if (!days) return std::optional<long>{};
    auto value = days.IsScalar() ? util::parse_int(days.Scalar()) : std::nullopt;
    if (!value || *value < 0)
      return util::make_error(util::ErrorKind::parse, config.string() + ":" + std::to_string(days.Mark().line + 1) +
                                                          ": rules_update.max_age_days must be a whole number of days (0: off)");
    return std::optional<long>{static_cast<long>(*value)};
  } catch (const YAML::Exception& e) {
    return util::yaml_cpp_error(config.string(), e);
  }
}

util::Result<std::vector<std::string>> load_trusted_keys(const std::filesystem::path& config) {
  std::error_code ec;
  if (!std::filesystem::exists(config, ec)) return std::vector<std::string>{};
  NVTE_TRY_VOID(util::check_trusted_path(config, "config file")); // its keys decide which bundles are trusted
  std::string text = NVTE_TRY(util::read_file(config, 1u << 20));
  YAML::Node root = NVTE_TRY(util::load_yaml(text, config.string())); // depth, aliases, one document
  std::vector<std::string> keys;
  try {
    if (!root.IsMap() || !root["rules_update"]) return keys;
    YAML::Node list = root["rules_update"]["public_keys"];
    if (!list) return keys;
    if (!list.IsSequence())
      return util::make_error(util::ErrorKind::parse, config.string() + ": rules_update.public_keys must be a list of base64 keys");
    for (const auto& item : list) {
      std::string origin = config.string() + ":" + std::to_string(item.Mark().line + 1) + ": rules_update.public_keys";
      if (!item.IsScalar()) return util::make_error(util::ErrorKind::parse, origin + ": not a string");
      keys.push_back(NVTE_TRY(decode_key(item.Scalar(), crypto_sign_PUBLICKEYBYTES, origin)));
    }
  } catch (const YAML::Exception& e) {
    return util::yaml_cpp_error(config.string(), e);
  }
  return keys;
}

} // namespace service
