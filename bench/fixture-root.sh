#!/usr/bin/env bash
# bench/fixture-root.sh OUT_DIR [FAKE_LIBS_DIR]: a fixture node root with its ELF files, for
# timing the probe on a known tree (bench/run.sh with NVTE_BENCH_ROOT=OUT_DIR). Copies
# tests/fixtures/h100-node with the h100-node-te overlay (torch 2.11 in /opt/torch/.venv, TE 2.15
# in /opt/te) and installs the fake libraries the test build made (build/tests/fake_libs) at the
# paths fake-libs.txt names, as test_support::NodeFixture does. No ld.so.cache is written: the
# NEEDED names resolve through RUNPATHs and the objects torch loads first.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: bench/fixture-root.sh OUT_DIR [FAKE_LIBS_DIR]}
fakes=${2:-$repo/build/tests/fake_libs}
[[ -d $fakes ]] || { echo "fixture-root: no $fakes (build the tests first)" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"
for layer in h100-node h100-node-te; do
  cp -a "$repo/tests/fixtures/$layer/." "$out/"
  while read -r node fake; do
    [[ -z $node || $node == \#* ]] && continue
    mkdir -p "$out$(dirname "$node")"
    cp "$fakes/$fake.so" "$out$node"
  done <"$repo/tests/fixtures/$layer/fake-libs.txt"
done
echo "$out: probe it with: env -i PATH=/opt/torch/.venv/bin:/usr/bin VIRTUAL_ENV=/opt/torch/.venv PYTHONPATH=/opt/te nvte-doctor probe --root $out"
