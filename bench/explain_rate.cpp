// nvte-bench-explain-rate: how many workload explains per second one core does with the full
// rules database, in-process (no process start, no probe, no rendering): the cost of
// `explain --sweep` cells and of a check's workloads once the rules are loaded.
//
// The node facts come from a snapshot (--facts, e.g. tests/fixtures/snapshots/h100-node.json) so
// the number is the same on any machine; the workloads are Hugging Face configs (--hf-config,
// repeatable), completed once. The loop explains the workloads round-robin for --seconds, cut
// into --windows windows (default 5), and prints one JSON line for bench/measure.cpp's report:
// {"name":"explain_rate","value":N,...} with N the best window's rate, the median and every
// window beside it.
// The harness keeps the last explanation's selected backend in the line, so the work cannot be
// optimised away and a broken rules database shows up as a failure rather than a fast loop.
// The rate is per second of the thread's CPU time (one core's rate even on a busy machine); the
// wall-clock rate is reported beside it.
#include "rules/rules.hpp"
#include "workload/hf_config.hpp"
#include "workload/workload_io.hpp"

#include "util/file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace {

constexpr const char* k_usage =
    "usage: nvte-bench-explain-rate --rules DIR [--rules DIR]... --facts SNAPSHOT.json --hf-config FILE [--hf-config FILE]...\n"
    "                               [--seconds S] [--windows N] [--name NAME]\n"
    "       nvte-bench-explain-rate --build-type    (prints the CMake build type it was compiled as)";

#ifndef NVTE_BUILD_TYPE
#define NVTE_BUILD_TYPE "unknown"
#endif

int fail(const std::string& message) {
  std::fprintf(stderr, "nvte-bench-explain-rate: %s\n", message.c_str());
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> rules_dirs, hf_configs;
  std::filesystem::path facts_file;
  double seconds = 2.0;
  int rounds = 5;
  std::string name = "explain_rate";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    // The CMake build type these tools (and the nvte-doctor built with them) were compiled as.
    if (a == "--build-type") {
      std::cout << NVTE_BUILD_TYPE << std::endl;
      return 0;
    }
    if (i + 1 >= argc) return fail("unknown or incomplete option " + a + "\n" + k_usage);
    if (a == "--rules") rules_dirs.emplace_back(argv[++i]);
    else if (a == "--hf-config") hf_configs.emplace_back(argv[++i]);
    else if (a == "--facts") facts_file = argv[++i];
    else if (a == "--seconds") seconds = std::atof(argv[++i]);
    else if (a == "--windows") rounds = std::atoi(argv[++i]);
    else if (a == "--name") name = argv[++i];
    else return fail("unknown option " + a + "\n" + k_usage);
  }
  if (rules_dirs.empty() || hf_configs.empty() || facts_file.empty() || seconds <= 0 || rounds <= 0) return fail(k_usage);

  auto loaded = rules::RuleSet::load(rules_dirs);
  if (!loaded.rules) return fail("the rules do not load:\n" + rules::render(loaded.diagnostics));
  const rules::RuleSet& ruleset = *loaded.rules;
  auto facts_text = util::read_file(facts_file, 64u << 20);
  if (!facts_text) return fail(facts_text.error().message);
  auto facts = model::Facts::from_json(*facts_text, facts_file.string());
  if (!facts) return fail(facts.error().message);
  facts->derive();

  std::vector<model::Workload> workloads;
  for (const auto& file : hf_configs) {
    auto imported = workload::load_hf_config(file);
    if (!imported) return fail(imported.error().message);
    for (auto& w : *imported) {
      if (auto done = workload::finish_workload(w); !done) return fail(done.error().message);
      workloads.push_back(std::move(w));
    }
  }

  using Clock = std::chrono::steady_clock;
  auto thread_cpu = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
  };
  // The run is cut into windows and the best window's rate is the value: on a shared VM (the
  // GPU node) neighbours and frequency changes moved one 3 s window's rate by a factor of 1.5
  // from run to run of the same binary; the least disturbed window is what the code can do. The
  // median window is reported beside it.
  std::size_t explains = 0;
  std::size_t with_backend = 0;
  double elapsed = 0, cpu = 0;
  std::vector<double> window_rates;
  for (int r = 0; r < rounds; ++r) {
    double cpu_start = thread_cpu();
    std::size_t window_explains = 0;
    auto start = Clock::now();
    auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds / rounds));
    Clock::time_point end;
    // Check the clock every full round of workloads: a round costs far less than a window.
    do {
      for (const auto& w : workloads) {
        model::Explanation e = rules::explain(ruleset, *facts, w);
        with_backend += e.selected.has_value();
        ++window_explains;
      }
      end = Clock::now();
    } while (end < deadline);
    double window_cpu = thread_cpu() - cpu_start;
    elapsed += std::chrono::duration<double>(end - start).count();
    cpu += window_cpu;
    explains += window_explains;
    window_rates.push_back(static_cast<double>(window_explains) / window_cpu);
  }
  std::vector<double> sorted = window_rates;
  std::sort(sorted.begin(), sorted.end());
  double best = sorted.back();
  double median = sorted[sorted.size() / 2];

  nlohmann::ordered_json selected = nlohmann::ordered_json::object();
  for (const auto& w : workloads) {
    auto e = rules::explain(ruleset, *facts, w);
    selected[w.name] = e.selected ? nlohmann::ordered_json(*e.selected) : nlohmann::ordered_json(nullptr);
  }
  nlohmann::ordered_json line{{"name", name},
                              // Per second of this thread's CPU time: one core's rate, also on a
                              // shared machine; the wall-clock rate is next to it.
                              {"value", best},
                              {"unit", "explains/s"},
                              {"build_type", NVTE_BUILD_TYPE},
                              {"median_value", median},
                              {"mean_value", static_cast<double>(explains) / cpu},
                              {"windows", window_rates},
                              {"wall_value", static_cast<double>(explains) / elapsed},
                              {"explains", explains},
                              {"seconds", elapsed},
                              {"cpu_seconds", cpu},
                              {"rules", ruleset.size()},
                              {"workloads", workloads.size()},
                              {"explains_with_a_backend", with_backend},
                              {"selected", selected}};
  std::cout << line.dump() << std::endl;
  return 0;
}
