#!/usr/bin/env bash
# A fuzz campaign over every target of tests/fuzz at once: runs the libFuzzer binaries that
# scripts/fuzz.sh builds (build-fuzz/, clang, ASan + UBSan) in parallel on JOBS cores until each
# target has reached EXECS executions in total over all campaigns of that build directory, or the
# time limit is spent. Each target resumes from the corpus the earlier runs grew
# (DIR/corpus/<target>/, seeded from the repository as scripts/fuzz.sh does); crashes, leaks and
# timeouts land in DIR/artifacts/<target>/. Nothing is built here, so a build directory carried to
# another machine runs as it is (scripts/fuzz-carry.sh packs one).
#
#   scripts/fuzz-campaign.sh [-j JOBS] [-a] [-n EXECS] [-t SECONDS] [-b DIR] [-o SUMMARY_DIR] [target...]
#
#   -j JOBS      fuzzer processes running at once (default: the number of cores)
#   -a           all at once: with more targets to run than JOBS, one process per target anyway
#                (a few more processes than cores beat rounds of half the time each)
#   -n EXECS     executions each target is to reach in total (default 10000000); a target that
#                reached it already is left out
#   -t SECONDS   wall-clock limit of the whole campaign (default 3600). With fewer jobs than
#                targets the targets run in rounds, and each gets an equal share of the time
#   -b DIR       the fuzz build: DIR/tests/fuzz/fuzz_<target> (default build-fuzz)
#   -o DIR       where summary.md and the run's logs go (default DIR/campaigns/<UTC time>)
#   -T FILE      the executions ledger (default tests/fuzz/totals.tsv of this checkout, which is
#                committed: the totals outlive build directories and machines; commit it after a
#                campaign, or copy back the one a campaign on another machine returned)
#
# Cores go where executions are missing: with more jobs than targets, the spare jobs become extra
# workers of the targets that cannot reach EXECS in the time on one core, one at a time to the
# target whose missing executions would take the longest per worker, judged by its executions per
# CPU second in the last campaign (kept in the totals). A target's workers are independent
# libFuzzer processes on the same corpus directory (each picks up what the others add, -reload),
# each with its share of the missing executions (-runs); the executions of all of them count.
#
# summary.md holds one row per target: workers, executions this run, exec/s, CPU seconds and
# executions per CPU second, the total over all campaigns, the corpus at the end (units/size, as
# libFuzzer counts it), and the crash/leak/timeout artifacts this run wrote (also copied to
# SUMMARY_DIR/artifacts/). The ledger (-T) keeps, per target, the executions of all campaigns and
# the last executions per CPU second: target<TAB>executions<TAB>exec per CPU s. Exit 0 when no target wrote an artifact, 1 when one did,
# 2 on bad usage. NVTE_FUZZ_RULES_DIR is set to the repository's rules/ for the targets that load
# the shipped rules, so a carried binary does not depend on the path it was built at.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/fuzz-seeds.sh"
jobs=$(nproc)
goal=10000000
limit=3600
build=$root/build-fuzz
summary_dir=""
all_at_once=0
totals=$root/tests/fuzz/totals.tsv
while getopts "j:an:t:b:o:T:" opt; do
  case $opt in
    j) jobs=$OPTARG ;;
    a) all_at_once=1 ;;
    n) goal=$OPTARG ;;
    t) limit=$OPTARG ;;
    b) build=$(cd "$OPTARG" && pwd) || exit 2 ;;
    o) summary_dir=$OPTARG ;;
    T) totals=$OPTARG ;;
    *) sed -n '10,23p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
((jobs >= 1)) || { echo "fuzz-campaign: -j needs at least 1" >&2; exit 2; }
targets=("$@")
((${#targets[@]})) || mapfile -t targets < <(fuzz_targets "$root")
summary_dir=${summary_dir:-$build/campaigns/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$summary_dir/logs" "$summary_dir/artifacts"
summary_dir=$(cd "$summary_dir" && pwd)
touch "$totals"
totals=$(cd "$(dirname "$totals")" && pwd)/$(basename "$totals")
total_of() { awk -v t="$1" '$1 == t { n = $2 } END { print n + 0 }' "$totals"; }
rate_of() { awk -v t="$1" '$1 == t && $3 > 0 { r = $3 } END { print r + 0 }' "$totals"; }

todo=()
for t in "${targets[@]}"; do
  [[ -x $build/tests/fuzz/fuzz_$t ]] || { echo "fuzz-campaign: no $build/tests/fuzz/fuzz_$t (build it with scripts/fuzz.sh --build $t)" >&2; exit 2; }
  if (($(total_of "$t") >= goal)); then echo "== fuzz_$t: $(total_of "$t") executions already, goal $goal reached"; continue; fi
  todo+=("$t")
done
((all_at_once && ${#todo[@]} > jobs)) && jobs=${#todo[@]}

# Workers per target. Each target gets one; while jobs are left, the next goes to the target whose
# missing executions take the longest per worker at its last rate (a target never measured counts
# at the slowest known rate), as long as that target cannot finish in the time with what it has.
plan=$(for t in "${todo[@]}"; do printf '%s %s %s\n' "$t" $((goal - $(total_of "$t"))) "$(rate_of "$t")"; done |
  awk -v jobs="$jobs" -v limit="$limit" '
    { name[NR] = $1; missing[NR] = $2; rate[NR] = $3; if ($3 > 0 && (slowest == 0 || $3 < slowest)) slowest = $3 }
    END {
      n = NR
      for (i = 1; i <= n; i++) { r = rate[i] > 0 ? rate[i] : (slowest > 0 ? slowest : 1); need[i] = missing[i] / r; workers[i] = 1 }
      for (spare = jobs - n; spare > 0; spare--) {
        best = 0
        for (i = 1; i <= n; i++) if (need[i] / workers[i] > limit && (best == 0 || need[i] / workers[i] > need[best] / workers[best])) best = i
        if (best == 0) break
        workers[best]++
      }
      for (i = 1; i <= n; i++) print name[i], workers[i]
    }')
tasks=$(awk '{ s += $2 } END { print s + 0 }' <<<"$plan")
rounds=$(((tasks + jobs - 1) / jobs))
((rounds > 0)) || rounds=1
slice=$((limit / rounds))
export NVTE_FUZZ_RULES_DIR=${NVTE_FUZZ_RULES_DIR:-$root/rules}
# One process per core: the doctor's own threads (fix searches, lookups) would only compete.
export NVTE_DOCTOR_THREADS=1
start=$(date +%s)
echo "fuzz-campaign: ${#todo[@]} targets, $tasks fuzzer processes on $jobs jobs, $slice s each at most, goal $goal executions each, in $build"
[[ -n $plan ]] && awk '$2 > 1 { printf "  %s: %d workers\n", $1, $2 }' <<<"$plan"

one() { # one TARGET WORKER WORKERS: runs one worker for its share, and writes its row to logs/TARGET.WORKER.row
  local t=$1 w=$2 n=$3 before remaining seeds log
  before=$(total_of "$t")
  remaining=$(((goal - before + n - 1) / n))
  mapfile -t seeds < <(fuzz_seeds "$root" "$t")
  log=$summary_dir/logs/$t.$w.log
  # -reload=1: a worker picks up the inputs its siblings added to the shared corpus directory.
  ASAN_OPTIONS=$(fuzz_asan_options) UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$build/tests/fuzz/fuzz_$t" -runs="$remaining" -max_total_time="$slice" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -reload=1 -print_final_stats=1 -artifact_prefix="$build/artifacts/$t/" \
    "$build/corpus/$t" "${seeds[@]}" >"$log" 2>&1
  local rc=$?
  # CPU seconds of the fuzzer (bash's `times`: this shell's children), so that a run on a loaded
  # machine still tells what a core would do: executions per CPU second.
  local cpu
  times >"$log.times" # not in $(...): a subshell starts with no children's time
  cpu=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); n += p[1] * 60 + p[2] } printf "%.1f", n }' "$log.times")
  local execs rate corpus
  execs=$(awk '/^stat::number_of_executed_units:/ { n = $2 } /^#[0-9]+/ { if (!n) last = substr($1, 2) } END { print n ? n : last + 0 }' "$log")
  rate=$(awk '/^stat::average_exec_per_sec:/ { print $2 }' "$log")
  # The corpus libFuzzer held at the end (seeds and grown inputs, units/size), from its last status
  # line; the grown part stays in DIR/corpus/TARGET for the next campaign.
  corpus=$(awk '/ corp: / { for (i = 1; i <= NF; i++) if ($i == "corp:") c = $(i + 1) } END { print c ? c : "?" }' "$log")
  grep -oE "Test unit written to [^ ]+" "$log" | awk '{print $5}' | while read -r a; do cp "$a" "$summary_dir/artifacts/$t-$(basename "$a")"; done
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$execs" "${rate:-0}" "$cpu" "$corpus" "$rc" >"$summary_dir/logs/$t.$w.row"
  echo "== fuzz_$t worker $w/$n: $execs executions, ${rate:-?} exec/s, $cpu CPU s, exit $rc"
}
export -f one total_of fuzz_seeds fuzz_asan_options
export build goal slice summary_dir totals root
declare -A before_artifacts
for t in "${todo[@]}"; do
  mkdir -p "$build/corpus/$t" "$build/artifacts/$t"
  before_artifacts[$t]=$(ls "$build/artifacts/$t" | grep -cvE '^log\.txt$')
done
# Every target's first worker before any second one, so that with rounds each target runs.
awk '{ for (w = 1; w <= $2; w++) print w, $1, $2 }' <<<"$plan" | sort -s -n -k1,1 |
  xargs -P "$jobs" -L 1 bash -c 'one "$2" "$1" "$3"' _

# Totals, then the table.
found=0
{
  echo "# Fuzz campaign $(date -u -d "@$start" +%FT%TZ), $(($(date +%s) - start)) s on $jobs jobs ($(nproc) cores, $(hostname))"
  echo
  echo "Goal $goal executions per target in total; $slice s per fuzzer process at most; build $build."
  echo
  echo "| target | workers | executions this run | exec/s (wall) | CPU s | exec per CPU s | total, all campaigns | corpus (units/size) | new artifacts | exit |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
} >"$summary_dir/summary.md"
for t in "${todo[@]}"; do
  workers=$(awk -v t="$t" '$1 == t { print $2 }' <<<"$plan")
  rows=("$summary_dir/logs/$t".*.row)
  [[ -f ${rows[0]} ]] || { echo "| \`$t\` | $workers | did not run | | | | | | | |" >>"$summary_dir/summary.md"; continue; }
  # All workers together: executions, wall rates and CPU seconds add up; the corpus is the largest
  # any worker held; the exit is the worst.
  IFS=$'\t' read -r execs rate cpu corpus rc < <(cat "${rows[@]}" | awk -F'\t' '
    { e += $2; r += $3; c += $4; split($5, u, "/"); if (u[1] + 0 >= best) { best = u[1] + 0; corp = $5 }; if ($6 != 0) rc = $6 }
    END { printf "%d\t%d\t%.1f\t%s\t%d\n", e, r, c, corp == "" ? "?" : corp, rc }')
  artifacts=$(($(ls "$build/artifacts/$t" | grep -cvE '^log\.txt$') - before_artifacts[$t]))
  total=$(($(total_of "$t") + execs))
  per_cpu=$(awk -v e="$execs" -v c="$cpu" 'BEGIN { if (c > 0) printf "%.0f", e / c; else print "?" }')
  # The rate for the next campaign's plan: this run's, when it ran long enough to mean something.
  keep=$(awk -v c="$cpu" -v p="$per_cpu" -v old="$(rate_of "$t")" 'BEGIN { print (c >= 5 && p != "?") ? p : old }')
  awk -v t="$t" -v n="$total" -v r="$keep" 'BEGIN { OFS = "\t" } $1 != t { print } END { print t, n, r }' "$totals" >"$totals.new" && mv "$totals.new" "$totals"
  ((artifacts > 0)) && found=1
  printf '| `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$t" "$workers" "$execs" "$rate" "$cpu" "$per_cpu" "$total" "$corpus" "$artifacts" "$rc" >>"$summary_dir/summary.md"
done
cat "$summary_dir/summary.md"
echo "fuzz-campaign: summary in $summary_dir/summary.md"
exit "$found"
