// The te_selector check: TE's own C library answers which FusedAttention sub-backend it would
// use for the workload on this GPU and cuDNN (nvte_get_fused_attn_backend, bound per TE
// release in gpuapi/te_attention.hpp).
//
// libtransformer_engine.so does not load on its own: TE's Python (transformer_engine/common/
// __init__.py) first loads cuDNN, NVRTC and cuRAND with ctypes.CDLL(..., RTLD_GLOBAL), and the
// core library's undefined symbols (nvrtcGetCUBINSize, ...) bind to those. The child does the
// same, in TE's order, with the copies the probe says TE picks; a bare dlopen of the core library
// fails with "undefined symbol" on every healthy installation (seen on the H100 with TE 2.15).
#include "selftest/checks.hpp"
#include "selftest/cuda_session.hpp"

#include "gpuapi/cudnn.hpp"
#include "gpuapi/nvrtc.hpp"
#include "gpuapi/te_attention.hpp"
#include "model/version.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <filesystem>

namespace selftest {

namespace {

// What TE's Python loads globally before its core library, in its order: cuDNN, NVRTC, cuRAND.
// cuRAND is not a probed fact; TE takes it from the CUDA directory it takes NVRTC from
// (CUDA_HOME), so the child looks beside NVRTC first and then asks the loader by SONAME.
std::vector<std::string> te_preloads(const std::string& cudnn, const std::string& nvrtc) {
  std::vector<std::string> out;
  if (!cudnn.empty()) out.push_back(cudnn);
  if (!nvrtc.empty()) out.push_back(nvrtc);
  std::string curand = "libcurand.so.10";
  if (!nvrtc.empty()) {
    std::error_code ec;
    std::vector<std::string> beside;
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(nvrtc).parent_path(), ec)) {
      auto name = entry.path().filename().string();
      if (name.rfind("libcurand.so.", 0) == 0) beside.push_back(entry.path().string());
    }
    std::sort(beside.begin(), beside.end());
    if (!beside.empty()) curand = beside.back();
  }
  out.push_back(curand);
  return out;
}

} // namespace

util::Result<LoadedTe> load_te_core(const std::string& library, const std::string& cudnn_path, const std::string& nvrtc_path) {
  LoadedTe te;
  std::vector<std::string> not_preloaded;
  for (const auto& path : te_preloads(cudnn_path, nvrtc_path)) {
    if (auto lib = util::DlLibrary::open(path, util::LinkNamespace::global)) {
      te.preloaded.push_back(lib->loaded_path());
      te.keep.push_back(std::move(*lib));
    } else {
      not_preloaded.push_back(lib.error().message);
    }
  }
  auto core = util::DlLibrary::open(library);
  if (!core) {
    std::string context = te.preloaded.empty() ? "nothing preloaded" : "after preloading " + util::join(te.preloaded, ", ");
    if (!not_preloaded.empty()) context += "; not loaded: " + util::join(not_preloaded, "; ");
    return util::Error{core.error().kind, core.error().message + " (" + context + ")"};
  }
  te.core = std::move(*core);
  return te;
}

Json check_te_selector(const Json& args, Progress& progress) {
  auto text = [&](const char* key) { return args.contains(key) && args[key].is_string() ? args[key].get<std::string>() : std::string(); };
  auto version = model::Version::parse(text("te_version"));
  if (!version) return failed_result("te_version: " + version.error().message, "load");
  int major = static_cast<int>(version->major()), minor = static_cast<int>(version->minor());
  if (auto abi = gpuapi::te_selector_abi(major, minor); !abi) return skipped_result(abi.error().message);

  auto session = CudaSession::open(&progress);
  if (!session) {
    if (session.error().kind == util::ErrorKind::not_installed) return skipped_result(session.error().message);
    return failed_result(session.error().message, "init");
  }
  std::string error;
  if (!(*session)->make_current((*session)->gpus().front(), error)) return failed_result(error, "init");

  auto loading = progress.phase(phase::load, "TE");
  auto te = load_te_core(text("library"), text("cudnn_path"), text("nvrtc_path"));
  if (!te) return failed_result(te.error().message, "load");
  auto cudnn = text("cudnn_path").empty() ? util::Result<gpuapi::Cudnn>(util::make_error(util::ErrorKind::not_found, ""))
                                          : gpuapi::Cudnn::load(std::vector<std::string>{text("cudnn_path")});
  loading.end();

  gpuapi::TeFusedAttnQuery q;
  q.bf16 = text("dtype") != "fp16";
  auto integer = [&](const char* key, auto fallback) {
    return args.contains(key) && args[key].is_number_integer() ? args[key].get<decltype(fallback)>() : fallback;
  };
  q.qkv_layout = integer("te_layout", 9);
  q.attn_mask_type = integer("te_mask", 0);
  q.num_heads = integer("heads", std::size_t{16});
  q.num_gqa_groups = integer("kv_heads", q.num_heads);
  q.max_seqlen_q = integer("seq_q", std::size_t{128});
  q.max_seqlen_kv = integer("seq_kv", q.max_seqlen_q);
  q.head_dim_qk = integer("dim_qk", std::size_t{64});
  q.head_dim_v = integer("dim_v", q.head_dim_qk);
  q.window_left = integer("window_left", std::int64_t{-1});
  q.window_right = integer("window_right", std::int64_t{-1});
  q.is_training = !args.contains("is_training") || args["is_training"].get<bool>();
  q.deterministic = args.contains("deterministic") && args["deterministic"].get<bool>();
  if (args.contains("dropout") && args["dropout"].is_number()) q.dropout = args["dropout"].get<float>();

  auto backend = gpuapi::te_get_fused_attn_backend(te->core, major, minor, q);
  if (!backend) return failed_result(backend.error().message, "call");
  Json result = ok_result();
  result["library"] = te->core.loaded_path();
  result["preloaded"] = te->preloaded;
  result["te_version"] = text("te_version");
  result["backend"] = gpuapi::te_backend_name(*backend);
  if (cudnn && cudnn->api().cudnnGetVersion) result["cudnn_version"] = cudnn->api().cudnnGetVersion();
  return result;
}

} // namespace selftest
