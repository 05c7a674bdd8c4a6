#!/usr/bin/env bash
# Executions per CPU second of fuzz targets, with the corpus loading apart: libFuzzer first runs
# every seed and grown input once (the "INITED" line), and in a short campaign slot that can be
# most of the CPU time. For each TARGET this runs the fuzzer of build-fuzz/ twice on a scratch copy
# of its corpus (so the campaign's corpus and totals stay as they are): once with -runs=0 (loading
# only), once for SECONDS of wall-clock time, and prints per target: the inputs loaded, the CPU
# seconds of loading, the executions and CPU seconds of the long run, and the executions per CPU
# second after loading ((executions - loaded) / (CPU - loading CPU)), the number to plan with.
#
#   scripts/fuzz-rate.sh [-t SECONDS] [-b DIR] TARGET...      (default 60 s, build-fuzz)
#
# Run it niced beside other work: CPU seconds, not the wall clock, are what it compares.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/fuzz-seeds.sh"
seconds=60
build=$root/build-fuzz
while getopts "t:b:" opt; do
  case $opt in
    t) seconds=$OPTARG ;;
    b) build=$(cd "$OPTARG" && pwd) || exit 2 ;;
    *) sed -n 10p "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
(($#)) || { sed -n 10p "$0" >&2; exit 2; }
export NVTE_FUZZ_RULES_DIR=${NVTE_FUZZ_RULES_DIR:-$root/rules}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# run TARGET LOG ARGS...: the fuzzer on the scratch corpus; prints its CPU seconds (user + system).
run() {
  local t=$1 log=$2
  shift 2
  (
    ASAN_OPTIONS=$(fuzz_asan_options) UBSAN_OPTIONS=halt_on_error=1 "$build/tests/fuzz/fuzz_$t" "$@" \
      -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$scratch/" \
      "$scratch/corpus" "${seeds[@]}" >"$log" 2>&1
    times >"$log.times"
  )
  awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); n += p[1] * 60 + p[2] } printf "%.2f", n }' "$log.times"
}
execs_of() { awk '/^stat::number_of_executed_units:/ { n = $2 } END { print n + 0 }' "$1"; }

printf '| target | inputs loaded | loading CPU s | executions | CPU s | exec per CPU s, all | exec per CPU s after loading |\n'
printf '|---|---|---|---|---|---|---|\n'
for t in "$@"; do
  [[ -x $build/tests/fuzz/fuzz_$t ]] || { echo "fuzz-rate: no $build/tests/fuzz/fuzz_$t" >&2; exit 2; }
  mapfile -t seeds < <(fuzz_seeds "$root" "$t")
  rm -rf "$scratch/corpus" && mkdir -p "$scratch/corpus"
  [[ -d $build/corpus/$t ]] && cp -r "$build/corpus/$t/." "$scratch/corpus/"
  load_cpu=$(run "$t" "$scratch/load.log" -runs=0)
  loaded=$(execs_of "$scratch/load.log")
  cpu=$(run "$t" "$scratch/run.log" -max_total_time="$seconds")
  execs=$(execs_of "$scratch/run.log")
  grep -q 'ERROR\|runtime error' "$scratch/run.log" && echo "fuzz-rate: fuzz_$t reported an error: $(grep -m1 'ERROR\|runtime error' "$scratch/run.log")" >&2
  awk -v t="$t" -v l="$loaded" -v lc="$load_cpu" -v e="$execs" -v c="$cpu" 'BEGIN {
    all = c > 0 ? sprintf("%.0f", e / c) : "?"
    after = (c - lc > 0.5 && e > l) ? sprintf("%.0f", (e - l) / (c - lc)) : "?"
    printf "| `%s` | %d | %.1f | %d | %.1f | %s | %s |\n", t, l, lc, e, c, all, after }'
done
