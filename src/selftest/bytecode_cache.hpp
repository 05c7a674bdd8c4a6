// The Python tier's bytecode cache (PythonRun::bytecode_cache, `python-bytecode/` in the cache
// directory) is a tree Python writes, mirroring the sources' paths: tens of MB for each
// environment it compiled for. Every new venv or torch upgrade adds a tree and nothing takes an
// old one away, so before a tier runs the cache is measured, and one larger than its cap (or too
// large or too deep to measure within the walk's caps) is removed whole: the next tier fills it
// again for the environment in use, at the cost of one run that compiles.
#pragma once

#include "util/input_guard.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace selftest {

struct BytecodeCacheLimits {
  std::uintmax_t max_bytes = std::uintmax_t{1} << 30; // a few environments' torch, TE and JAX
  std::size_t max_entries = util::k_max_walk_entries; // the walk-entries cap
  std::size_t max_depth = 64;                         // a source path's directories, and more
};

// Removes dir when it holds more than the limits allow, saying why; nullopt when it is within
// them, missing, or could not be removed (then why is logged at debug level). Symlinks are
// neither followed nor counted.
std::optional<std::string> bound_bytecode_cache(const std::filesystem::path& dir, const BytecodeCacheLimits& limits = {});

} // namespace selftest
