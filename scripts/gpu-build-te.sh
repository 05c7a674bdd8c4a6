#!/usr/bin/env bash
# Builds TransformerEngine from source on the GPU node, where no package index is reachable, and
# installs it into a scratch prefix. Everything the build needs travels in .gpu-te/ (git-ignored),
# made here by scripts/gpu-te-sources.sh: TE's source at a release tag (no .git), the
# cudnn-frontend and cutlass trees TE's 3rdparty/ submodules point at for that tag (headers and
# cudnn-frontend's cmake/), Debian's pybind11 rearranged as the Python package TE's build asks for
# (pybind11/share/cmake/pybind11), and Debian's pure-Python pydantic 1.10 (TE imports it).
#
#   scripts/gpu-build-te.sh start    unpack and start the build detached (setsid), return at once
#   scripts/gpu-build-te.sh wait S   poll until the build ends or S seconds pass; 0 when installed
#   scripts/gpu-build-te.sh install  install a wheel that travelled in .gpu-te/wheel/ (no build)
#   scripts/gpu-build-te.sh env      print the exports that put the installed TE on PYTHONPATH
#
# The build is sm90 only, against the node's torch venv and its cuDNN/NCCL wheels' headers:
# NVTE_FRAMEWORK=pytorch NVTE_CUDA_ARCHS=90 MAX_JOBS=16, `pip wheel --no-build-isolation
# --no-deps --no-index`, then `pip install --no-deps --target $TE_PREFIX` of the wheel. The wheel
# is copied to $OUT in 15 MiB pieces (te-wheel.part-*) so that a later call can carry it back
# (cat .gpu-te/wheel/te-wheel.part-* > the .whl) and skip the ~7 minute build.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=${TE_WORK:-/tmp/te-build}
TE_PREFIX=${TE_PREFIX:-/tmp/te-prefix}
PY=${PY:-/opt/torch/.venv/bin/python3}
[[ -x $PY ]] || PY=$(command -v python3)
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
LOG=$WORK/build.log

te_env() {
  echo "export PYTHONPATH=$TE_PREFIX:$ROOT/.gpu-te/py\${PYTHONPATH:+:\$PYTHONPATH}"
}

start() {
  local src
  src=$(ls "$ROOT"/.gpu-te/te-src-*.tar.gz 2>/dev/null | head -1)
  [[ -n $src ]] || { echo "gpu-build-te: no .gpu-te/te-src-*.tar.gz (run scripts/gpu-te-sources.sh here first)" >&2; return 3; }
  rm -rf "$WORK" && mkdir -p "$WORK"
  tar xzf "$src" -C "$WORK"
  echo "$(basename "$src")" >"$WORK/source"
  # Detached so that it outlives one device command; `wait` polls for $WORK/rc.
  setsid bash -c "
    cd '$WORK/te' || exit 1
    export NVTE_FRAMEWORK=pytorch NVTE_CUDA_ARCHS=90 MAX_JOBS=16 NVTE_BUILD_THREADS_PER_JOB=1
    export CUDNN_PATH='$SITE/nvidia/cudnn' CMAKE_PREFIX_PATH='$SITE/nvidia/nccl'
    export PYTHONPATH='$ROOT/.gpu-te/pybind:$ROOT/.gpu-te/py'
    export PATH=\"\$(dirname '$PY'):\$PATH\"
    start=\$(date +%s)
    '$PY' -m pip wheel --no-build-isolation --no-deps --no-index -v -w '$WORK/wheel' . >'$LOG' 2>&1
    rc=\$?
    echo \$((\$(date +%s) - start)) >'$WORK/seconds'
    if [[ \$rc == 0 ]]; then
      rm -rf '$TE_PREFIX' && '$PY' -m pip install -q --no-deps --no-index --target '$TE_PREFIX' '$WORK'/wheel/*.whl >>'$LOG' 2>&1
      rc=\$?
    fi
    echo \$rc >'$WORK/rc'
  " </dev/null >/dev/null 2>&1 &
  echo "gpu-build-te: started in $WORK (log $LOG)"
}

wait_build() {
  local limit=${1:-540} waited=0
  [[ -d $WORK ]] || { echo "gpu-build-te: no build in $WORK to wait for (start it first)" >&2; return 3; }
  while [[ ! -f $WORK/rc ]] && ((waited < limit)); do sleep 5; waited=$((waited + 5)); done
  if [[ ! -f $WORK/rc ]]; then
    echo "gpu-build-te: still building after ${waited}s: $(grep -c 'Building\|nvcc' "$LOG" 2>/dev/null) steps logged"
    tail -3 "$LOG"
    return 1
  fi
  local rc
  rc=$(cat "$WORK/rc")
  echo "gpu-build-te: $(cat "$WORK/source") built in $(cat "$WORK/seconds" 2>/dev/null) s, rc=$rc"
  if [[ $rc != 0 ]]; then
    grep -n -i -m 20 'error' "$LOG"
    tail -30 "$LOG"
    [[ -n ${OUT:-} ]] && cp "$LOG" "$OUT/te-build.log"
    return 1
  fi
  ls -l "$WORK"/wheel/*.whl
  if [[ -n ${OUT:-} ]]; then
    (cd "$OUT" && split -b 15M -d "$(ls "$WORK"/wheel/*.whl)" te-wheel.part-)
    ls "$WORK"/wheel/*.whl | xargs -n1 basename >"$OUT/te-wheel.name"
    gzip -c "$LOG" >"$OUT/te-build.log.gz"
  fi
  return 0
}

install_wheel() {
  local name
  name=$(cat "$ROOT/.gpu-te/wheel/te-wheel.name" 2>/dev/null) || { echo "gpu-build-te: no .gpu-te/wheel/te-wheel.name" >&2; return 3; }
  mkdir -p "$WORK/wheel"
  cat "$ROOT"/.gpu-te/wheel/te-wheel.part-* >"$WORK/wheel/$name"
  rm -rf "$TE_PREFIX" && "$PY" -m pip install -q --no-deps --no-index --target "$TE_PREFIX" "$WORK/wheel/$name"
}

case ${1:-} in
  start) start ;;
  wait) wait_build "${2:-540}" ;;
  install) install_wheel ;;
  env) te_env ;;
  *) echo "usage: scripts/gpu-build-te.sh start|wait [SECONDS]|install|env" >&2; exit 2 ;;
esac
