// Placeholders for the python and libraries probes, which another branch implements in
// python_probe.cpp and libraries_probe.cpp. DELETE THIS FILE AT MERGE.
#include "probe/node_probes.hpp"

namespace probe {

void run_python_probe(const Host&, model::Facts& facts) {
  record_status(facts, "python", "skipped", "not part of this build");
}

void run_libraries_probe(const Host&, model::Facts& facts) {
  record_status(facts, "libraries", "skipped", "not part of this build");
}

} // namespace probe
