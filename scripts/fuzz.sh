#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz. Builds them with clang into build-fuzz/ (-DNVTE_FUZZ=ON:
# ASan + UBSan + coverage), then runs each named target (default: all) for SECONDS (default 180)
# on a working copy of its seed corpus. New inputs stay in build-fuzz/corpus/<target>/; crashes,
# leaks and timeouts land in build-fuzz/artifacts/<target>/ — copy a reproducer into
# tests/fuzz/corpus/<target>/ once it is fixed, and the ordinary ctest replay keeps it fixed.
# Usage: scripts/fuzz.sh [-t SECONDS | --build] [target...]   (targets: the fuzz_<name> files,
# without prefix; --build only builds them, e.g. for scripts/fuzz-campaign.sh or fuzz-carry.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fuzz-seeds.sh
seconds=180
build_only=0
if [[ ${1:-} == -t ]]; then seconds=$2; shift 2; fi
if [[ ${1:-} == --build ]]; then build_only=1; shift; fi
targets=("$@")
if ((${#targets[@]} == 0)); then mapfile -t targets < <(fuzz_targets .); fi
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVTE_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"${JOBS:-$(nproc)}" --target "${targets[@]/#/fuzz_}"
((build_only)) && exit 0
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/artifacts/$t"
  mapfile -t seeds < <(fuzz_seeds . "$t")
  echo "== fuzz_$t for ${seconds}s"
  # detect_leaks=0: the YAML and JSON libraries keep process-lifetime caches; leaks are checked
  # by scripts/sanitize.sh on the test suite instead.
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 "build-fuzz/tests/fuzz/fuzz_$t" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="build-fuzz/artifacts/$t/" "build-fuzz/corpus/$t" "${seeds[@]}" 2>&1 |
    tee "build-fuzz/artifacts/$t/log.txt" | grep -E '^(#[0-9]+ +(DONE|pulse)|stat::|==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written)' || true
  # The numbers docs/reliability.md records: coverage (libFuzzer's cov:, instrumented edges) with
  # the seeds only and at the end, and where in the run the last new edge was found (near 100 %:
  # coverage was still growing when the time ran out; no plateau yet).
  awk -v t="$t" '/INITED cov:/ { for (i = 1; i <= NF; i++) if ($i == "cov:") start = $(i + 1) }
    /^#[0-9]+/ { n = substr($1, 2) + 0; for (i = 1; i <= NF; i++) if ($i == "cov:") c = $(i + 1) + 0
                 if (c > cov) { cov = c; last = n }; total = n }
    /number_of_executed_units/ { total = $2 }
    END { if (total) printf "== fuzz_%s: %d executions, coverage %s -> %d, last new edge at %.0f%% of the run\n", t, total, start, cov, 100 * last / total }' \
    "build-fuzz/artifacts/$t/log.txt"
done
