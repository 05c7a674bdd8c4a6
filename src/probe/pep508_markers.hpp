// Environment markers of a Requires-Dist (PEP 508: the part after ';'), evaluated for one
// interpreter without starting it: `python_version >= "3.9" and sys_platform == "linux"`,
// `platform_machine in "x86_64 aarch64"`, `extra == "pytorch"`. Values come from the facts the
// doctor read (the interpreter's version, the node's machine); a marker that names a variable
// the doctor does not know evaluates to "unknown", and callers then claim nothing.
#pragma once

#include "util/result.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace probe::pep508 {

// Marker variable -> value (python_version "3.12", python_full_version "3.12.3",
// sys_platform "linux", platform_machine "x86_64", ...). "extra" is given per evaluation.
using MarkerEnvironment = std::map<std::string, std::string, std::less<>>;

// The environment of a CPython interpreter on Linux: python_version / python_full_version from
// its version (absent when unknown), os_name posix, sys_platform linux, platform_system Linux,
// platform_python_implementation CPython, implementation_name cpython, implementation_version,
// platform_machine and platform_release when given (empty: left out, so markers on them are
// unknown).
MarkerEnvironment linux_cpython_environment(std::string_view python_full_version, std::string_view machine,
                                            std::string_view kernel_release);

// true / false, or nullopt when the marker uses a variable the environment lacks or compares
// in a way PEP 508 leaves undefined (~= where a side is no version). extra is
// the extra being installed ("" for none); names are compared normalised (PEP 685). Fails with
// a parse error naming the position for text that is not a marker.
util::Result<std::optional<bool>> evaluate(std::string_view marker, const MarkerEnvironment& env, std::string_view extra);

} // namespace probe::pep508
