#include "gpuapi/cudnn.hpp"

#include <filesystem>

namespace gpuapi {

namespace {

// cuDNN 9's sub-libraries, in dependency order (graph first; the engines need it).
constexpr const char* k_siblings[] = {"libcudnn_graph.so", "libcudnn_engines_precompiled.so",
                                      "libcudnn_engines_runtime_compiled.so", "libcudnn_heuristic.so",
                                      "libcudnn_ops.so", "libcudnn_cnn.so", "libcudnn_adv.so"};

std::vector<util::DlLibrary> preload_siblings(const std::string& candidate) {
  std::vector<util::DlLibrary> out;
  std::filesystem::path path(candidate);
  if (!path.has_parent_path()) return out;
  // The shim's major: libcudnn.so.9 -> ".9".
  std::string name = path.filename().string();
  auto at = name.find(".so");
  std::string suffix = at == std::string::npos ? "" : name.substr(at + 3);
  if (suffix.empty()) suffix = ".9";
  for (const char* sibling : k_siblings) {
    auto file = path.parent_path() / (std::string(sibling) + suffix.substr(0, suffix.find('.', 1)));
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) continue;
    if (auto lib = util::DlLibrary::open(file.string())) out.push_back(std::move(*lib));
  }
  return out;
}

} // namespace

util::Result<Cudnn> Cudnn::load(std::span<const std::string> candidates) {
  Cudnn cudnn;
  if (!candidates.empty()) cudnn.m_siblings = preload_siblings(candidates.front());
  cudnn.m_library = NVTE_TRY(open_first(candidates));
  const util::DlLibrary& library = cudnn.m_library;
  CudnnApi& api = cudnn.m_api;
  std::vector<std::string>& missing = cudnn.m_missing;
  NVTE_CUDNN_ENTRY_POINTS(NVTE_GPUAPI_BIND)
  return cudnn;
}

std::vector<std::string> Cudnn::preloaded() const {
  std::vector<std::string> out;
  for (const auto& lib : m_siblings) out.push_back(lib.loaded_path());
  return out;
}

std::string Cudnn::last_error() const {
  if (!m_api.cudnnGetLastErrorString) return {};
  char text[2048] = {};
  m_api.cudnnGetLastErrorString(text, sizeof text);
  return text;
}

std::string Cudnn::describe(CudnnStatus status) const {
  std::string out = m_api.cudnnGetErrorString ? m_api.cudnnGetErrorString(status) : "cuDNN error";
  out += " (" + std::to_string(status) + ")";
  if (auto text = last_error(); !text.empty()) out += ": " + text;
  return out;
}

} // namespace gpuapi
