#!/usr/bin/env bash
# Packs the fuzzers of build-fuzz/ (scripts/fuzz.sh builds them) for a campaign on another
# machine, e.g. the GPU node (Ubuntu 24.04 without our build dependencies), into .gpu-fuzz/
# (git-ignored; carry it beside .gpu-carry/): one xz tarball holding every fuzz_<target> binary
# (debug sections stripped: the carry limit), every shared library `ldd` lists for them except
# glibc's and libstdc++/libgcc (the node's are newer), the corpora grown so far (corpus/) and
# the execution ledger travels with the checkout (tests/fuzz/totals.tsv). The clang ASan/UBSan/libFuzzer runtimes are linked in
# statically. `scripts/gpu-validate.sh fuzz` unpacks it and runs scripts/fuzz-campaign.sh there.
# NVTE_FUZZ_BUILD_DIR (default build-fuzz) and NVTE_FUZZ_CARRY_DIR (default .gpu-fuzz) move them.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${NVTE_FUZZ_BUILD_DIR:-build-fuzz}
carry=${NVTE_FUZZ_CARRY_DIR:-.gpu-fuzz}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/tests/fuzz" "$stage/lib" "$stage/corpus"
n=0
for bin in "$build"/tests/fuzz/fuzz_*; do
  [[ -x $bin && $(basename "$bin") != fuzz_replay_* ]] || continue
  cp "$bin" "$stage/tests/fuzz/" && n=$((n + 1))
  ldd "$bin" | awk '/=> \//{print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | ld-linux* | libstdc++.so* | libgcc_s.so*) ;;
      *) [[ -e $stage/lib/$(basename "$lib") ]] || cp -L "$lib" "$stage/lib/" ;;
    esac
  done
done
((n > 0)) || { echo "fuzz-carry: no fuzzers in $build/tests/fuzz (run scripts/fuzz.sh --build first)" >&2; exit 1; }
strip --strip-debug "$stage"/tests/fuzz/fuzz_*
[[ -d $build/corpus ]] && cp -r "$build/corpus/." "$stage/corpus/"
rm -rf "$carry" && mkdir -p "$carry"
tar -C "$stage" -cf - . | xz -T0 -6 >"$carry/fuzz.tar.xz"
echo "fuzz-carry: $n fuzzers, $(ls "$stage/lib" | wc -l) libraries, $(find "$stage/corpus" -type f | wc -l) corpus files:" \
  "$(du -h "$carry/fuzz.tar.xz" | cut -f1) in $carry/fuzz.tar.xz"
