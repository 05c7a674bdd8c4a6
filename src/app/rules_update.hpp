// Updated rules: where a verified bundle lives (<state_dir>/rules/current) and the download used
// by `rules update`. The commands themselves are declared in app.hpp.
#pragma once

#include "app/options.hpp"
#include "service/bundle.hpp"
#include "util/result.hpp"

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace app {

// <state_dir>/rules: holds bundles/<digest>/ and the `current` symlink.
std::filesystem::path updated_rules_root(const Options& options);
// Throws Fatal unless the state directory (and its rules/, rules/bundles/ where present) can be
// changed only by this user or root (util::check_private_directory).
void require_private_state_directory(const std::filesystem::path& state_dir);
// Removes the `.incoming-<pid>-XXXXXX` directories in bundles whose update is over (killed, or an
// older doctor's): their owner's flock is free and the owner process is gone or the directory
// is over a minute old.
void remove_abandoned_incoming(const std::filesystem::path& bundles);
// The directory of the active updated bundle (current resolved), or nullopt when none is
// installed or this user cannot read it (see unreadable_bundle).
std::optional<std::filesystem::path> active_bundle(const Options& options);
// Why an installed bundle (`current` exists) cannot be used by this user: "<path>: permission
// denied"; nullopt when there is none or it is readable.
std::optional<std::string> unreadable_bundle(const Options& options);
// The signed serial and creation time recorded in an installed bundle's BUNDLE.json (zeros for a
// bundle installed before serials existed).
service::BundleVersion installed_version(const std::filesystem::path& bundle_dir);
// "2026-11-25T04:30:00Z", or "at an unknown time" for 0.
std::string utc_date(std::int64_t unix_seconds);
// "bundle <digest> from <url> (serial N, signed <time>, key <id>, installed <time>)" from BUNDLE.json.
std::optional<std::string> bundle_description(const std::filesystem::path& bundle_dir);
// The body of url (https, or http to a loopback address), at most 16 MiB, within timeout.
util::Result<std::string> fetch_url(const std::string& url, std::chrono::seconds timeout);

} // namespace app
