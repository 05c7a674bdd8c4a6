// Which copy of cuDNN or NCCL TE and torch would load, re-derived from the facts alone: the fix
// search adds a wheel to <lib>.copies[] or sets CUDNN_PATH and asks again. TE's own search order
// per release (te_load_order's table) runs over the recorded copies instead of the filesystem:
// glob steps take the copies under the directory the step names, pip steps those under
// python.site_packages, ldconfig and dlopen steps the copies the loader's cache or
// LD_LIBRARY_PATH provides. torch loads the copy at the path it loaded before (its RUNPATH names
// a directory; a wheel reinstalled there is the new version).
#pragma once

#include "model/facts.hpp"

#include <string_view>

namespace probe {

// Updates te.<library>.{path,version} (only when TE's choice was recorded by the probe),
// torch.<library>.version, <library>.version/path/loaded_by from them, and the import-order facts
// (import_order.hpp) that follow from the two picks. No-op without recorded copies.
void relink_from_facts(model::Facts& facts, std::string_view library);

} // namespace probe
