// Signed rules bundles: a whole rules database in one file, signed with Ed25519 (libsodium), for
// `nvte-doctor rules update URL` and `rules sign`. The key idea: the signature covers the exact
// payload bytes, and nothing of the payload is interpreted before the signature has verified
// against one of the trusted public keys; a truncated or altered file fails verification.
//
// Format (text header, then the signed payload; docs/reliability.md has the full description):
//   nvte-doctor-rules-bundle 2
//   key-id <16 hex digits: the first 8 bytes of the signing public key>
//   signature <128 hex digits: Ed25519 detached signature of the payload>
//   length <payload bytes>
//   <empty line>
//   payload: "serial <N>\n", "created <Unix seconds>\n", then for each file
//            "file <size> <relative path>\n", <size bytes>, "\n"
// The serial and creation time are inside the signed payload, so a mirror or a network attacker
// cannot relabel an old bundle as new: `rules update` refuses a serial below the active one
// (rollback) and `check` reports a bundle older than rules_update.max_age_days (freeze), as in
// TUF. Format 1 (the same without the two version lines) still verifies, as serial 0.
// Paths are relative, '/'-separated, end in .yaml, and use [A-Za-z0-9._-] only; no "." or ".."
// segment. Keys are files holding base64 of the raw key (32 bytes public, 64 bytes secret).
#pragma once

#include "util/result.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace service {

struct BundleFile {
  std::string path;    // relative, e.g. "attention/fused.yaml"
  std::string content; // the file's bytes
};

struct KeyPair {
  std::string public_key; // 32 raw bytes
  std::string secret_key; // 64 raw bytes
};

// A fresh Ed25519 key pair. Fails only when libsodium cannot initialise.
util::Result<KeyPair> generate_key_pair();
// Base64 (no line breaks) of a raw key, for key files.
std::string encode_key(std::string_view raw);
// A key file's text (base64, surrounding whitespace and '#' comment lines ignored) -> raw bytes
// of the expected size (32 public, 64 secret); origin names the file in errors.
util::Result<std::string> decode_key(std::string_view text, std::size_t raw_size, std::string_view origin);
// 16 hex digits naming a public key in bundles and messages.
std::string key_id(std::string_view public_key);

// Every *.yaml file under dir (recursive, sorted by relative path). Fails on an unreadable file,
// a name the bundle format cannot carry, or a directory without rules.
util::Result<std::vector<BundleFile>> read_rules_tree(const std::filesystem::path& dir);

// Which release of the rules a bundle is, signed with it.
struct BundleVersion {
  std::uint64_t serial = 0; // grows with every signing of the same rules stream; 0: format 1
  std::int64_t created = 0; // Unix time of signing; 0: unknown (format 1)
};

// The signed bundle (format 2) of files. Fails on a path the format cannot carry or a bad secret key.
util::Result<std::string> pack_bundle(std::span<const BundleFile> files, std::string_view secret_key,
                                      const BundleVersion& version);

struct UnpackedBundle {
  std::vector<BundleFile> files;
  std::string key_id;    // of the public key that verified it
  BundleVersion version; // from the signed payload
};

// Verifies the bundle against the trusted public keys (raw, 32 bytes each) and returns its files.
// Fails (parse) on a malformed header or a truncated payload, (permission) when no trusted key
// verifies the signature, (invalid) on a bad file entry. origin names the source in errors.
util::Result<UnpackedBundle> unpack_bundle(std::string_view bundle, std::span<const std::string> public_keys,
                                           std::string_view origin);

// rules_update.max_age_days of a config file: a bundle signed longer ago than this is reported
// by `check` (freeze protection). nullopt when the file or the key is absent; 0 turns it off;
// an error naming the file for a value that is not a non-negative integer.
util::Result<std::optional<long>> load_bundle_max_age_days(const std::filesystem::path& config);

// The trusted keys of a config file: `rules_update: {public_keys: [base64, ...]}`. A missing file
// or a file without the section gives no keys; a malformed one is an error naming the file.
util::Result<std::vector<std::string>> load_trusted_keys(const std::filesystem::path& config);

} // namespace service
