#!/usr/bin/env bash
# Builds the Debian package: configures a release tree in build-deb/ (or $1) with install prefix
# /usr and Debian's hardening flags from dpkg-buildflags, builds the binary and the man pages,
# packages with CPack's DEB generator (packaging/CMakeLists.txt: version from
# packaging/debian/changelog, Depends from dpkg-shlibdeps, conffiles, maintainer scripts) and
# runs lintian when it is installed. Prints the path of the .deb on its last line.
# Usage: scripts/build-deb.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-deb}

for tool in cmake ninja dpkg-buildflags dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || { echo "build-deb: $tool is missing (scripts/bootstrap.sh installs it)" >&2; exit 1; }
done

export DEB_BUILD_MAINT_OPTIONS=hardening=+all
cxxflags="$(dpkg-buildflags --get CXXFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
ldflags="$(dpkg-buildflags --get LDFLAGS)"

# Warnings are not errors here: a new compiler's warning must not stop a release build.
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
      -DNVTE_BUILD_TESTS=OFF -DNVTE_WERROR=OFF \
      -DCMAKE_CXX_FLAGS="$cxxflags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" >/dev/null
cmake --build "$dir" -j"$(nproc)"
(cd "$dir" && cpack -G DEB >/dev/null)
deb=$(ls -t "$dir"/nvte-doctor_*.deb | head -n 1)

if command -v lintian >/dev/null; then
  lintian_args=(--tag-display-limit 0)
  [[ $(id -u) -ne 0 ]] || lintian_args+=(--allow-root)
  report=$(lintian "${lintian_args[@]}" "$deb" 2>&1 || true)
  [[ -z "$report" ]] || echo "$report" >&2
  if grep -q '^E: ' <<< "$report"; then
    echo "build-deb: lintian reports errors in $deb" >&2
    exit 1
  fi
else
  echo "build-deb: lintian not installed, package not checked (apt-get install lintian)" >&2
fi
echo "$deb"
