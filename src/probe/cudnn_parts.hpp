// Whether a cuDNN copy is whole. From cuDNN 8 on, libcudnn.so.N is a small front that loads its
// sub-libraries by SONAME on first use (cuDNN 9: graph, engines_precompiled,
// engines_runtime_compiled, heuristic, ops, cnn, adv; cuDNN 8: ops/cnn/adv, each _infer and
// _train). A wheel, tarball or package installs them beside it; a copy without them passes every
// version check and then fails with "libcudnn_adv.so.9: cannot open shared object file".
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace probe {

// The sub-library file names (libcudnn_adv.so.9) of cuDNN `major` missing from the directory of
// the copy at node path real_path; empty for a whole copy or a major without sub-libraries.
std::vector<std::string> missing_cudnn_parts(const std::filesystem::path& root, const std::string& real_path, long major);

} // namespace probe
