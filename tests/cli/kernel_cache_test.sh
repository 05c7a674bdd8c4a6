#!/usr/bin/env bash
# The self-test's kernel cache directory (issue 40 item 2): a self-test makes
# $XDG_CACHE_HOME/nvte-doctor/selftest-kernels private (0700) and hands it to the cuDNN child;
# with --no-cache (or NVTE_DOCTOR_NO_CACHE=1) it makes nothing. With a cache directory others may
# write, the self-test still runs (the cache is off). Usage: kernel_cache_test.sh BINARY SOURCE_DIR
set -euo pipefail
bin=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
selftest() { env XDG_CACHE_HOME="$1" "$bin" selftest --rules "$src/rules" --python '' --format json "${@:2}" >/dev/null || true; }

mkdir -m 700 "$work/off" "$work/env-off" "$work/on" "$work/shared"
selftest "$work/off" --no-cache
[[ ! -e $work/off/nvte-doctor/selftest-kernels ]] || { echo "FAIL: --no-cache made the kernel cache directory"; exit 1; }
NVTE_DOCTOR_NO_CACHE=1 selftest "$work/env-off"
[[ ! -e $work/env-off/nvte-doctor/selftest-kernels ]] || { echo "FAIL: NVTE_DOCTOR_NO_CACHE=1 made the kernel cache directory"; exit 1; }
selftest "$work/on"
mode=$(stat -c %a "$work/on/nvte-doctor/selftest-kernels" 2>/dev/null || echo none)
[[ $mode == 700 ]] || { echo "FAIL: the kernel cache directory is not made private (mode $mode)"; exit 1; }
# Another user's or a world-writable cache directory: not used, the self-test still answers.
mkdir -p "$work/shared/nvte-doctor/selftest-kernels"
chmod 777 "$work/shared/nvte-doctor/selftest-kernels"
env XDG_CACHE_HOME="$work/shared" "$bin" selftest --rules "$src/rules" --python '' --format json >"$work/shared.json" || true
grep -q '"checks"' "$work/shared.json" || { echo "FAIL: no self-test answer with a shared kernel cache directory"; exit 1; }
[[ -z $(ls -A "$work/shared/nvte-doctor/selftest-kernels") ]] || { echo "FAIL: something was written into a directory others may write"; exit 1; }
echo "PASS"
