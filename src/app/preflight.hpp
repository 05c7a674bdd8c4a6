// Preflight: a job's container image checked against a node before the job starts. The image's
// tree (--root) gives the userspace, the node (--node-facts FILE, or --node-root DIR probed live)
// gives the GPUs, the driver and libcuda; model/fact_origin.hpp says which fact is whose.
#pragma once

#include "app/options.hpp"
#include "model/facts.hpp"

#include <functional>

namespace app {

// The combined facts, with preflight.* saying what was checked against what. overlap as in
// load_facts. util::Fatal on conflicting options, an unreadable node file or image config.
model::Facts load_preflight_facts(const Options& options, const std::function<void()>& overlap);

} // namespace app
