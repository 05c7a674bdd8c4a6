#include "gpuapi/nvrtc.hpp"

#include "util/defer.hpp"

#include <filesystem>

namespace gpuapi {

namespace {

// The builtins library next to a libnvrtc given by path: libnvrtc-builtins.so.<major>.<minor>.
util::DlLibrary preload_builtins(const std::string& candidate) {
  std::filesystem::path path(candidate);
  if (!path.has_parent_path()) return {};
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path.parent_path(), ec)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with("libnvrtc-builtins.so.") && name.find("alt") == std::string::npos) {
      if (auto lib = util::DlLibrary::open(entry.path().string())) return std::move(*lib);
    }
  }
  return {};
}

} // namespace

util::Result<Nvrtc> Nvrtc::load(std::span<const std::string> candidates) {
  Nvrtc nvrtc;
  if (!candidates.empty()) nvrtc.m_builtins = preload_builtins(candidates.front());
  nvrtc.m_library = NVTE_TRY(open_first(candidates));
  const util::DlLibrary& library = nvrtc.m_library;
  NvrtcApi& api = nvrtc.m_api;
  std::vector<std::string>& missing = nvrtc.m_missing;
  NVTE_NVRTC_ENTRY_POINTS(NVTE_GPUAPI_BIND)
  return nvrtc;
}

util::Result<std::pair<int, int>> Nvrtc::version() const {
  if (!m_api.nvrtcVersion) return util::make_error(util::ErrorKind::symbol_missing, path() + " lacks nvrtcVersion");
  int major = 0, minor = 0;
  if (int rc = m_api.nvrtcVersion(&major, &minor); rc != 0)
    return util::make_error(util::ErrorKind::driver_error, "nvrtcVersion failed with " + std::to_string(rc));
  return std::pair{major, minor};
}

std::vector<int> Nvrtc::supported_archs() const {
  std::vector<int> archs;
  int count = 0;
  if (!m_api.nvrtcGetNumSupportedArchs || !m_api.nvrtcGetSupportedArchs) return archs;
  if (m_api.nvrtcGetNumSupportedArchs(&count) != 0 || count <= 0) return archs;
  archs.resize(static_cast<std::size_t>(count));
  if (m_api.nvrtcGetSupportedArchs(archs.data()) != 0) archs.clear();
  return archs;
}

std::vector<std::string> Nvrtc::options_for(const std::string& arch) { return {"--gpu-architecture=" + arch, "--std=c++17"}; }

util::Result<NvrtcOutput> Nvrtc::compile(const std::string& source, const std::string& name, const std::string& arch) const {
  if (!m_api.nvrtcCreateProgram || !m_api.nvrtcDestroyProgram || !m_api.nvrtcCompileProgram ||
      !m_api.nvrtcGetProgramLogSize || !m_api.nvrtcGetPTXSize || !m_api.nvrtcGetPTX)
    return util::make_error(util::ErrorKind::symbol_missing, path() + " lacks an entry point the compile needs");
  auto describe = [&](int rc) {
    const char* text = m_api.nvrtcGetErrorString ? m_api.nvrtcGetErrorString(rc) : nullptr;
    return std::string(text ? text : "NVRTC error") + " (" + std::to_string(rc) + ")";
  };
  NvrtcProgram program = nullptr;
  if (int rc = m_api.nvrtcCreateProgram(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr); rc != 0)
    return util::make_error(util::ErrorKind::driver_error, "nvrtcCreateProgram: " + describe(rc));
  util::Defer destroy([&] { m_api.nvrtcDestroyProgram(&program); });

  const std::vector<std::string> option_text = options_for(arch);
  std::vector<const char*> options;
  options.reserve(option_text.size());
  for (const auto& o : option_text) options.push_back(o.c_str());
  const std::string& arch_option = option_text.front();
  int compiled = m_api.nvrtcCompileProgram(program, static_cast<int>(options.size()), options.data());
  NvrtcOutput out;
  std::size_t log_size = 0;
  if (m_api.nvrtcGetProgramLogSize(program, &log_size) == 0 && log_size > 1 && m_api.nvrtcGetProgramLog) {
    out.log.resize(log_size);
    m_api.nvrtcGetProgramLog(program, out.log.data());
    out.log.resize(log_size - 1);
  }
  if (compiled != 0)
    return util::make_error(util::ErrorKind::driver_error,
                            "nvrtcCompileProgram " + arch_option + ": " + describe(compiled) + (out.log.empty() ? "" : "\n" + out.log));
  std::size_t size = 0;
  out.is_cubin = arch.starts_with("sm_");
  if (out.is_cubin) {
    if (!m_api.nvrtcGetCUBINSize || !m_api.nvrtcGetCUBIN)
      return util::make_error(util::ErrorKind::symbol_missing, path() + " lacks nvrtcGetCUBIN (NVRTC < 11.1)");
    if (int rc = m_api.nvrtcGetCUBINSize(program, &size); rc != 0)
      return util::make_error(util::ErrorKind::driver_error, "nvrtcGetCUBINSize: " + describe(rc));
    out.image.resize(size);
    if (int rc = m_api.nvrtcGetCUBIN(program, out.image.data()); rc != 0)
      return util::make_error(util::ErrorKind::driver_error, "nvrtcGetCUBIN: " + describe(rc));
  } else {
    if (int rc = m_api.nvrtcGetPTXSize(program, &size); rc != 0)
      return util::make_error(util::ErrorKind::driver_error, "nvrtcGetPTXSize: " + describe(rc));
    out.image.resize(size);
    if (int rc = m_api.nvrtcGetPTX(program, out.image.data()); rc != 0)
      return util::make_error(util::ErrorKind::driver_error, "nvrtcGetPTX: " + describe(rc));
  }
  return out;
}

} // namespace gpuapi
