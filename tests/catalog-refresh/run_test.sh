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
echo "catalog refresh: ok"
