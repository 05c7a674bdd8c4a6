#!/usr/bin/env bash
# The probe's file cache across runs (issue 40) changes its speed, never its answer: probe of a
# fixture node with TE and torch (bench/fixture-root.sh: the native link check, the libraries'
# ELF files) and of this machine gives the same JSON with --no-cache, with a cold cache and with
# a warm one (which must have been used: -vv reports its hits); then a library rewritten in
# place with its size and mtime kept (torch's libc10_cuda.so swapped for an older build that
# lacks what TE's extension calls) must change the answer exactly as it does without the cache.
# A corrupt cache file is ignored (exit 0, the same answer). Usage: file_cache_test.sh BINARY SOURCE_DIR
set -euo pipefail
bin=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/scrub_json.sh"
root=$work/root
fakes=$(dirname "$bin")/tests/fake_libs
bash "$src/bench/fixture-root.sh" "$root" "$fakes" >/dev/null
# Files written in the last seconds are not cached (a change within the same mtime tick would
# keep their identity): the tree is dated as an installed one is.
find "$root" -exec touch -h -d @1700000000 {} +
penv=(env -i PATH=/opt/torch/.venv/bin:/usr/bin VIRTUAL_ENV=/opt/torch/.venv PYTHONPATH=/opt/te XDG_CACHE_HOME="$work/cache")
cache=$work/cache/nvte-doctor/probe-files.cache
probe() { "${penv[@]}" "$bin" probe --root "$root" --format json "$@" | scrub; }

probe --no-cache >"$work/none.txt"
[[ ! -e $cache ]] || { echo "FAIL: --no-cache wrote $cache"; exit 1; }
probe >"$work/cold.txt"
[[ -s $cache ]] || { echo "FAIL: no cache written at $cache"; exit 1; }
"${penv[@]}" "$bin" probe --root "$root" --format json -vv 2>"$work/warm.log" | scrub >"$work/warm.txt"
grep -q '"native"' "$work/none.txt" || { echo "FAIL: the fixture's probe linked nothing"; exit 1; }
diff -u "$work/none.txt" "$work/cold.txt" || { echo "FAIL: probe differs with a cold cache"; exit 1; }
diff -u "$work/none.txt" "$work/warm.txt" || { echo "FAIL: probe differs with a warm cache"; exit 1; }
grep -qE 'file cache .*: [1-9][0-9]* hits, 0 misses' "$work/warm.log" ||
  { echo "FAIL: the warm run did not answer everything from the cache:"; grep 'file cache' "$work/warm.log"; exit 1; }
grep -q 'link_check' "$cache" || { echo "FAIL: the native link check was not cached"; exit 1; }
NVTE_DOCTOR_NO_CACHE=1 probe >"$work/env-off.txt"
diff -u "$work/none.txt" "$work/env-off.txt" >/dev/null || { echo "FAIL: NVTE_DOCTOR_NO_CACHE=1 changed the answer"; exit 1; }

# Rewritten in place, same size (both builds of the fake are), mtime put back: only the inode's
# ctime tells. The answer must follow the file.
lib=$root/opt/torch/.venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so
cat "$fakes/c10_cuda_old.so" >"$lib"
touch -h -d @1700000000 "$lib"
probe --no-cache >"$work/none2.txt"
probe >"$work/cached2.txt"
if diff -q "$work/none.txt" "$work/none2.txt" >/dev/null; then echo "FAIL: the swapped library changed nothing (the test cannot fail)"; exit 1; fi
diff -u "$work/none2.txt" "$work/cached2.txt" || { echo "FAIL: a stale cache entry survived a rewritten library"; exit 1; }

# A corrupt cache is a hint lost, not an error.
printf 'nvte-file-cache 1 garbage\n\x00\x01' >"$cache"
probe >"$work/corrupt.txt"
diff -u "$work/none2.txt" "$work/corrupt.txt" || { echo "FAIL: a corrupt cache changed the answer"; exit 1; }

# This machine as it is (the CUDA libraries under /usr/local/cuda, when there): the same facts.
live=(env XDG_CACHE_HOME="$work/live-cache" "$bin" probe --format json)
"${live[@]}" --no-cache | scrub >"$work/live-none.txt"
"${live[@]}" | scrub >/dev/null
"${live[@]}" | scrub >"$work/live-warm.txt"
diff -u "$work/live-none.txt" "$work/live-warm.txt" || { echo "FAIL: probe of this machine differs with a warm cache"; exit 1; }
echo "the same facts with and without the file cache, and a rewritten library seen"
