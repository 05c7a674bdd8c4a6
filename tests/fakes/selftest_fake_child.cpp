// A stand-in for `nvte-doctor selftest-child`: the doctor's checks plus checks that misbehave
// the ways vendor libraries do (crash, hang, exit non-zero, print to stdout, leave a grandchild
// behind, write no result), for the runner's tests.
#include "selftest/checks.hpp"
#include "selftest/selftest.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace {

using selftest::Json;

Json ok(const Json& args, selftest::Progress&) { return Json{{"status", "ok"}, {"echo", args}}; }
Json noisy(const Json&, selftest::Progress&) {
  std::printf("NCCL INFO this goes to stdout and must not reach the result pipe\n");
  std::fflush(stdout);
  return Json{{"status", "ok"}};
}
} // namespace

// In the sanitizer build, AddressSanitizer would catch the SIGSEGV below and abort instead; a
// vendor library's crash reaches the runner as the signal itself, so this child's must too.
extern "C" const char* __asan_default_options() { return "handle_segv=0"; }

namespace {

Json crash(const Json&, selftest::Progress&) {
  std::raise(SIGSEGV);
  return Json{{"status", "ok"}};
}
Json hang(const Json&, selftest::Progress&) {
  for (;;) ::pause();
}
Json hang_with_grandchild(const Json&, selftest::Progress&) {
  if (::fork() == 0) {
    for (;;) ::pause();
  }
  for (;;) ::pause();
}
Json exit3(const Json&, selftest::Progress&) {
  std::fprintf(stderr, "fake: giving up\n");
  ::_exit(3);
}
Json no_result(const Json&, selftest::Progress&) { ::_exit(0); }
Json bad_status(const Json&, selftest::Progress&) { return Json{{"status", "maybe"}}; }
Json failed(const Json&, selftest::Progress&) { return Json{{"status", "failed"}, {"stage", "plan"}, {"error", "No valid execution plans built"}}; }

// Stands in for the real cudnn_sdpa_bwd (the later entry wins): args "fake" picks what the
// one child of forward + backward answers, in the real check's result shape.
Json cudnn_forward_and_backward(const Json& args, selftest::Progress& progress) {
  std::string fake = args.value("fake", "");
  Json forward{{"status", "ok"}, {"seconds", 0.25}, {"max_abs_err", 0.004}};
  if (fake == "both_ok") return Json{{"status", "ok"}, {"forward", forward}, {"max_abs_err_dq", 0.02}};
  if (fake == "backward_failed") {
    return Json{{"status", "failed"}, {"stage", "plan"}, {"error", "No valid execution plans built"}, {"forward", forward}};
  }
  if (fake == "forward_failed") return Json{{"status", "failed"}, {"stage", "numerics"}, {"error", "differs from the reference"}};
  if (fake == "crash") std::raise(SIGSEGV);
  // The forward done and streamed, then a hang in the backward's plan build.
  if (fake == "hang_in_backward_plan") {
    progress.begin("plan", "backward");
    progress.part("forward", forward);
    for (;;) ::pause();
  }
  return Json{{"status", "error"}, {"error", "unknown fake " + fake}};
}

// ok when the environment variable args "var" is set (to args "value" when given), else the
// failure two cuDNN copies in one process give: a fix under test, applied by the parent.
Json needs_env(const Json& args, selftest::Progress&) {
  const char* value = std::getenv(args.value("var", "").c_str());
  if (value && (!args.contains("value") || args["value"].get<std::string>() == value)) return Json{{"status", "ok"}};
  return Json{{"status", "failed"}, {"stage", "execute"}, {"error", "cuDNN Error: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"}};
}

// Goes through load and plan, then enters the phase args "phase" names and hangs there, or
// crashes there with "crash": true. Another thread's phase stays open beside it with "beside".
Json phases_then_hang(const Json& args, selftest::Progress& progress) {
  progress.begin("load", "cuDNN");
  progress.end("load", "cuDNN");
  progress.begin("plan", "forward");
  progress.end("plan", "forward");
  if (args.contains("beside")) progress.begin(args["beside"].get<std::string>());
  ::usleep(20000);
  progress.begin(args.value("phase", "reference"), "forward");
  if (args.value("crash", false)) std::raise(SIGSEGV);
  for (;;) ::pause();
}

// Stands in for the real cuda check when args.nccl.fake says how it goes wrong, or with
// $FAKE_DRIVER_FAILS set (the parent builds the args itself) as a driver whose cuInit fails;
// else the real one.
Json cuda(const Json& args, selftest::Progress& progress) {
  if (std::getenv("FAKE_DRIVER_FAILS")) {
    progress.part("driver", Json{{"status", "failed"}, {"error", "cuInit failed: CUDA_ERROR_UNKNOWN (fake)"}});
    progress.part("nvrtc", Json{{"status", "skipped"}, {"error", "no CUDA context (fake)"}});
    return Json{{"status", "skipped"}, {"error", "no CUDA context (fake)"}};
  }
  std::string fake = args.contains("nccl") ? args["nccl"].value("fake", "") : "";
  if (fake.empty()) return selftest::check_cuda(args, progress);
  // Parts as the real child streams them, then a crash.
  ::usleep(100000);
  progress.part("driver", Json{{"status", "ok"}, {"gpu_count", 1}});
  progress.begin("compile");
  if (fake == "crash_before_nvrtc") std::raise(SIGSEGV);
  progress.end("compile");
  progress.part("nvrtc", Json{{"status", "ok"}, {"cuda_major", 13}});
  progress.begin("comm");
  std::raise(SIGSEGV);
  return Json{{"status", "ok"}};
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 4 || std::string_view(argv[1]) != "selftest-child") return 2;
  std::vector<selftest::CheckEntry> checks(selftest::builtin_checks().begin(), selftest::builtin_checks().end());
  for (auto entry : {selftest::CheckEntry{"ok", ok},
                     {"noisy", noisy},
                     {"crash", crash},
                     {"hang", hang},
                     {"hang_with_grandchild", hang_with_grandchild},
                     {"exit3", exit3},
                     {"no_result", no_result},
                     {"bad_status", bad_status},
                     {"failed", failed},
                     {"cudnn_sdpa_bwd", cudnn_forward_and_backward},
                     {"phases_then_hang", phases_then_hang},
                     {"cuda", cuda},
                     {"needs_env", needs_env}})
    checks.push_back(entry);
  return selftest::child_main(argv[2], argv[3], checks);
}
