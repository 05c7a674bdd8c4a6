#include "probe/cudnn_parts.hpp"

#include "probe/node_path.hpp"

namespace probe {

std::vector<std::string> missing_cudnn_parts(const std::filesystem::path& root, const std::string& real_path, long major) {
  // The sub-libraries of each major, as the cuDNN 9 and 8 wheels and tarballs ship them.
  static const std::vector<std::string> k_cudnn9 = {"graph", "engines_precompiled", "engines_runtime_compiled", "heuristic", "ops", "cnn",
                                                    "adv"};
  static const std::vector<std::string> k_cudnn8 = {"ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer", "adv_train"};
  const std::vector<std::string>* parts = major == 9 ? &k_cudnn9 : major == 8 ? &k_cudnn8 : nullptr;
  std::vector<std::string> missing;
  if (!parts) return missing;
  std::string dir = std::filesystem::path(real_path).parent_path().string();
  for (const auto& part : *parts) {
    std::string name = "libcudnn_" + part + ".so." + std::to_string(major);
    // A link that resolves to a file is there; a dangling one is missing, as it is to the loader.
    auto resolved = resolve_node_path(root, dir + "/" + name);
    if (!resolved || node_file_type(root, resolved->real) != NodeFileType::regular) missing.push_back(name);
  }
  return missing;
}

} // namespace probe
