#include "model/selftest_summary.hpp"

#include <algorithm>
#include <cctype>

namespace model {

namespace {

bool contains_nocase(std::string_view text, std::string_view what) {
  auto it = std::search(text.begin(), text.end(), what.begin(), what.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != text.end();
}

} // namespace

std::string classify_selftest_failure(std::string_view status, std::string_view error, bool timed_out, std::string_view stage) {
  if (status != "failed" && status != "error") return {};
  // Loading first: a sub-library that fails to load surfaces as a plan or execute error too.
  for (std::string_view sign : {"SUBLIBRARY_LOADING_FAILED", "sublibrary", "cuDNN version incompatibility", "libcudnn_engines",
                                "libcudnn_graph", "libcudnn_ops", "libcudnn_adv"})
    if (contains_nocase(error, sign)) return "sublibrary_load";
  if (timed_out || contains_nocase(error, "timed out after")) return "timeout";
  if (contains_nocase(error, "killed by signal")) return "crash";
  if (stage == "plan" || stage == "graph" || stage == "support" || contains_nocase(error, "No valid execution plan") ||
      contains_nocase(error, "execution plans built") || contains_nocase(error, "NOT_SUPPORTED"))
    return "plan_build";
  if (stage == "numerics" || contains_nocase(error, "differs from the fp32") || contains_nocase(error, "max_abs_err")) return "numerics";
  return "other";
}

bool is_python_tier_check(std::string_view check) { return check == "python" || check == "python_te"; }

nlohmann::ordered_json to_json(const SelftestSummary& summary) {
  using Json = nlohmann::ordered_json;
  Json checks = Json::array();
  int ok = 0, failed = 0, skipped = 0;
  for (const auto& c : summary.checks) {
    Json entry{{"check", c.check}, {"label", c.label}, {"status", c.status}, {"seconds", c.seconds}, {"started", c.started}};
    if (!c.error.empty()) entry["error"] = c.error;
    if (c.status == "error") {
      entry["timed_out"] = c.timed_out;
      if (!c.phase.empty()) entry["phase"] = c.phase;
    }
    if (!c.phases.empty()) {
      Json phases = Json::array();
      for (const auto& p : c.phases) {
        Json span{{"phase", p.phase}, {"start", p.start}, {"seconds", p.seconds}};
        if (!p.what.empty()) span["what"] = p.what;
        if (p.open) span["open"] = true;
        phases.push_back(std::move(span));
      }
      entry["phases"] = std::move(phases);
    }
    if (c.workload >= 0) entry["workload"] = c.workload;
    if (!c.backend.empty()) entry["backend"] = c.backend;
    if (!c.failure_class.empty()) entry["class"] = c.failure_class;
    if (!c.explained_by.empty()) entry["explained_by"] = c.explained_by;
    if (c.fix) {
      Json fix{{"kind", c.fix->kind}, {"command", c.fix->command}, {"description", c.fix->description}};
      if (!c.fix_verified.empty()) fix["verified"] = c.fix_verified;
      if (!c.fix_note.empty()) fix["note"] = c.fix_note;
      entry["fix"] = std::move(fix);
    }
    if (!c.result.is_null()) entry["result"] = c.result;
    checks.push_back(std::move(entry));
    (c.status == "ok" ? ok : c.status == "skipped" ? skipped : failed)++;
  }
  // GPU checks: all but NVRTC's compile and the Python tier; "ran" when not skipped.
  int gpu_checks = 0, gpu_checks_ran = 0;
  for (const auto& c : summary.checks) {
    if (c.check == "nvrtc" || is_python_tier_check(c.check)) continue;
    ++gpu_checks;
    if (c.status != "skipped") ++gpu_checks_ran;
  }
  return Json{{"checks", checks},
              {"summary", Json{{"ok", ok}, {"failed", failed}, {"skipped", skipped}, {"gpu_checks", gpu_checks},
                               {"gpu_checks_ran", gpu_checks_ran}}}};
}

} // namespace model
