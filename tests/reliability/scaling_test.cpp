// How check's cost grows with what fires. Audit 2026-11-25 item 12: with 1,000 trivial rules
// that all fire, check took 3.1 s, with 4,000 36 s, because every finding's fix search evaluated
// every node rule again for the same candidate changes. The node outcomes are now shared by the
// searches of one report (rules/fix_search.cpp, NodeOutcomeMemo); 5,000 firing rules must take
// less than 5 s (about 0.5 s on a shared 2-core machine).
#include "doctor_runner.hpp"
#include "util/file.hpp"

#include <gtest/gtest.h>

namespace fs = std::filesystem;
using reliability::run_doctor;
using reliability::TempDir;

TEST(Scaling, FiveThousandFiringRulesCheckInUnderFiveSeconds) {
  TempDir dir("scaling");
  std::string text = "rules:\n";
  for (int i = 0; i < 5000; ++i) {
    text += "  - id: r" + std::to_string(i) + "\n    title: t" + std::to_string(i) +
            "\n    severity: warning\n    when: \"has(driver.version)\"\n    message: m\n";
  }
  fs::path rules = fs::path(dir.path()) / "rules";
  fs::create_directories(rules);
  ASSERT_TRUE(util::write_file_atomic(rules / "many.yaml", text).ok());
  auto run = run_doctor({"check", "--facts", std::string(NVTE_TESTS_DIR) + "/fixtures/snapshots/h100-node.json", "--rules",
                         rules.string()},
                        {}, std::chrono::seconds(60));
  EXPECT_EQ(run.exit_code, 1) << reliability::context(run);
  EXPECT_NE(run.out.find("0 errors, 5000 warnings"), std::string::npos) << run.out.substr(run.out.size() > 300 ? run.out.size() - 300 : 0);
  EXPECT_LT(run.seconds, 5.0) << "check with 5,000 firing rules took " << run.seconds << " s";
}
