#!/usr/bin/env bash
# Packs the portable bundle and its wheel for the GPU node (issue 39): one xz tarball in
# .gpu-portable/ (git-ignored; carry it beside the checkout), which `scripts/gpu-validate.sh
# portable` unpacks there and runs (the bundle with an empty environment, the wheel installed into
# a fresh venv of the node's python). The device carry limit is 64 MiB in all and the tracked tree
# takes most of it, so the pack must stay under NVTE_PORTABLE_CARRY_MAX_MIB (default 10): it
# fails, naming the size, above that.
#   scripts/portable-carry.sh [--bundle DIR] [--wheel FILE] [--out DIR]
#   --bundle DIR  the bundle (default build-portable/nvte-doctor, scripts/build-portable.sh)
#   --wheel FILE  the wheel (default: built from the bundle with scripts/build-wheel.py into
#                 build-portable/)
#   --out DIR     where portable.tar.xz goes (default .gpu-portable)
# Layout of the tarball: portable/ (the bundle as built) and wheel/<the .whl>.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=build-portable/nvte-doctor wheel="" out=.gpu-portable
while (($#)); do
  case "$1" in
    --bundle) bundle=${2:?--bundle needs a DIR}; shift ;;
    --wheel) wheel=${2:?--wheel needs a FILE}; shift ;;
    --out) out=${2:?--out needs a DIR}; shift ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "portable-carry: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
max_mib=${NVTE_PORTABLE_CARRY_MAX_MIB:-10}
[[ -x $bundle/bin/nvte-doctor && -f $bundle/MANIFEST ]] ||
  { echo "portable-carry: no bundle in $bundle (scripts/build-portable.sh makes it)" >&2; exit 2; }
if [[ -z $wheel ]]; then
  python=python3
  [[ -x /usr/bin/python3 ]] && python=/usr/bin/python3 # Debian's, with python3-wheel
  wheel=$("$python" scripts/build-wheel.py --bundle "$bundle" --out build-portable)
fi
[[ -f $wheel ]] || { echo "portable-carry: no wheel $wheel" >&2; exit 2; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/wheel"
cp -a "$bundle" "$stage/portable"
cp "$wheel" "$stage/wheel/"
mkdir -p "$out"
tar -C "$stage" --owner=0 --group=0 --sort=name -cf - portable wheel | xz -T0 -9 >"$out/portable.tar.xz.partial"
mv "$out/portable.tar.xz.partial" "$out/portable.tar.xz"
bytes=$(stat -c %s "$out/portable.tar.xz")
echo "portable-carry: $out/portable.tar.xz, $((bytes / 1024)) KiB ($(du -sh "$bundle" | cut -f1) bundle," \
  "$(($(stat -c %s "$wheel") / 1024)) KiB wheel $(basename "$wheel"))" >&2
if ((bytes > max_mib * 1024 * 1024)); then
  echo "portable-carry: $((bytes / 1024)) KiB is over the carry budget of $max_mib MiB" >&2
  exit 1
fi
