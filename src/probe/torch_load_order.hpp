// Which copy of a library `import torch` maps. torch does not search for cuDNN / NCCL / NVRTC /
// cudart itself: its own shared objects in torch/lib name them as DT_NEEDED and carry a RUNPATH
// such as $ORIGIN/../../nvidia/cudnn/lib, so the dynamic loader decides (loader_model.hpp). The
// objects are taken in the order import torch loads them — libtorch_global_deps.so (loaded
// RTLD_GLOBAL by torch/__init__.py), libtorch_cuda.so, libtorch.so, libtorch_python.so,
// libc10_cuda.so, libcaffe2_nvrtc.so — and the first that needs the library decides: once a
// SONAME is loaded, later NEEDED entries of the same name bind to it.
#pragma once

#include "probe/library_version.hpp"
#include "probe/loader_model.hpp"

#include <string>

namespace probe {

struct ConsumerChoice {
  std::string path;   // node path as opened
  std::string real;   // with symlinks resolved
  std::string soname; // the NEEDED / SONAME it was loaded under
  std::string reason;
};

// The copy torch (package directory torch_dir, a node path) would load. Fails with not_found
// when no torch object needs the library, or with the loader's failure.
util::Result<ConsumerChoice> torch_library_choice(const LoaderView& view, const std::string& torch_dir, const LibrarySpec& spec);

} // namespace probe
