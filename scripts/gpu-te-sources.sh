#!/usr/bin/env bash
# Packs what scripts/gpu-build-te.sh needs on the GPU node into .gpu-te/ (git-ignored; it travels
# with the working tree, ~6 MB): TE's source at TAG without .git, the exact cudnn-frontend and
# cutlass commits TE's 3rdparty/ submodules point at for that tag (cudnn-frontend's include/ and
# cmake/, cutlass's include/ and tools/util/include/), and from Debian's packages pybind11 (laid
# out as the Python package TE's build imports, with share/cmake/pybind11 and include/) and the
# pure-Python pydantic 1.10 that TE imports (the node has no package index).
#
#   scripts/gpu-te-sources.sh TAG MIRRORS
# MIRRORS holds bare clones named NVIDIA+TransformerEngine/repo, NVIDIA+cudnn-frontend/repo and
# NVIDIA+cutlass/repo (the search tool's fetch lays them out so under /work/.mirror).
set -euo pipefail
cd "$(dirname "$0")/.."
TAG=${1:?usage: scripts/gpu-te-sources.sh TAG MIRRORS}
M=${2:?usage: scripts/gpu-te-sources.sh TAG MIRRORS}
TE=$M/NVIDIA+TransformerEngine/repo
out=.gpu-te
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
submodule() { git -C "$TE" ls-tree "$TAG" "3rdparty/$1" | awk '{print $3}'; }
fe=$(submodule cudnn-frontend)
cu=$(submodule cutlass)
[[ -n $fe && -n $cu ]] || { echo "gpu-te-sources: $TAG has no cudnn-frontend/cutlass submodule (v2.18 takes the nvidia-cudnn-frontend wheel)" >&2; exit 3; }
git -C "$M/NVIDIA+cudnn-frontend/repo" cat-file -e "$fe^{commit}" 2>/dev/null ||
  { echo "gpu-te-sources: cudnn-frontend $fe (pinned by $TAG) is not in the mirror" >&2; exit 3; }
git -C "$TE" archive --prefix=te/ "$TAG" | tar x -C "$tmp"
rm -rf "$tmp"/te/3rdparty/* "$tmp"/te/docs "$tmp"/te/examples "$tmp"/te/tests "$tmp"/te/benchmarks
mkdir -p "$tmp/te/3rdparty/cudnn-frontend" "$tmp/te/3rdparty/cutlass"
git -C "$M/NVIDIA+cudnn-frontend/repo" archive "$fe" include cmake | tar x -C "$tmp/te/3rdparty/cudnn-frontend"
git -C "$M/NVIDIA+cutlass/repo" archive "$cu" include tools/util/include | tar x -C "$tmp/te/3rdparty/cutlass"
# The commit, for docs/validation.md (TE's own version string carries no hash without .git).
git -C "$TE" rev-parse "$TAG^{commit}" >"$tmp/te/COMMIT"
mkdir -p "$out"
rm -f "$out"/te-src-*.tar.gz
tar czf "$out/te-src-$TAG.tar.gz" -C "$tmp" te

(cd "$tmp" && apt-get download -qq python3-pydantic python3-pybind11 pybind11-dev 2>/dev/null)
for d in "$tmp"/*.deb; do dpkg-deb -x "$d" "$tmp/x"; done
dist=$tmp/x/usr/lib/python3/dist-packages
rm -rf "$out/py" "$out/pybind" && mkdir -p "$out/py" "$out/pybind/pybind11/share/cmake" "$out/pybind/pybind11/include"
cp -r "$dist"/pydantic "$dist"/pydantic-*.egg-info "$out/py/"
cp -L "$dist"/pybind11/*.py "$dist"/pybind11/py.typed "$out/pybind/pybind11/"
cp -r "$dist"/pybind11-*.dist-info "$out/pybind/"
cp -r "$tmp/x/usr/include/pybind11" "$out/pybind/pybind11/include/"
cp -r "$tmp/x/usr/lib/cmake/pybind11" "$out/pybind/pybind11/share/cmake/"
du -sh "$out"/*
