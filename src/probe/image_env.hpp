// The environment a container image gives its processes, for a preflight that reads the image's
// tree from outside (`check --root ROOTFS --node-facts ...`): the probes must see the job's PATH,
// VIRTUAL_ENV, LD_LIBRARY_PATH and NVTE_* variables, not the doctor's own.
#pragma once

#include "util/result.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace probe {

struct ImageEnvironment {
  std::map<std::string, std::string> env;
  std::string source; // the config file it came from, or "default"
};

// Reads the "KEY=VALUE" list of an OCI runtime config (process.env: what `umoci unpack` writes
// beside the rootfs as config.json) or of an OCI image config (config.Env: what
// `skopeo inspect --config` prints). A file that is neither is an error naming it.
util::Result<ImageEnvironment> read_image_environment(const std::filesystem::path& config);

// The environment for an image tree at root: the explicit config file when given; else the
// runtime config umoci leaves beside the rootfs (root/../config.json) when it has process.env;
// else the PATH a container gets when its image sets none.
util::Result<ImageEnvironment> image_environment(const std::filesystem::path& root, const std::optional<std::filesystem::path>& config);

} // namespace probe
