// What a process that imports both torch and TransformerEngine maps, for each import order,
// from each consumer's own pick of a library (te.<lib>.*, torch.<lib>.*). The mechanism, as
// measured on the reference node (GPU-NODE.md, /proc/self/maps after each order):
//   - torch first: torch's NEEDED libcudnn.so.9 is mapped at `import torch`. TE then dlopens its
//     own pick (a path, or the dev name "libcudnn.so") with RTLD_GLOBAL; glibc reuses a loaded
//     object only for the same file or a name equal to its SONAME, neither of which holds for
//     another copy, so that copy is mapped too and TE's core library resolves against it. Both
//     copies run side by side: torch on its own, TE on its pick.
//   - TE first: TE's pick is mapped first, under its SONAME. torch's NEEDED of the same SONAME
//     then binds to it, so torch runs on TE's copy — and torch's cuDNN check
//     (torch/backends/cudnn/__init__.py, _init: same major and runtime minor >= compiled minor,
//     unless PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK=1) raises "cuDNN version incompatibility"
//     when that copy is older than the one torch was built against (torch.cudnn.compiled_version,
//     the nvidia-cudnn wheel torch's METADATA pins; without that pin, torch's own copy).
// CUDNN_PATH set to torch's wheel makes TE pick torch's copy: one copy in either order.
#pragma once

#include "model/facts.hpp"

#include <string_view>

namespace probe {

// Sets, for library "cudnn" (where both te.cudnn.path and torch.cudnn.path are known):
//   te.cudnn.torch_first.{path,version}   TE's cuDNN when torch is imported first (TE's own pick)
//   te.cudnn.te_first.{path,version}      TE's cuDNN when TE is imported first (TE's own pick)
//   torch.cudnn.te_first.{path,version}   the copy torch binds to when TE is imported first
//   torch.cudnn.te_first.fails            torch's cuDNN check raises in that order
//   torch.cudnn.check_fails               torch's cuDNN check rejects torch's own copy (needs
//                                         torch.cudnn.compiled_version; set without TE too)
//   cudnn.mapped_copies.torch_first / .te_first   how many cuDNN copies the process maps
// and for "nvrtc": nvrtc.mapped_copies.torch_first. Erases them first, so a re-derivation after
// a changed pick (the fix search's relink) leaves nothing stale.
void derive_import_orders(model::Facts& facts, std::string_view library);

} // namespace probe
