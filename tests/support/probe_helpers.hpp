// Helpers the probe tests (probe_libs_tests) share: one definition for all of them. A unity build
// (-DNVTE_UNITY_BUILD, cmake/Settings.cmake) compiles that executable's files as one translation
// unit, where a helper each file defined for itself would be defined twice
// (tests/architecture/check_unity.py).
#pragma once

#include "model/facts.hpp"
#include "model/finding.hpp"
#include "probe/library_version.hpp"
#include "probe/node_probes.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace test_support {

// A string fact, or "<absent>".
inline std::string str(const model::Facts& f, std::string_view name) { return f.get_string(name).value_or("<absent>"); }

// The site-packages directories of the fixture nodes' Python environments.
inline const std::string k_a100_site = "/opt/venv/lib/python3.10/site-packages";
inline const std::string k_h100_site = "/opt/torch/.venv/lib/python3.12/site-packages";

inline const probe::LibrarySpec& spec(std::string_view key) { return *probe::find_library_spec(key); }

// The facts of the Python and the libraries probes of a host.
inline model::Facts probe_all(const probe::Host& host) {
  model::Facts facts;
  probe::run_python_probe(host, facts);
  probe::run_libraries_probe(host, facts);
  return facts;
}

// The finding of that id, or nullptr.
inline const model::Finding* find(const std::vector<model::Finding>& findings, const std::string& id) {
  auto it = std::find_if(findings.begin(), findings.end(), [&](const model::Finding& f) { return f.id == id; });
  return it == findings.end() ? nullptr : &*it;
}

} // namespace test_support
