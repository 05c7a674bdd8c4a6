#include "model/selftest_summary.hpp"

namespace model {

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
    if (!c.result.is_null()) entry["result"] = c.result;
    checks.push_back(std::move(entry));
    (c.status == "ok" ? ok : c.status == "skipped" ? skipped : failed)++;
  }
  // GPU checks: all but NVRTC's compile and the Python tier; "ran" when not skipped.
  int gpu_checks = 0, gpu_checks_ran = 0;
  for (const auto& c : summary.checks) {
    if (c.check == "nvrtc" || c.check == "python") continue;
    ++gpu_checks;
    if (c.status != "skipped") ++gpu_checks_ran;
  }
  return Json{{"checks", checks},
              {"summary", Json{{"ok", ok}, {"failed", failed}, {"skipped", skipped}, {"gpu_checks", gpu_checks},
                               {"gpu_checks_ran", gpu_checks_ran}}}};
}

} // namespace model
