#!/usr/bin/env bash
# The Python tier's ok answer reused while nothing it loaded changed (issue 40;
# src/selftest/python_reuse.hpp), end to end with the fake tier: the second self-test starts no
# interpreter and says "reused"; a file it loaded touched, --fresh (whose answer is kept),
# --no-cache, a variable the tier reads (NVTE_*) each run it again; a job's own variable (SLURM_JOB_ID) does not; a failed
# answer is never kept; facts of a file never reuse. Usage: python_reuse_test.sh BINARY SOURCE_DIR
set -euo pipefail
bin=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -m 700 "$work/cache"
touch "$work/lib.so" "$work/runs"
export XDG_CACHE_HOME=$work/cache NVTE_DOCTOR_SELFTEST_PY=$src/tests/fixtures/selftest/fake_python_tier.py
export FAKE_RUNS=$work/runs FAKE_LOADED=$work/lib.so
# explain predicts no backend without a GPU; "unknown" is a choice the tier does not hold against it.
export FAKE_TE_CHOSEN=unknown
selftest() { "$bin" selftest --rules "$src/rules" --python python3 --no-color "$@" >"$work/out" 2>"$work/err" || true; }
runs() { wc -l <"$work/runs"; }
fail() { echo "FAIL: $*"; cat "$work/out" "$work/err"; exit 1; }

selftest
[[ $(runs) == 1 ]] || fail "the first self-test did not run the tier"
grep -q "reused:" "$work/out" && fail "the first self-test says reused"
selftest
[[ $(runs) == 1 ]] || fail "an unchanged node ran the tier again"
grep -q "reused: the tier's answer of" "$work/out" || fail "a reused answer is not said so"
SLURM_JOB_ID=77 selftest --format json
[[ $(runs) == 1 ]] || fail "a job's own variable ran the tier again"
grep -q '"reused": {' "$work/out" || fail "the JSON does not carry reused"
NVTE_FUSED_ATTN=0 selftest
[[ $(runs) == 2 ]] || fail "another NVTE_ setting reused the answer"
touch -d '1 hour ago' "$work/lib.so"
selftest
[[ $(runs) == 3 ]] || fail "a changed file the tier loaded reused the answer"
touch -d '2 hours ago' "$work/lib.so"
selftest --fresh
[[ $(runs) == 4 ]] || fail "--fresh reused the answer"
selftest
[[ $(runs) == 4 ]] || fail "the answer --fresh gave was not kept"
selftest --no-cache
[[ $(runs) == 5 ]] || fail "--no-cache reused the answer"
selftest --facts "$src/tests/fixtures/snapshots/h100-node.json"
[[ $(runs) == 6 ]] || fail "facts of a file reused the answer"
selftest
[[ $(runs) == 6 ]] || fail "--no-cache or --facts replaced the kept answer"
# A failed answer is not kept: the next self-test runs the tier again.
rm -rf "$work/cache/nvte-doctor/selftest-python"
FAKE_TE_SUBLIBRARY=1 selftest
FAKE_TE_SUBLIBRARY=1 selftest
[[ $(runs) == 8 ]] || fail "a failed answer was reused"
grep -q "FAILED" "$work/out" || fail "the failed tier did not fail"
echo PASS
