#!/usr/bin/env bash
# Builds nvte-doctor with ThreadSanitizer into build-tsan/ (gcc, -fsanitize=thread; the binary
# only) and runs the paths that use threads several times each: probe of a fixture node with TE
# and flash-attn (the libraries probe's scans and TE's walks from the start, torch's link beside
# them, parallel lookups and METADATA reads; the fake libraries come from build/, which
# scripts/bootstrap.sh makes), probe of this machine, and check with node findings and workloads
# (fix searches and workloads on threads). Any ThreadSanitizer report fails it (exit 1).
# Usage: scripts/tsan.sh [RUNS]   (default 3; NVTE_TSAN_BUILD_DIR moves build-tsan/)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
[[ -d build/tests/fake_libs ]] || { echo "tsan: build/tests/fake_libs missing (run scripts/bootstrap.sh first)" >&2; exit 2; }
build=${NVTE_TSAN_BUILD_DIR:-build-tsan}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVTE_BUILD_TESTS=OFF \
  -DCMAKE_CXX_FLAGS=-fsanitize=thread -DCMAKE_C_FLAGS=-fsanitize=thread -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread >/dev/null
cmake --build "$build" -j"${JOBS:-$(nproc)}" --target nvte-doctor
bin=$(cd "$build" && pwd)/nvte-doctor
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bash bench/fixture-root.sh "$work/root" build/tests/fake_libs >/dev/null
export TSAN_OPTIONS="halt_on_error=0 report_signal_unsafe=0 log_path=$work/tsan"
for ((i = 0; i < runs; i++)); do
  env -i PATH=/opt/torch/.venv/bin:/usr/bin VIRTUAL_ENV=/opt/torch/.venv PYTHONPATH=/opt/te TSAN_OPTIONS="$TSAN_OPTIONS" \
    "$bin" probe --root "$work/root" --format json >/dev/null
  "$bin" probe --format json >/dev/null
  "$bin" check --rules rules --facts tests/fixtures/snapshots/a100-node.json --set env.NVTE_FUSED_ATTN=0 --format json \
    --hf-config tests/fixtures/hf/llama-3-8b/config.json --hf-config tests/fixtures/hf/deepseek-v3/config.json >/dev/null || true
done
if ls "$work"/tsan.* >/dev/null 2>&1; then
  cat "$work"/tsan.*
  echo "tsan: ThreadSanitizer reported races (above)"
  exit 1
fi
echo "tsan: $runs rounds of probe (fixture with TE, this machine) and check, no ThreadSanitizer report"
