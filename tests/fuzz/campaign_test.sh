#!/usr/bin/env bash
# scripts/fuzz-campaign.sh against fake fuzzers (shell scripts that print what libFuzzer prints and
# record how they were started): a target that reached the goal is left out; the spare jobs go to
# the target with the most missing work at its recorded rate, and only while it cannot finish in
# the time; every worker's executions count in the totals; the rate for the next plan is recorded;
# the fuzzers run with the campaign's ASan options, which NVTE_FUZZ_ASAN_OPTIONS replaces.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build=$work/build
mkdir -p "$build/tests/fuzz"
fail() { echo "FAIL: $*" >&2; exit 1; }
# A fake fuzzer: "runs" min(-runs, 1000) inputs, burns a little CPU, and logs its start.
for t in fast slow done; do
  cat >"$build/tests/fuzz/fuzz_$t" <<FAKE
#!/usr/bin/env bash
runs=1000
for a in "\$@"; do case \$a in -runs=*) ((\${a#-runs=} < runs)) && runs=\${a#-runs=} ;; esac; done
echo "$t \$*" >>"$work/starts"
echo "\$ASAN_OPTIONS" >>"$work/asan"
for ((i = 0; i < 20000; i++)); do :; done
echo "#\$runs	DONE   cov: 10 ft: 10 corp: 3/30b exec/s: 500 rss: 30Mb"
echo "stat::number_of_executed_units: \$runs"
echo "stat::average_exec_per_sec:     500"
FAKE
  chmod +x "$build/tests/fuzz/fuzz_$t"
done
# Missing work at the recorded rates: slow 9,000 / 10 = 900 s, fast 500 / 1,000 = 0.5 s; done reached.
printf 'fast\t9500\t1000\nslow\t1000\t10\ndone\t10000\t50\n' >"$build/fuzz-totals.tsv"
"$root/scripts/fuzz-campaign.sh" -j 4 -n 10000 -t 30 -b "$build" -T "$build/fuzz-totals.tsv" -o "$work/summary" fast slow done >"$work/out" 2>&1 ||
  { cat "$work/out"; fail "campaign exit $?"; }
cat "$work/out"
grep -q '^done ' "$work/starts" && fail "a target that reached the goal ran"
[[ $(grep -c '^fast ' "$work/starts") == 1 ]] || fail "the target that finishes on one core got more than one worker"
[[ $(grep -c '^slow ' "$work/starts") == 3 ]] || fail "the slow target did not get the three spare jobs"
grep '^slow ' "$work/starts" | grep -q -- '-runs=3000 ' || fail "a slow worker was not given its third of the missing 9,000"
# fast: 500 (its -runs); slow: 3 workers x 1,000.
awk '$1 == "fast" && $2 == 10000 { f = 1 } $1 == "slow" && $2 == 4000 && $3 == 10 { s = 1 } $1 == "done" && $2 == 10000 { d = 1 }
     END { exit !(f && s && d) }' "$build/fuzz-totals.tsv" || { cat "$build/fuzz-totals.tsv"; fail "totals do not add every worker (or a rate from a sub-5 s run replaced the recorded one)"; }
grep -q '^| `slow` | 3 | 3000 | 1500 |' "$work/summary/summary.md" || { cat "$work/summary/summary.md"; fail "summary row of slow"; }
[[ $(grep -c '^detect_leaks=0:abort_on_error=1:quarantine_size_mb=16:malloc_context_size=4$' "$work/asan") == 4 ]] ||
  { cat "$work/asan"; fail "a fuzzer ran without the campaign's ASan options"; }
# -a: more targets than jobs still run at once, one process each, for the whole time.
printf 'fast\t0\t1000\nslow\t0\t10\n' >"$build/fuzz-totals.tsv"
rm "$work/asan"
NVTE_FUZZ_ASAN_OPTIONS=quarantine_size_mb=256 "$root/scripts/fuzz-campaign.sh" -j 1 -a -n 10000 -t 30 -b "$build" -T "$build/fuzz-totals.tsv" -o "$work/summary-a" fast slow >"$work/out-a" 2>&1 ||
  { cat "$work/out-a"; fail "campaign -a exit $?"; }
grep -q '2 fuzzer processes on 2 jobs, 30 s each' "$work/out-a" || { cat "$work/out-a"; fail "-a did not run both targets at once"; }
[[ $(grep -c '^detect_leaks=0:abort_on_error=1:quarantine_size_mb=256$' "$work/asan") == 2 ]] ||
  { cat "$work/asan"; fail "NVTE_FUZZ_ASAN_OPTIONS did not replace the campaign's ASan options"; }
# The committed ledger: one row per fuzz target of tests/fuzz, executions and a rate as numbers.
for src in "$root"/tests/fuzz/fuzz_*.cpp; do
  t=$(basename "$src" .cpp); t=${t#fuzz_}
  awk -F'\t' -v t="$t" '$1 == t && NF == 3 && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9.]+$/ { ok = 1 } END { exit !ok }' "$root/tests/fuzz/totals.tsv" ||
    fail "tests/fuzz/totals.tsv has no well-formed row for $t"
done
echo "campaign plan and totals OK"
