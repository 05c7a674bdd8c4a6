#!/usr/bin/env bash
# Builds nvte-doctor for the GPU node (Ubuntu 24.04 without our build dependencies) and packs
# it into .gpu-carry/ (git-ignored): the binary, the rules, and every shared library `ldd`
# lists except glibc's and libstdc++/libgcc (the node's are newer). The binary carries
# DT_RPATH=$ORIGIN/lib (not RUNPATH: RPATH also covers the libraries' own dependencies), so it
# runs without LD_LIBRARY_PATH and the environment the doctor probes stays the node's own.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DNVTE_BUILD_TESTS=ON \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags -DCMAKE_BUILD_RPATH='$ORIGIN/lib' >/dev/null
cmake --build build-gpu -j"$(nproc)" --target nvte-doctor nvte-bench ${NVTE_GPU_TEST_TARGETS:-}
rm -rf .gpu-carry && mkdir -p .gpu-carry/lib
cp build-gpu/nvte-doctor .gpu-carry/
# The benchmark's helpers (bench/run.sh finds them next to the binary).
cp build-gpu/bench/nvte-bench-measure build-gpu/bench/nvte-bench-explain-rate .gpu-carry/
mkdir -p .gpu-carry/cuda-trap && cp -L build-gpu/bench/cuda-trap/libcuda.so.1 .gpu-carry/cuda-trap/
for t in ${NVTE_GPU_TEST_TARGETS:-}; do cp "build-gpu/tests/$t" .gpu-carry/ 2>/dev/null || true; done
for bin in .gpu-carry/nvte-doctor .gpu-carry/nvte-bench-explain-rate ${NVTE_GPU_TEST_TARGETS:+$(printf '.gpu-carry/%s ' ${NVTE_GPU_TEST_TARGETS})}; do
  [[ -f $bin ]] || continue
  ldd "$bin" | awk '/=> \//{print $3}' | while read -r lib; do
    [[ $(realpath "$lib") == "$(realpath .gpu-carry)"/* ]] && continue # already carried
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
      *) cp -L "$lib" .gpu-carry/lib/ ;;
    esac
  done
done
du -sh .gpu-carry
