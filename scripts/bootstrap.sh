#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages only), configures and builds nvte-doctor in build/.
# Safe to run again: apt-get runs only when a package is missing, and the build is incremental.
#
#   scripts/bootstrap.sh            everything: the binary, man pages, the test suite, bench tools
#   scripts/bootstrap.sh --doctor   only what running the doctor needs: the build dependencies of
#                                   the binary, and the binary itself (the quick first run)
#
# Both use the same build/ directory and flags, so the full bootstrap after --doctor compiles
# only what --doctor left out.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=all
case "${1:-}" in
  "") ;;
  --doctor) mode=doctor ;;
  *) echo "usage: scripts/bootstrap.sh [--doctor]" >&2; exit 2 ;;
esac

# What the binary needs to build; then what the tests, man pages and tools need besides.
packages=(cmake ninja-build g++ pkg-config libpci-dev libyaml-cpp-dev libcurl4-openssl-dev
          nlohmann-json3-dev libcli11-dev libelf-dev libsystemd-dev libyaml-dev libsodium-dev)
if [[ $mode == all ]]; then
  packages+=(libgtest-dev libgmock-dev scdoc python3-jsonschema prometheus zsh fish patchelf nginx mmdebstrap umoci)
  # The wheel's test (PackagingWheel): packed by python3-wheel, installed into a fresh venv.
  packages+=(python3-wheel python3-venv)
  # strace: threads_same_reports checks that NVTE_DOCTOR_THREADS=1 starts no thread.
  packages+=(strace)
  # What the suite runs that a minimal Debian 12 lacks (a fresh root failed without them): file
  # (CPack's .deb generator, PackageDeb and PackagingImage), curl (PackagingCollect's uploads), git
  # (the commit-subject checks).
  packages+=(file curl git)
  # dpkg-shlibdeps (dpkg-dev), which CPack's .deb generator runs for the package's Depends:
  # PackageDeb and PackagingImage failed without it in a fresh root (g++ does not pull it in
  # with --no-install-recommends).
  packages+=(dpkg-dev)
  # The style checks of the suite (tests/style): clang-format and clang-tidy 14 on the change.
  packages+=(clang-format clang-tidy)
  # kubectl renders the Kustomize tree in ctest (Kustomize.*): Debian's kubernetes-client (kubectl
  # 1.20, Kustomize v2.0.3), unless a kubectl is already installed (another package owning
  # /usr/bin/kubectl would conflict with it; the tree renders with v2 and v5 alike).
  command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}" >&2
  as_root=()
  [[ $(id -u) -eq 0 ]] || as_root=(sudo)
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The tests are configured only once their dependencies are installed; a tree that already has
# them keeps them (a later --doctor run does not reconfigure it).
tests=ON
if [[ $mode == doctor ]]; then
  tests=OFF
  if grep -qs '^NVTE_BUILD_TESTS:BOOL=ON' build/CMakeCache.txt; then tests=ON; fi
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVTE_WERROR=ON -DNVTE_BUILD_TESTS=$tests >/dev/null
if [[ $mode == doctor ]]; then
  cmake --build build -j"$(nproc)" --target nvte-doctor
else
  cmake --build build -j"$(nproc)"
fi
