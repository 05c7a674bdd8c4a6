#!/usr/bin/env bash
# The doctor's threads change its speed, never its answer: check with one thread
# (NVTE_DOCTOR_THREADS=1) and with every CPU gives the same report (findings, their verified fixes,
# workloads), on a snapshot with node findings and three workloads (fix searches and explanations
# on several threads), and probe of a fixture node tree with TE the same facts (torch linked on a
# thread of its own, TE's walks beside the copy scans, parallel lookups and METADATA reads).
# Usage: threads_test.sh BINARY SOURCE_DIR
set -euo pipefail
bin=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/scrub_json.sh"
args=(check --rules "$src/rules" --facts "$src/tests/fixtures/snapshots/a100-node.json" --set env.NVTE_FUSED_ATTN=0 --format json
      --hf-config "$src/tests/fixtures/hf/llama-3-8b/config.json" --hf-config "$src/tests/fixtures/hf/deepseek-v3/config.json"
      --workload-set qkv_format=thd)
rc1=0 rcn=0
NVTE_DOCTOR_THREADS=1 "$bin" "${args[@]}" >"$work/one.json" || rc1=$?
"$bin" "${args[@]}" >"$work/all.json" || rcn=$?
[[ $rc1 == "$rcn" ]] || { echo "FAIL: exit $rc1 with one thread, $rcn with all"; exit 1; }
scrub <"$work/one.json" >"$work/one.txt"
scrub <"$work/all.json" >"$work/all.txt"
diff -u "$work/one.txt" "$work/all.txt" || { echo "FAIL: check differs with one thread"; exit 1; }
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); f=[x for x in r["findings"] if x.get("fixes")]; assert len(r["workloads"]) >= 2 and f, "nothing was searched"' "$work/one.json" ||
  { echo "FAIL: the case has no workloads or fixes to search"; exit 1; }
# probe on a fixture node with TE (the tree bench/fixture-root.sh makes).
root=$work/root
bash "$src/bench/fixture-root.sh" "$root" "$(dirname "$bin")/tests/fake_libs" >/dev/null
penv=(env -i PATH=/opt/torch/.venv/bin:/usr/bin VIRTUAL_ENV=/opt/torch/.venv PYTHONPATH=/opt/te)
NVTE_DOCTOR_THREADS=1 "${penv[@]}" NVTE_DOCTOR_THREADS=1 "$bin" probe --root "$root" --format json | scrub >"$work/p1.txt"
"${penv[@]}" "$bin" probe --root "$root" --format json | scrub >"$work/pn.txt"
diff -u "$work/p1.txt" "$work/pn.txt" || { echo "FAIL: probe differs with one thread"; exit 1; }
grep -q '"native"' "$work/p1.txt" || { echo "FAIL: the fixture's probe linked nothing"; exit 1; }
# NVTE_DOCTOR_THREADS=1 starts no thread at all (the man page says so): no clone with CLONE_THREAD.
if command -v strace >/dev/null 2>&1; then
  # LeakSanitizer cannot work under ptrace: a sanitized build leaves leak checking to the other runs.
  export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
  penv+=("ASAN_OPTIONS=$ASAN_OPTIONS") # env -i would drop it
  NVTE_DOCTOR_THREADS=1 strace -f -e trace=clone,clone3 -o "$work/clones" "$bin" "${args[@]}" >/dev/null || true
  NVTE_DOCTOR_THREADS=1 "${penv[@]}" NVTE_DOCTOR_THREADS=1 strace -f -e trace=clone,clone3 -o "$work/clones-probe" "$bin" probe --root "$root" >/dev/null
  if grep -h 'CLONE_THREAD' "$work/clones" "$work/clones-probe"; then echo "FAIL: a thread was started with NVTE_DOCTOR_THREADS=1"; exit 1; fi
  if (($(nproc) > 1)); then # with one CPU to use there are no threads either way
    strace -f -e trace=clone,clone3 -o "$work/clones-all" "${penv[@]}" "$bin" probe --root "$root" >/dev/null
    grep -q 'CLONE_THREAD' "$work/clones-all" || { echo "FAIL: no thread without NVTE_DOCTOR_THREADS (strace sees none?)"; exit 1; }
  fi
else
  echo "strace not installed: the no-thread check is skipped"
fi
echo "same reports with one thread and with all"
