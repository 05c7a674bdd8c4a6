// Test helper: validates a report JSON document against packaging/schema/report.schema.json with
// tests/validate_report.py (Debian's python3-jsonschema). Every test that produces a report JSON
// calls it; without python3-jsonschema the calling test is skipped, never silently passed.
#pragma once

#include "util/file.hpp"
#include "util/subprocess.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

namespace test_support {

struct SchemaCheck {
  bool available = true; // false: python3-jsonschema missing (skip)
  bool valid = false;
  std::string errors;
};

// schema: a file of packaging/schema/ (report.schema.json: check's report; explain.schema.json).
inline SchemaCheck check_report_schema(const std::string& json_text, const std::string& schema = "report.schema.json") {
  static int counter = 0;
  auto file = std::filesystem::temp_directory_path() /
              ("nvte-report-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".json");
  SchemaCheck check;
  if (!util::write_file_atomic(file, json_text)) {
    check.errors = "cannot write " + file.string();
    return check;
  }
  auto run = util::run_command({"/usr/bin/python3", std::string(NVTE_SOURCE_DIR) + "/tests/validate_report.py",
                                std::string(NVTE_SOURCE_DIR) + "/packaging/schema/" + schema, file.string()});
  std::filesystem::remove(file);
  if (!run) {
    check.errors = run.error().message;
    return check;
  }
  check.available = run->exit_code != 77;
  check.valid = run->succeeded();
  check.errors = run->err;
  return check;
}

} // namespace test_support

// Inside a TEST: skips when the validator is missing, fails with the schema errors otherwise.
#define EXPECT_VALID_REPORT_JSON(text) EXPECT_VALID_JSON_FOR(text, "report.schema.json")
// The same against another schema of packaging/schema/ (explain.schema.json).
#define EXPECT_VALID_JSON_FOR(text, schema)                                                        \
  do {                                                                                             \
    auto _check = test_support::check_report_schema(text, schema);                                 \
    if (!_check.available) {                                                                       \
      GTEST_SKIP() << "python3-jsonschema is not installed";                                       \
    }                                                                                              \
    EXPECT_TRUE(_check.valid) << _check.errors;                                                    \
  } while (false)
