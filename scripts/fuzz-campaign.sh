#!/usr/bin/env bash
# A fuzz campaign over every target of tests/fuzz at once: runs the libFuzzer binaries that
# scripts/fuzz.sh builds (build-fuzz/, clang, ASan + UBSan) in parallel on JOBS cores until each
# target has reached EXECS executions in total over all campaigns of that build directory, or the
# time limit is spent. Each target resumes from the corpus the earlier runs grew
# (DIR/corpus/<target>/, seeded from the repository as scripts/fuzz.sh does); crashes, leaks and
# timeouts land in DIR/artifacts/<target>/. Nothing is built here, so a build directory carried to
# another machine runs as it is (scripts/fuzz-carry.sh packs one).
#
#   scripts/fuzz-campaign.sh [-j JOBS] [-n EXECS] [-t SECONDS] [-b DIR] [-o SUMMARY_DIR] [target...]
#
#   -j JOBS      fuzzers running at once (default: the number of cores)
#   -n EXECS     executions each target is to reach in total (default 10000000); a target that
#                reached it already is left out
#   -t SECONDS   wall-clock limit of the whole campaign (default 3600). With fewer jobs than
#                targets the targets run in rounds, and each gets an equal share of the time
#   -b DIR       the fuzz build: DIR/tests/fuzz/fuzz_<target> (default build-fuzz)
#   -o DIR       where summary.md and the run's logs go (default DIR/campaigns/<UTC time>)
#
# summary.md holds one row per target: executions this run, exec/s, CPU seconds and executions per
# CPU second, the total over all campaigns (kept in DIR/fuzz-totals.tsv), the corpus at the end
# (units/size, as libFuzzer counts it), and the crash/leak/timeout artifacts this run
# wrote (also copied to SUMMARY_DIR/artifacts/). Exit 0 when no target wrote an artifact, 1 when
# one did, 2 on bad usage. NVTE_FUZZ_RULES_DIR is set to the repository's rules/ for the targets
# that load the shipped rules, so a carried binary does not depend on the path it was built at.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/fuzz-seeds.sh"
jobs=$(nproc)
goal=10000000
limit=3600
build=$root/build-fuzz
summary_dir=""
while getopts "j:n:t:b:o:" opt; do
  case $opt in
    j) jobs=$OPTARG ;;
    n) goal=$OPTARG ;;
    t) limit=$OPTARG ;;
    b) build=$(cd "$OPTARG" && pwd) || exit 2 ;;
    o) summary_dir=$OPTARG ;;
    *) sed -n '10,18p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
targets=("$@")
((${#targets[@]})) || mapfile -t targets < <(fuzz_targets "$root")
summary_dir=${summary_dir:-$build/campaigns/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$summary_dir/logs" "$summary_dir/artifacts"
summary_dir=$(cd "$summary_dir" && pwd)
totals=$build/fuzz-totals.tsv
touch "$totals"
total_of() { awk -v t="$1" '$1 == t { n = $2 } END { print n + 0 }' "$totals"; }

todo=()
for t in "${targets[@]}"; do
  [[ -x $build/tests/fuzz/fuzz_$t ]] || { echo "fuzz-campaign: no $build/tests/fuzz/fuzz_$t (build it with scripts/fuzz.sh --build $t)" >&2; exit 2; }
  if (($(total_of "$t") >= goal)); then echo "== fuzz_$t: $(total_of "$t") executions already, goal $goal reached"; continue; fi
  todo+=("$t")
done
rounds=$(((${#todo[@]} + jobs - 1) / jobs))
((rounds > 0)) || rounds=1
slice=$((limit / rounds))
export NVTE_FUZZ_RULES_DIR=${NVTE_FUZZ_RULES_DIR:-$root/rules}
start=$(date +%s)
echo "fuzz-campaign: ${#todo[@]} targets on $jobs jobs, $slice s each at most, goal $goal executions each, in $build"

one() { # one TARGET: runs it for its share, and writes its row to logs/TARGET.row
  local t=$1 before remaining seeds log before_artifacts
  before=$(total_of "$t")
  remaining=$((goal - before))
  mkdir -p "$build/corpus/$t" "$build/artifacts/$t"
  mapfile -t seeds < <(fuzz_seeds "$root" "$t")
  log=$summary_dir/logs/$t.log
  before_artifacts=$(ls "$build/artifacts/$t" | grep -cvE '^log\.txt$')
  # detect_leaks=0 as in scripts/fuzz.sh: the YAML and JSON libraries keep process-lifetime caches.
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$build/tests/fuzz/fuzz_$t" -runs="$remaining" -max_total_time="$slice" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/artifacts/$t/" \
    "$build/corpus/$t" "${seeds[@]}" >"$log" 2>&1
  local rc=$?
  # CPU seconds of the fuzzer (bash's `times`: this shell's children), so that a run on a loaded
  # machine still tells what a core would do: executions per CPU second.
  local cpu
  times >"$log.times" # not in $(...): a subshell starts with no children's time
  cpu=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); n += p[1] * 60 + p[2] } printf "%.1f", n }' "$log.times")
  local execs rate corpus new_artifacts
  execs=$(awk '/^stat::number_of_executed_units:/ { n = $2 } /^#[0-9]+/ { if (!n) last = substr($1, 2) } END { print n ? n : last + 0 }' "$log")
  rate=$(awk '/^stat::average_exec_per_sec:/ { print $2 }' "$log")
  # The corpus libFuzzer held at the end (seeds and grown inputs, units/size), from its last status
  # line; the grown part stays in DIR/corpus/TARGET for the next campaign.
  corpus=$(awk '/ corp: / { for (i = 1; i <= NF; i++) if ($i == "corp:") c = $(i + 1) } END { print c ? c : "?" }' "$log")
  # Artifacts this run wrote: libFuzzer names them crash-, leak-, timeout-, oom-, slow-unit-<sha1>.
  new_artifacts=$(($(ls "$build/artifacts/$t" | grep -cvE '^log\.txt$') - before_artifacts))
  grep -oE "Test unit written to [^ ]+" "$log" | awk '{print $5}' | while read -r a; do cp "$a" "$summary_dir/artifacts/$t-$(basename "$a")"; done
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$execs" "${rate:-?}" "$cpu" "$corpus" "$new_artifacts" "$rc" >"$summary_dir/logs/$t.row"
  echo "== fuzz_$t: $execs executions, ${rate:-?} exec/s, $cpu CPU s, exit $rc, $new_artifacts new artifact(s)"
}
export -f one total_of fuzz_seeds
export build goal slice summary_dir totals root
printf '%s\n' "${todo[@]}" | xargs -P "$jobs" -I{} bash -c 'one "$@"' _ {}

# Totals, then the table.
found=0
{
  echo "# Fuzz campaign $(date -u -d "@$start" +%FT%TZ), $(($(date +%s) - start)) s on $jobs jobs ($(nproc) cores, $(hostname))"
  echo
  echo "Goal $goal executions per target in total; $slice s per target at most; build $build."
  echo
  echo "| target | executions this run | exec/s (wall) | CPU s | exec per CPU s | total, all campaigns | corpus (units/size) | new artifacts | exit |"
  echo "|---|---|---|---|---|---|---|---|---|"
} >"$summary_dir/summary.md"
for t in "${todo[@]}"; do
  row=$summary_dir/logs/$t.row
  [[ -f $row ]] || { echo "| \`$t\` | did not run | | | | | | | |" >>"$summary_dir/summary.md"; continue; }
  IFS=$'\t' read -r _ execs rate cpu corpus artifacts rc <"$row"
  total=$(($(total_of "$t") + execs))
  awk -v t="$t" -v n="$total" 'BEGIN { OFS = "\t" } $1 != t { print } END { print t, n }' "$totals" >"$totals.new" && mv "$totals.new" "$totals"
  ((artifacts > 0)) && found=1
  per_cpu=$(awk -v e="$execs" -v c="$cpu" 'BEGIN { if (c > 0) printf "%.0f", e / c; else print "?" }')
  printf '| `%s` | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$t" "$execs" "$rate" "$cpu" "$per_cpu" "$total" "$corpus" "$artifacts" "$rc" >>"$summary_dir/summary.md"
done
cat "$summary_dir/summary.md"
echo "fuzz-campaign: summary in $summary_dir/summary.md"
exit "$found"
