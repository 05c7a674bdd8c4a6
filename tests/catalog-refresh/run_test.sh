#!/bin/sh
# ctest catalog_refresh: scripts/refresh-catalog.py on the committed sample input.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
script="$here/../../scripts/refresh-catalog.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$here/catalog" "$work/catalog"
python3 "$script" --pypi-json "$here/pypi" --catalog "$work/catalog" --check > "$work/check.out" && {
  echo "FAIL: --check says current before the refresh"; exit 1; }
cmp "$here/catalog/sample.yaml" "$work/catalog/sample.yaml" || { echo "FAIL: --check changed the file"; exit 1; }
python3 "$script" --pypi-json "$here/pypi" --catalog "$work/catalog" > "$work/first.out"
diff -u "$here/expected/sample.yaml" "$work/catalog/sample.yaml"
grep -q "flash-attn: entries carry per-release build facts" "$work/first.out" || { echo "FAIL: flash-attn not reported"; exit 1; }
python3 "$script" --pypi-json "$here/pypi" --catalog "$work/catalog" > "$work/second.out"
diff -u "$here/expected/sample.yaml" "$work/catalog/sample.yaml"
grep -q "+ " "$work/second.out" && { echo "FAIL: the second run added entries"; exit 1; }
python3 "$script" --pypi-json "$here/pypi" --catalog "$work/catalog" --check > /dev/null
# --wheel-urls: PyPI's own files, named one a line.
rm -rf "$work/catalog" && cp -r "$here/catalog" "$work/catalog"
python3 "$script" --wheel-urls "$here/bad-wheels.txt" --catalog "$work/catalog" 2> "$work/bad.err" && {
  echo "FAIL: a non-PyPI URL was accepted"; exit 1; }
grep -q "line 2: not a https://files.pythonhosted.org/packages/ URL" "$work/bad.err" || { echo "FAIL: no line number"; cat "$work/bad.err"; exit 1; }
cmp "$here/catalog/sample.yaml" "$work/catalog/sample.yaml" || { echo "FAIL: a bad list changed the catalog"; exit 1; }
python3 "$script" --wheel-urls "$here/wheels.txt" --catalog "$work/catalog" --check > /dev/null && {
  echo "FAIL: --check says current before the wheel refresh"; exit 1; }
python3 "$script" --wheel-urls "$here/wheels.txt" --catalog "$work/catalog" > "$work/wheels.out"
diff -u "$here/expected/sample-wheels.yaml" "$work/catalog/sample.yaml"
grep -q "flash-attn: entries carry per-release build facts; 2.8.4 not added" "$work/wheels.out" || { echo "FAIL: flash-attn not reported"; exit 1; }
grep -q "nvidia-nccl-cu13 2.32.3: no such package in the catalog; skipped" "$work/wheels.out" || { echo "FAIL: unknown package not reported"; exit 1; }
python3 "$script" --wheel-urls "$here/wheels.txt" --catalog "$work/catalog" --check > /dev/null
diff -u "$here/expected/sample-wheels.yaml" "$work/catalog/sample.yaml"
# The committed list of the last real refresh leaves the shipped catalog as it is.
python3 "$script" --wheel-urls "$here/../../docs/records/catalog-wheels-2026-11-25.txt" --check > /dev/null || {
  echo "FAIL: rules/catalog lacks what docs/records/catalog-wheels-2026-11-25.txt names"; exit 1; }
echo "catalog refresh: ok"
