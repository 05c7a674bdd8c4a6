// The loader shared by every binding: try candidate sonames in order, then bind a list of
// symbols into typed function pointers. A missing symbol is recorded by name, never fatal: an
// old driver that lacks an entry point is a finding for the caller, not a crash.
//
// Each binding lists its API once, as an X-macro of (name, return type, parameter list); the
// list expands into a struct of function pointers and into the loop that fills it (the shape of
// DCGM's nvml_entry_points.h, without its headers).
#pragma once

#include "util/dl.hpp"
#include "util/result.hpp"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuapi {

// Opens the first candidate that loads (a SONAME searched by the loader, or a path). When none
// does: not_installed "<first> not found: <dlerror>" if every candidate was absent, otherwise io
// with the dlerror() of the first candidate that exists but would not load.
util::Result<util::DlLibrary> open_first(std::span<const std::string> candidates,
                                         util::LinkNamespace ns = util::LinkNamespace::shared);

// Stores the address of name in slot, or appends name to missing.
template <typename Fn>
void bind_symbol(const util::DlLibrary& library, const char* name, Fn& slot, std::vector<std::string>& missing) {
  void* address = library.symbol_or_null(name);
  if (address) slot = util::function_cast<Fn>(address);
  else missing.emplace_back(name);
}

// Declares one function-pointer member per entry of an X-macro list.
#define NVTE_GPUAPI_DECLARE(name, ret, params) ret(*name) params = nullptr;
// Binds one member per entry of an X-macro list; needs `library`, `api` and `missing` in scope.
#define NVTE_GPUAPI_BIND(name, ret, params) ::gpuapi::bind_symbol(library, #name, api.name, missing);

} // namespace gpuapi
