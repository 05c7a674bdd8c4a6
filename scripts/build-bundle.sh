#!/usr/bin/env bash
# Builds the relocatable nvte-doctor bundle: the unit that travels into a job's container (the
# preflight's init container copies it from the nvte-doctor image; docs/kubernetes.md) or onto a
# node or image without the Debian package.
#   scripts/build-bundle.sh [--binary FILE] [--out DIR]
# Layout of DIR (default build-bundle/nvte-doctor; the nvte-doctor image carries it at
# /opt/nvte-doctor):
#   bin/nvte-doctor             the binary with DT_RPATH=$ORIGIN/../lib (set with patchelf; RPATH,
#                               not RUNPATH, also covers its libraries' own dependencies), so it
#                               runs without LD_LIBRARY_PATH and the environment it probes stays
#                               the job's
#   bin/nvte-doctor-preflight   the job's first step (packaging/integrations/preflight)
#   lib/                        every shared library the binary needs except glibc's own,
#                               libstdc++ and libgcc_s included (scripts/lib/bundle-libs.sh)
#   share/nvte-doctor/rules/    the rules, found relative to the binary
#   share/nvte-doctor/*.json    the report and explain JSON Schemas
#   share/nvte-doctor/selftest.py  the self-test's Python tier: a binary outside its build tree
#                               runs only this copy, never the build machine's checkout
#   MANIFEST                    version, the oldest glibc it runs on, the carried libraries
# Without --binary it builds build/nvte-doctor first. Needs patchelf and objdump (binutils).
set -euo pipefail
cd "$(dirname "$0")/.."
binary="" out=build-bundle/nvte-doctor
while (($#)); do
  case "$1" in
    --binary) binary=${2:?--binary needs a FILE}; shift ;;
    --out) out=${2:?--out needs a DIR}; shift ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-bundle: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
out=$(realpath -m "$out")
command -v patchelf >/dev/null || { echo "build-bundle: patchelf is missing (apt-get install patchelf)" >&2; exit 2; }
if [[ -z $binary ]]; then
  cmake --build build --target nvte-doctor >&2
  binary=build/nvte-doctor
fi
[[ -x $binary ]] || { echo "build-bundle: no executable $binary" >&2; exit 2; }

source scripts/lib/bundle-libs.sh
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/share/nvte-doctor/rules"
cp "$binary" "$out/bin/nvte-doctor"
strip --strip-debug "$out/bin/nvte-doctor"
bundle_libraries "$out/lib" 1 "$binary"
patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$out/bin/nvte-doctor"
for lib in "$out"/lib/*; do patchelf --force-rpath --set-rpath '$ORIGIN' "$lib"; done
cp packaging/integrations/preflight/nvte-doctor-preflight "$out/bin/"
# What `cmake --install` lays out under share/nvte-doctor: the rules' YAML files and the schemas.
(cd rules && find . -name '*.yaml' -exec cp --parents {} "$out/share/nvte-doctor/rules/" \;)
cp packaging/schema/report.schema.json packaging/schema/explain.schema.json "$out/share/nvte-doctor/"
cp src/selftest/selftest.py "$out/share/nvte-doctor/"

version=$("$out/bin/nvte-doctor" --version)
glibc=$(bundle_glibc_floor "$out/bin/nvte-doctor" "$out"/lib/*)
{
  echo "version: $version"
  echo "glibc: >= $glibc"
  echo "libraries:"
  for lib in "$out"/lib/*; do echo "  - $(basename "$lib")"; done
} > "$out/MANIFEST"
echo "build-bundle: $out ($version, glibc >= $glibc, $(du -sh "$out" | cut -f1))" >&2
