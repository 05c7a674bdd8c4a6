// The te_selector check: TE's own C library answers which FusedAttention sub-backend it would
// use for the workload on this GPU and cuDNN (nvte_get_fused_attn_backend, bound per TE
// release in gpuapi/te_attention.hpp). The cuDNN and NVRTC copies TE would load are loaded
// first, by path, so that TE's DT_NEEDED entries resolve to them.
#include "selftest/checks.hpp"
#include "selftest/cuda_session.hpp"

#include "gpuapi/cudnn.hpp"
#include "gpuapi/nvrtc.hpp"
#include "gpuapi/te_attention.hpp"
#include "model/version.hpp"

namespace selftest {

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
  std::vector<util::DlLibrary> keep;
  for (const char* key : {"cudnn_path", "nvrtc_path"}) {
    if (auto path = text(key); !path.empty()) {
      if (auto lib = util::DlLibrary::open(path)) keep.push_back(std::move(*lib));
    }
  }
  auto cudnn = text("cudnn_path").empty() ? util::Result<gpuapi::Cudnn>(util::make_error(util::ErrorKind::not_found, ""))
                                          : gpuapi::Cudnn::load(std::vector<std::string>{text("cudnn_path")});
  auto te = util::DlLibrary::open(text("library"));
  if (!te) return failed_result(te.error().message, "load");
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

  auto backend = gpuapi::te_get_fused_attn_backend(*te, major, minor, q);
  if (!backend) return failed_result(backend.error().message, "call");
  Json result = ok_result();
  result["library"] = te->loaded_path();
  result["te_version"] = text("te_version");
  result["backend"] = gpuapi::te_backend_name(*backend);
  if (cudnn && cudnn->api().cudnnGetVersion) result["cudnn_version"] = cudnn->api().cudnnGetVersion();
  return result;
}

} // namespace selftest
