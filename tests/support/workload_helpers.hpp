// Helpers the workload importer tests (workload_tests) share: one definition for all of them. A
// unity build (-DNVTE_UNITY_BUILD, cmake/Settings.cmake) compiles that executable's files as one
// translation unit, where a helper each file defined for itself would be defined twice
// (tests/architecture/check_unity.py).
#pragma once

#include "model/workload.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace test_support {

// tests/fixtures, or NVTE_TEST_FIXTURES (ctest sets it).
inline std::filesystem::path fixtures() {
  const char* dir = std::getenv("NVTE_TEST_FIXTURES");
  return dir ? std::filesystem::path(dir) : std::filesystem::path("tests/fixtures");
}

// Whether the importer assumed that parameter (the source did not say).
inline bool assumed(const model::Workload& w, std::string_view key) {
  return std::find(w.assumed.begin(), w.assumed.end(), key) != w.assumed.end();
}

// Whether one of the workload's notes has those words.
inline bool mentions(const model::Workload& w, std::string_view words) {
  return std::any_of(w.notes.begin(), w.notes.end(), [&](const std::string& n) { return n.find(words) != std::string::npos; });
}

// A parameter's value as an integer, as text.
inline std::int64_t i(const model::Workload& w, std::string_view key) { return w.get(key)->as_int(); }
inline std::string s(const model::Workload& w, std::string_view key) { return w.get(key)->to_string(); }

} // namespace test_support
