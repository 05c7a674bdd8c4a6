#!/usr/bin/env bash
# Builds nvte-doctor for the GPU node (Ubuntu 24.04 without our build dependencies) and packs
# it into .gpu-carry/ (git-ignored): the binary, the rules, and every shared library `ldd`
# lists except glibc's and libstdc++/libgcc (the node's are newer), collected as
# scripts/build-bundle.sh collects them (scripts/lib/bundle-libs.sh). The binary carries
# DT_RPATH=$ORIGIN/lib (not RUNPATH: RPATH also covers the libraries' own dependencies), so it
# runs without LD_LIBRARY_PATH and the environment the doctor probes stays the node's own.
# NVTE_GPU_BUILD_DIR (default build-gpu) and NVTE_GPU_CARRY_DIR (default .gpu-carry) move the
# build and the pack, e.g. into a folder another checkout carries. NVTE_GPU_BUILD_TYPE (default
# RelWithDebInfo, the type the README and the Debian package build, so the node measures the binary
# users get) picks the build type: with NVTE_GPU_CMAKE_ARGS=-DNVTE_WERROR=ON it compiles exactly
# what scripts/bootstrap.sh compiles, so a compiler cache serves it. Carried binaries are
# stripped of debug sections (the 64 MiB carry limit).
# NVTE_GPU_PREBUILT=DIR takes the binaries of an existing build tree instead (build/, which
# scripts/bootstrap.sh made) and gives the copies DT_RPATH=$ORIGIN/lib with patchelf: on a
# 2-core machine that saves a second whole build.
# NVTE_GPU_COMPARE_BUILD_TYPE=TYPE (e.g. RelWithDebInfo) also builds that type in BUILD_DIR-compare
# and packs its nvte-doctor and nvte-bench-explain-rate into CARRY/compare/ (sharing CARRY/lib):
# bench/run.sh then measures both build types in one run (rows NAME@TYPE).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${NVTE_GPU_BUILD_DIR:-build-gpu}
carry=${NVTE_GPU_CARRY_DIR:-.gpu-carry}
if [[ -n ${NVTE_GPU_PREBUILT:-} ]]; then
  build=$NVTE_GPU_PREBUILT
  cmake --build "$build" -j"$(nproc)" --target nvte-doctor nvte-bench ${NVTE_GPU_TEST_TARGETS:-}
else
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${NVTE_GPU_BUILD_TYPE:-RelWithDebInfo}" -DNVTE_BUILD_TESTS=ON ${NVTE_GPU_CMAKE_ARGS:-} \
    -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags -DCMAKE_BUILD_RPATH='$ORIGIN/lib' >/dev/null
  cmake --build "$build" -j"$(nproc)" --target nvte-doctor nvte-bench ${NVTE_GPU_TEST_TARGETS:-}
fi
rm -rf "$carry" && mkdir -p "$carry/lib"
cp "$build/nvte-doctor" "$carry/"
# The benchmark's helpers (bench/run.sh finds them next to the binary).
cp "$build/bench/nvte-bench-measure" "$build/bench/nvte-bench-explain-rate" "$carry/"
mkdir -p "$carry/cuda-trap" && cp -L "$build/bench/cuda-trap/libcuda.so.1" "$carry/cuda-trap/"
for t in ${NVTE_GPU_TEST_TARGETS:-}; do cp "$build/tests/$t" "$carry/" 2>/dev/null || true; done
source scripts/lib/bundle-libs.sh # the same library collection as scripts/build-bundle.sh
bins=("$carry/nvte-doctor" "$carry/nvte-bench-explain-rate")
for t in ${NVTE_GPU_TEST_TARGETS:-}; do bins+=("$carry/$t"); done
bundle_libraries "$carry/lib" 0 "${bins[@]}"
find "$carry" -maxdepth 1 -type f -perm -u+x -exec strip --strip-debug {} +
if [[ -n ${NVTE_GPU_PREBUILT:-} ]]; then
  for b in "${bins[@]}"; do
    [[ -f $b ]] && patchelf --force-rpath --set-rpath '$ORIGIN/lib' "$b"
  done
fi
if [[ -n ${NVTE_GPU_COMPARE_BUILD_TYPE:-} ]]; then
  cbuild=${build%/}-compare
  cmake -S . -B "$cbuild" -G Ninja -DCMAKE_BUILD_TYPE="$NVTE_GPU_COMPARE_BUILD_TYPE" -DNVTE_BUILD_TESTS=OFF ${NVTE_GPU_CMAKE_ARGS:-} \
    -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags -DCMAKE_BUILD_RPATH='$ORIGIN/../lib' >/dev/null
  cmake --build "$cbuild" -j"$(nproc)" --target nvte-doctor nvte-bench-explain-rate
  mkdir -p "$carry/compare"
  cp "$cbuild/nvte-doctor" "$cbuild/bench/nvte-bench-explain-rate" "$carry/compare/"
  strip --strip-debug "$carry/compare/nvte-doctor" "$carry/compare/nvte-bench-explain-rate"
fi
du -sh "$carry"
