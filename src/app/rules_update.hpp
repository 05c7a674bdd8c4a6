// Updated rules: where a verified bundle lives (<state_dir>/rules/current) and the download used
// by `rules update`. The commands themselves are declared in app.hpp.
#pragma once

#include "app/options.hpp"
#include "util/result.hpp"

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace app {

// <state_dir>/rules: holds bundles/<digest>/ and the `current` symlink.
std::filesystem::path updated_rules_root(const Options& options);
// The directory of the active updated bundle (current resolved), or nullopt when none is installed.
std::optional<std::filesystem::path> active_bundle(const Options& options);
// "bundle <digest> from <url> (key <id>, installed <time>)" from the bundle's BUNDLE.json.
std::optional<std::string> bundle_description(const std::filesystem::path& bundle_dir);
// The body of url (https, or http to a loopback address), at most 16 MiB, within timeout.
util::Result<std::string> fetch_url(const std::string& url, std::chrono::seconds timeout);

} // namespace app
