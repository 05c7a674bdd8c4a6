#!/usr/bin/env bash
# Builds the relocatable nvte-doctor bundle: the unit that travels into a job's container (the
# preflight's init container copies it from the nvte-doctor image; docs/kubernetes.md) or onto a
# node or image without the Debian package.
#   scripts/build-bundle.sh [--binary FILE] [--out DIR] [--lib-root DIR] [--man DIR]
#   --lib-root DIR  take the libraries from the root filesystem DIR (by their DT_NEEDED names, as
#                   its loader would find them), not from this machine: what scripts/build-portable.sh
#                   does for a binary built against that root
#   --man DIR       the built man pages (default: build/man when it has them)
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
#   share/man/man{1,5}/         the man pages (man -M DIR/share/man nvte-doctor), when built
#   share/bash-completion/completions/nvte-doctor, share/zsh/vendor-completions/_nvte-doctor
#   MANIFEST                    version, the oldest glibc it runs on, the carried libraries
# Without --binary it builds build/nvte-doctor first. Needs patchelf and objdump (binutils).
set -euo pipefail
cd "$(dirname "$0")/.."
binary="" out=build-bundle/nvte-doctor lib_root="" man=build/man
while (($#)); do
  case "$1" in
    --binary) binary=${2:?--binary needs a FILE}; shift ;;
    --out) out=${2:?--out needs a DIR}; shift ;;
    --lib-root) lib_root=${2:?--lib-root needs a DIR}; shift ;;
    --man) man=${2:?--man needs a DIR}; shift ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
if [[ -n $lib_root ]]; then
  bundle_libraries_from_root "$out/lib" "$lib_root" "$binary"
else
  bundle_libraries "$out/lib" 1 "$binary"
fi
patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$out/bin/nvte-doctor"
for lib in "$out"/lib/*; do [[ -e $lib ]] || continue; patchelf --force-rpath --set-rpath '$ORIGIN' "$lib"; done
cp packaging/integrations/preflight/nvte-doctor-preflight "$out/bin/"
# What `cmake --install` lays out under share/nvte-doctor: the rules' YAML files and the schemas.
(cd rules && find . -name '*.yaml' -exec cp --parents {} "$out/share/nvte-doctor/rules/" \;)
cp packaging/schema/report.schema.json packaging/schema/explain.schema.json "$out/share/nvte-doctor/"
cp src/selftest/selftest.py "$out/share/nvte-doctor/"
for page in "$man"/*.[0-9].gz; do
  [[ -e $page ]] || continue
  section=${page%.gz}; section=${section##*.}
  mkdir -p "$out/share/man/man$section" && cp "$page" "$out/share/man/man$section/"
done
mkdir -p "$out/share/bash-completion/completions" "$out/share/zsh/vendor-completions"
cp packaging/completions/nvte-doctor.bash "$out/share/bash-completion/completions/nvte-doctor"
cp packaging/completions/_nvte-doctor "$out/share/zsh/vendor-completions/"

version=$("$out/bin/nvte-doctor" --version)
glibc=$(bundle_glibc_floor "$out/bin/nvte-doctor" $(find "$out/lib" -type f))
{
  echo "version: $version"
  echo "glibc: >= $glibc"
  echo "libraries:"
  for lib in "$out"/lib/*; do [[ -e $lib ]] && echo "  - $(basename "$lib")"; done
} > "$out/MANIFEST"
echo "build-bundle: $out ($version, glibc >= $glibc, $(du -sh "$out" | cut -f1))" >&2
