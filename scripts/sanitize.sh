#!/usr/bin/env bash
# Builds nvte-doctor and its tests with AddressSanitizer + UndefinedBehaviorSanitizer
# (-DNVTE_SANITIZE=ON) into build-asan/ and runs the whole ctest suite there. Any sanitizer report
# fails the run: UBSan does not recover (-fno-sanitize-recover) and ASan aborts on its first error.
# Usage: scripts/sanitize.sh [extra ctest arguments, e.g. -R rules]
# Environment: JOBS (default nproc), CC/CXX (default: the system compiler).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
start=$(date +%s)
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVTE_WERROR=ON -DNVTE_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
built=$(date +%s)
# detect_leaks: the probes dlopen vendor libraries that keep allocations for the process lifetime;
# leaks are still reported for the project's own code paths through the suppressions file.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/scripts/lsan.supp:print_suppressions=0}
rc=0
ctest --test-dir build-asan -j"$jobs" --output-on-failure --timeout 300 "$@" || rc=$?
done_at=$(date +%s)
echo "sanitize: build $((built - start)) s, tests $((done_at - built)) s, total $((done_at - start)) s, ctest exit $rc"
exit "$rc"
