#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages only), configures and builds nvte-doctor in build/.
# Safe to run again: apt-get runs only when a package is missing, and the build is incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ pkg-config libpci-dev libyaml-cpp-dev libcurl4-openssl-dev
          nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libelf-dev libsystemd-dev scdoc
          libyaml-dev python3-jsonschema prometheus zsh libsodium-dev)
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

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVTE_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
