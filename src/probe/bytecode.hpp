// Whether Python would import a package from its bytecode or compile it from source, read from
// files only (the probe starts no Python). Python's source loader takes
// __pycache__/<module>.<cache tag>.pyc when its 16-byte header fits the source: a CPython magic
// ending in "\r\n", flags 0 (timestamp: the source's mtime and size, each modulo 2^32, must
// match), 1 or 3 (hash-based, PEP 552: taken without a stat). Anything else, or no file, and the
// module is compiled from source at every import; a process that cannot write __pycache__ (a
// read-only image layer, PYTHONDONTWRITEBYTECODE) never keeps the result. The package's
// __init__.py stands for the package: a stat and a 16-byte read.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace probe {

struct BytecodeState {
  std::string status;           // ok, missing, stale
  std::string reason;           // what was read, for the message ("records mtime ... ; the source has ...")
  std::optional<bool> writable; // the user the doctor runs as may write where Python would put it
};

// The cache tag of a CPython version: "cpython-312" for 3.12.
std::string cpython_cache_tag(long major, long minor);

// The state of package_dir/__init__.py's bytecode for cache_tag on the node under root; with
// pycache_prefix (PYTHONPYCACHEPREFIX) the file Python reads and writes under that tree instead.
// nullopt when __init__.py cannot be read (a namespace package, an unreadable directory): then
// nothing is known.
std::optional<BytecodeState> package_bytecode(const std::filesystem::path& root, const std::string& package_dir, std::string_view cache_tag,
                                              const std::string& pycache_prefix = {});

} // namespace probe
