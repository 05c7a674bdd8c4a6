#!/usr/bin/env bash
# Builds the portable nvte-doctor bundle: the relocatable bundle of scripts/build-bundle.sh, built
# so that it runs on glibc 2.31 and later (Debian 11+, Ubuntu 20.04+, RHEL 9, the NGC images).
#   scripts/build-portable.sh [--root DIR] [--build DIR] [--out DIR] [--mirror URL]
#   --root DIR    the Debian 11 (bullseye, glibc 2.31) root used as the sysroot; made with
#                 mmdebstrap when missing and kept, so later builds reuse it
#                 (default build-portable/bullseye-root)
#   --build DIR   the CMake build tree (default build-portable/build)
#   --out DIR     the bundle (default build-portable/nvte-doctor; layout: scripts/build-bundle.sh)
#   --mirror URL  the Debian mirror for the root (default http://deb.debian.org/debian)
# JOBS=N limits the compile to N jobs (default: ninja's, the cores + 2). The libraries compile as
# unity batches (-DNVTE_UNITY_BUILD=ON): a compiler cache rarely has this build's objects, and
# batches cost about half the CPU time of file-by-file (docs/records/performance.md).
# How: Debian 12's GCC 12 and CMake compile against the root (packaging/portable/toolchain.cmake):
# glibc and the compiled dependencies (yaml-cpp's static archive; libpci, libelf, libyaml,
# libsodium; the headers of curl and libsystemd, which are opened at run time) come from the
# root, the header-only ones (nlohmann/json, CLI11) from this machine, libstdc++ and libgcc are
# linked statically; the C libraries it still needs are carried from the root with $ORIGIN paths.
# Fails if any ELF file of the bundle asks for a glibc symbol newer than the root's 2.31.
# Needs root (mmdebstrap --mode=root, only while the root is made), mmdebstrap, patchelf, binutils.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
root=build-portable/bullseye-root build=build-portable/build out=build-portable/nvte-doctor
mirror=http://deb.debian.org/debian
while (($#)); do
  case "$1" in
    --root) root=${2:?--root needs a DIR}; shift ;;
    --build) build=${2:?--build needs a DIR}; shift ;;
    --out) out=${2:?--out needs a DIR}; shift ;;
    --mirror) mirror=${2:?--mirror needs a URL}; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-portable: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
root=$(realpath -m "$root") build=$(realpath -m "$build") out=$(realpath -m "$out")
glibc_max=2.31
for tool in g++-12 gcc-12 patchelf objdump pkg-config; do
  command -v "$tool" >/dev/null || { echo "build-portable: $tool is missing (apt-get install g++ patchelf binutils pkg-config)" >&2; exit 2; }
done

# The root: libc6-dev for glibc, libgcc-10-dev for libgcc(_eh).a, the compiled dependencies'
# -dev packages, and enough to run a program in it (libc-bin's ldconfig, dash, coreutils). The
# packages are extracted, not installed (mmdebstrap --variant=extract: no maintainer script runs,
# a sysroot needs only their files), then the loader's cache is made. The stamp names what it was
# made with; another list makes it again.
packages=libc6-dev,libgcc-10-dev,libyaml-cpp-dev,libcurl4-openssl-dev,libsystemd-dev,libpci-dev,libelf-dev,libyaml-dev,libsodium-dev,libc-bin,dash,coreutils
stamp="bullseye extract $packages"
if [[ ! -d $root || $(cat "$root/.nvte-portable-root" 2>/dev/null) != "$stamp" ]]; then
  command -v mmdebstrap >/dev/null || { echo "build-portable: mmdebstrap is missing (apt-get install mmdebstrap)" >&2; exit 2; }
  [[ $(id -u) -eq 0 ]] || { echo "build-portable: making the bullseye root needs root (mmdebstrap --mode=root)" >&2; exit 2; }
  echo "build-portable: making the bullseye root in $root (once)" >&2
  rm -rf "$root" "$root.tmp"
  mkdir -p "$(dirname "$root")"
  start=$SECONDS
  mmdebstrap --quiet --mode=root --variant=extract --include="$packages" bullseye "$root.tmp" "$mirror" >&2
  # Absolute symlinks (lib64/ld-linux-x86-64.so.2, the -dev packages' libfoo.so) would point the
  # linker into this machine's /lib: made relative, they stay inside the root.
  find "$root.tmp" -type l -lname '/*' | while read -r link; do
    ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$root.tmp$(readlink "$link")")" "$link"
  done
  chroot "$root.tmp" /sbin/ldconfig
  rm -rf "$root.tmp"/var/lib/apt/lists/* "$root.tmp"/var/cache/apt/*
  echo "$stamp" > "$root.tmp/.nvte-portable-root"
  mv "$root.tmp" "$root"
  echo "build-portable: root made in $((SECONDS - start)) s ($(du -sh "$root" 2>/dev/null | cut -f1))" >&2
fi

# Header-only dependencies from this machine (the root's are too old), with their CMake packages.
for dir in /usr/include/nlohmann /usr/include/CLI /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11; do
  [[ -d $dir ]] || { echo "build-portable: $dir is missing (apt-get install nlohmann-json3-dev libcli11-dev)" >&2; exit 2; }
  mkdir -p "$root$(dirname "$dir")"
  rm -rf "${root:?}$dir"
  cp -a "$dir" "$root$dir"
done

# yaml-cpp is the one C++ library among the dependencies: its shared library needs a shared
# libstdc++ (GCC 10's), so the static archive of bullseye's yaml-cpp 0.6.3 is linked instead, through
# a CMake package written here (Debian's names the shared library by an absolute path).
cat > "$root/usr/lib/x86_64-linux-gnu/cmake/yaml-cpp/yaml-cpp-config.cmake" <<'CMAKE'
# Written by nvte-doctor's scripts/build-portable.sh: yaml-cpp linked statically.
if(NOT TARGET yaml-cpp)
  add_library(yaml-cpp STATIC IMPORTED)
  set_target_properties(yaml-cpp PROPERTIES IMPORTED_LOCATION "${CMAKE_SYSROOT}/usr/lib/x86_64-linux-gnu/libyaml-cpp.a")
endif()
set(yaml-cpp_FOUND TRUE)
CMAKE

mkdir -p "$build"
compat=$build/glibc-compat.o
g++-12 -std=c++20 -O2 -fPIC --sysroot="$root" -nostdinc++ -isystem /usr/include/c++/12 \
  -isystem /usr/include/x86_64-linux-gnu/c++/12 -c packaging/portable/glibc-compat.cpp -o "$compat"
export PKG_CONFIG_SYSROOT_DIR=$root
export PKG_CONFIG_LIBDIR=$root/usr/lib/x86_64-linux-gnu/pkgconfig:$root/usr/share/pkgconfig
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVTE_BUILD_TESTS=OFF -DNVTE_UNITY_BUILD=ON \
  -DCMAKE_TOOLCHAIN_FILE="$src/packaging/portable/toolchain.cmake" \
  -DNVTE_PORTABLE_ROOT="$root" -DNVTE_PORTABLE_COMPAT="$compat" >/dev/null
cmake --build "$build" ${JOBS:+-j "$JOBS"} --target nvte-doctor man >&2 # nice it from outside (nice -n 5 ...)

scripts/build-bundle.sh --binary "$build/nvte-doctor" --out "$out" --lib-root "$root" --man "$build/man"
source scripts/lib/bundle-libs.sh
mapfile -t elves < <(find "$out" -type f -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print)
for elf in "${elves[@]}"; do
  need=$(bundle_glibc_floor "$elf")
  if [[ -n $need && $(printf '%s\n%s\n' "$need" "$glibc_max" | sort -V | tail -n 1) != "$glibc_max" ]]; then
    echo "build-portable: ${elf#"$out"/} needs GLIBC_$need, newer than $glibc_max" >&2
    exit 1
  fi
  if objdump -p "$elf" | grep -Eq 'NEEDED +lib(stdc\+\+|gcc_s)\.so'; then
    echo "build-portable: ${elf#"$out"/} needs a shared libstdc++ or libgcc_s" >&2
    exit 1
  fi
done
# The glibc it was built against and is tested on (the chroot of PackagingPortable): the wheel's
# manylinux tag names this one, never below the floor above (build-wheel.py).
echo "built-against: glibc $glibc_max (Debian 11 root)" >> "$out/MANIFEST"
echo "build-portable: $out: ${#elves[@]} ELF files, none needs a glibc newer than $glibc_max" >&2
