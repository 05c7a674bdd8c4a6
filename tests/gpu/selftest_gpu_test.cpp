// GPU test (ctest label "gpu"): the self-test's checks on a real GPU, through the same child
// protocol as `nvte-doctor selftest` (this binary is its own child). Exits 77 (skipped) when
// there is no GPU, 1 when a check fails, 0 otherwise. Cases: bf16/fp16, causal/no mask, head
// dims 64 and 128, GQA, bshd / sbhd / interleaved sbh3d, forward and backward; NVRTC compile +
// launch; NCCL.
#include "selftest/selftest.hpp"

#include <cstdio>
#include <string_view>

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "selftest-child")
    return argc == 4 ? selftest::child_main(argv[2], argv[3], selftest::builtin_checks()) : 2;
  using selftest::Json;
  selftest::RunnerOptions runner;
  runner.timeout = std::chrono::milliseconds(300000);
  auto driver = selftest::run_check(runner, "driver", Json::object());
  std::printf("driver: %s %s\n", driver.status.c_str(), driver.error.c_str());
  if (driver.status == "skipped") return 77;
  int failures = driver.status == "ok" ? 0 : 1;
  auto report = [&](const selftest::CheckOutcome& o) {
    std::printf("%-12s %-8s %6.2f s  %s  %s\n", o.check.c_str(), o.status.c_str(), o.seconds, o.label.c_str(),
                o.result.contains("max_abs_err") ? ("max_abs_err=" + std::to_string(o.result["max_abs_err"].get<double>())).c_str() : "");
    if (!o.error.empty()) std::printf("    %s\n", o.error.c_str());
    if (o.status != "ok") ++failures;
  };
  report(selftest::run_check(runner, "nvrtc", Json::object(), "NVRTC"));
  const char* cudnn = std::getenv("NVTE_TEST_CUDNN_PATH");
  for (const char* dtype : {"bf16", "fp16"}) {
    for (bool causal : {false, true}) {
      for (auto [layout, heads, kv_heads, dim] : {std::tuple{"bshd_bshd_bshd", 16, 4, 128}, {"sbhd_sbhd_sbhd", 16, 16, 64},
                                                   {"sbh3d", 16, 16, 128}}) {
        Json args{{"dtype", dtype}, {"layout", layout}, {"batch", 2}, {"heads", heads}, {"kv_heads", kv_heads},
                  {"seq_q", 256}, {"seq_kv", 256}, {"dim_qk", dim}, {"dim_v", dim}, {"causal", causal}};
        if (cudnn) args["path"] = cudnn;
        std::string label = std::string(dtype) + " " + layout + " d" + std::to_string(dim) + " h" + std::to_string(heads) + "/" +
                            std::to_string(kv_heads) + (causal ? " causal" : "");
        report(selftest::run_check(runner, "cudnn_sdpa", args, label));
        report(selftest::run_check(runner, "cudnn_sdpa_bwd", args, label));
      }
    }
  }
  report(selftest::run_check(runner, "nccl", Json{{"bytes", 1u << 26}}, "NCCL"));
  return failures ? 1 : 0;
}
