#!/usr/bin/env bash
# GPU validation of nvte-doctor, run by the lead on the GPU node from the repository root with
# the prebuilt binary in .gpu-carry/ (scripts/gpu-carry.sh, with
# NVTE_GPU_TEST_TARGETS=selftest_gpu_test so the GPU test is carried too):
#
#   scripts/gpu-validate.sh [all|basic|matrix|interleaved|python|nccl|gputest|models|coldstart|readme|bench|te|te-models|cublas|preflight|hostcheck|fuzz|ext|bench-native|cudnn-support|verify-fix|verdict-truth|portable|threads|pytier|pytier-te|pyreuse|bytecode|plancache]
#
# portable (issue 39): the portable bundle (scripts/build-portable.sh) and its wheel
# (scripts/build-wheel.py), carried packed as .gpu-portable/portable.tar.xz (scripts/portable-carry.sh,
# under 10 MiB; NVTE_PORTABLE_PACK names another) and unpacked into $TMPDIR, or unpacked already
# (NVTE_PORTABLE_BUNDLE, NVTE_WHEEL), on this distribution: the bundle's --version, probe, check
# with its own rules and explain with an empty environment, its self-test with its own
# selftest.py and the torch venv's interpreter; then the wheel installed offline into a fresh venv
# of the node's python (/usr/bin/python3 -m venv; where the distribution's python has no ensurepip,
# the torch venv's base interpreter, else a venv without pip filled by the torch venv's pip) by an
# unprivileged user and run from there (nvte-doctor and python -m nvte_doctor, probe examining
# that venv). portable-verdicts prints one PASS/FAIL line per claim.
#
# hostcheck: the Kubernetes DaemonSet's mode on a real driver: `run --root /host` as uid 10001
# with the host's paths bind-mounted read-only (unshare -m, root), no GPU device; hostcheck-verdict
# prints PASS when its report names the live probe's driver version and GPU count.
#
# cublas: the doctor's cuBLAS / cuBLASLt copies and the copy torch loads against /proc/self/maps of
# a process that ran a GEMM on the GPU in the venv, cublasLtGetVersion() against the version the
# probe read without loading, then bench/ (probe against nvidia-smi --query-gpu) and probe -vv's
# phase laps; scripts/gpu-cublas-verdicts.py prints one PASS/FAIL line per claim.
#
# fuzz: no GPU needed, only the node's cores. The fuzzers packed by scripts/fuzz-carry.sh
# (.gpu-fuzz/fuzz.tar.xz) run as one campaign (scripts/fuzz-campaign.sh) on every core for
# FUZZ_SECONDS (default 360), continuing from the corpora packed with them; summary.md, the logs,
# any crash artifacts, the grown corpora (fuzz-state.tar.xz, to unpack into build-fuzz/ here) and
# the updated ledger (totals.tsv, to copy over tests/fuzz/totals.tsv here) land in $OUT/fuzz/.
# FUZZ_TARGETS (space-separated) limits the campaign to those targets (default: every target
# short of 10^7). Back-to-back calls on a node still held: FUZZ_RESUME=1 continues from the
# corpora the last call grew there instead of unpacking the pack again, FUZZ_STATE=0 leaves
# fuzz-state.tar.xz out (the last call sends it). With a campaign on this machine running at the
# same time, add the summary's "executions this run" to the ledger instead of copying it over.
#
# te: a real TransformerEngine (scripts/gpu-build-te.sh builds it from the sources in .gpu-te/, or
# installs the wheel a previous build sent back, .gpu-te/wheel/) and every claim about it: what
# the process maps in each import order with and without CUDNN_PATH (the truth), the doctor's
# probe and check against it (TE importable or not: first without pydantic), the self-test's TE
# selector and Python tier (default shape and the HF fixtures' shapes), and live conformance
# (tools/te-conformance/live.py) with each cuDNN copy TE can be made to load; the live records
# land in the stage's tarball (live/); TE_LIVE=0 leaves that out. te-models: the self-test's TE path at the HF fixtures' shapes.
#
# ext: link-time truth (issue 22): a real torch C++ extension compiled here against the venv's
# torch (g++ with torch's include and lib dirs, no network), laid out as flash-attn's
# flash_attn_2_cuda in a --target style directory on PYTHONPATH (a dist-info whose RECORD lists
# it); the doctor's native probe and check on it, and the truth (`import torch,
# flash_attn_2_cuda`, or ctypes.CDLL after `import torch` where the node has no Python.h); then
# the same source with -DNVTE_EXT_MISSING, which calls a c10 function torch does not have. With
# TE installed by the te stage ($TE_PREFIX), the same on TE's real libraries. ext-verdicts prints
# one PASS/FAIL line per claim.
#
# bench-native: issue 22's probe budget with the native probe running. TE installed as the te
# stage does ($TE_PREFIX, from .gpu-te/wheel) and the ext stage's flash-attn-like extension built
# here (reused when EXT_DIR already has it), both on PYTHONPATH; bench/run.sh (NVTE_BENCH_QUICK=1:
# probe, check, check + 3 workloads, nvidia-smi) in that environment, then probe -vv's laps (the
# native probe per object, the other probes). The summary gets bench.txt's ratios and the "native"
# meta line, which names what was linked (te and flash_attn must both be in it).
#
# cudnn-support (issue 38, item 4): at each HF fixture's shape (tests/fixtures/hf, as models runs
# them; CUDNN_SUPPORT_MODELS, a glob of fixture names, narrows the list) the self-test asks the cuDNN TE would load whether it supports the forward and
# backward graphs before building their plans (check cudnn_support, what TE 2.20 asks instead of
# its tables), then builds the plans; scripts/gpu-cudnn-support-verdicts.py prints one PASS/FAIL
# line per shape and pass: PASS when cuDNN's answer agrees with the plan build from heuristics
# mode A (supported and planned, or refused and not planned).
#
# plancache (issue 40 item 2): the self-test's kernel cache (src/selftest/kernel_cache.hpp). With
# CUDA_CACHE_DISABLE=1 and a fresh private cache directory (XDG_CACHE_HOME): one self-test at the
# default shape that compiles and fills it (coldstart's arguments), five that load from it, one
# with --no-cache, one after every cache file was corrupted (it must pass, compiling again), one
# more that loads what that run rewrote. plancache-verdicts prints one "run" line per self-test
# (wall time, where each plan and the reference came from, the checks' status and errors) and
# PASS/FAIL lines: every run passes, the first compiles and stores, runs 2-6 load both plans and
# the reference and give the compiled run's results, --no-cache compiles, the corrupted cache
# compiles again, and the target (cached runs' median <= 1 s).
#
# Every step is guarded (a timeout, its exit code recorded) and never stops the others. Logs
# go to $OUT/gpu-validate/ (or ./gpu-validate-out/), one per step with the command line, exit
# code and wall time, and are packed into $OUT/gpu-validate-STAGE.tar.gz with summary.txt next to it.
# The self-test matrix: head_dim 64/128/192/256 x causal/no_mask x bf16/fp16 x GQA 16/4 x
# bshd/sbhd, plus the interleaved layouts (sbh3d without GQA, sbhd_sbh2d / bshd_bsh2d with it).
# models: the self-test at the full shape of the four HF fixtures (tests/fixtures/hf), a
# Gemma-style head dim 256 and a sliding window of 4096 (seq 8192). coldstart: the CUDA tier at
# the default workload with CUDA_CACHE_DISABLE=1, five times, with every child's phases (JSON),
# then three times warm; NVTE_DOCTOR_BEFORE=path adds the same runs of another binary (with
# NVTE_PHASE_LOG set, for a build that logs its phases there; NVTE_DOCTOR_BEFORE_RULES: the rules
# directory it understands).
set -u
cd "$(dirname "$0")/.."
STAGE=${1:-all}
BIN=${NVTE_DOCTOR:-.gpu-carry/nvte-doctor}
[[ -x $BIN ]] || BIN=build/nvte-doctor
OUTDIR=${OUT:-$PWD/gpu-validate-out}
LOGS=$OUTDIR/gpu-validate
mkdir -p "$LOGS"
SUMMARY=$OUTDIR/summary.txt
export NVTE_DOCTOR_SELFTEST_PY=$PWD/src/selftest/selftest.py
PY=/opt/torch/.venv/bin/python3
[[ -x $PY ]] || PY=$(command -v python3 || echo python3)
# The cuDNN copy torch loads (the venv's wheel) for the GPU test; the doctor finds its own.
VENV_CUDNN=$(ls /opt/torch/.venv/lib/python3*/site-packages/nvidia/cudnn/lib/libcudnn.so.9 2>/dev/null | head -1)
VENV_NVRTC=$(ls /opt/torch/.venv/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13 2>/dev/null | head -1)
COMMON=(--rules rules)

step() { # step NAME TIMEOUT_S COMMAND...
  local name=$1 limit=$2; shift 2
  local log=$LOGS/$name.log start end rc
  start=$(date +%s.%N)
  { echo "\$ $*"; echo "# $(date -u +%FT%TZ) on $(hostname)"; } >"$log"
  timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  printf '%-34s rc=%-4s %8.2f s\n' "$name" "$rc" "$(awk -v a="$start" -v b="$end" 'BEGIN{print b-a}')" | tee -a "$SUMMARY"
  echo "# exit $rc" >>"$log"
  return 0
}

run_basic() {
  step env 60 bash -c 'date -u; uname -a; nvidia-smi; nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv; ls -l /usr/lib/x86_64-linux-gnu/libcudnn.so* /usr/lib/x86_64-linux-gnu/libnccl.so* 2>&1; echo LD_LIBRARY_PATH=$LD_LIBRARY_PATH'
  step probe 120 "$BIN" probe
  # The ground truth the probe must match: the copies torch itself maps.
  step torch-truth 120 "$PY" -c 'import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "nccl", torch.cuda.nccl.version())
print("\n".join(sorted({l.split()[-1] for l in open("/proc/self/maps") if any(k in l for k in ("libcudnn.so", "libnccl.so", "libnvrtc"))})))'
  for i in 1 2 3 4 5; do step "probe-time-$i" 60 "$BIN" probe --format json; done
  for i in 1 2 3; do step "nvidia-smi-query-$i" 60 nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv; done
  step probe-json 120 "$BIN" probe --format json
  step check 180 "$BIN" check "${COMMON[@]}"
  step check-json 180 "$BIN" check "${COMMON[@]}" --format json
  # The edge of the knowledge on a real node: its GPU, cuDNN and TE are modelled (no
  # knowledge-extrapolated, every gauge 0) unless the node is newer than the rules.
  step knowledge-horizon 180 bash -c "\"$BIN\" check --rules rules --format prometheus | grep -E '^nvte_doctor_knowledge_extrapolated|^nvte_doctor_finding_impact'; \"$BIN\" check --rules rules --format json | \"$PY\" -c 'import json,sys; print(json.dumps(json.load(sys.stdin)[\"knowledge\"], indent=1))'"
  step explain 120 "$BIN" explain "${COMMON[@]}" --workload-set qkv_format=bshd --workload-set head_dim_qk=192 \
    --workload-set num_gqa_groups=4 --workload-set attn_mask_type=causal --workload-set max_seqlen_q=4096
  step explain-sweep 120 "$BIN" explain "${COMMON[@]}" --sweep head_dim_qk=64,128,192,256 --sweep qkv_dtype=bf16,fp16
  step selftest-default 600 "$BIN" selftest "${COMMON[@]}" -v --python "$PY"
  step selftest-default-json 600 "$BIN" selftest "${COMMON[@]}" --format json --python "$PY"
  [[ -n $VENV_CUDNN ]] && step selftest-venv-cudnn 600 "$BIN" selftest "${COMMON[@]}" -v --python '' \
    --set cudnn.path="$VENV_CUDNN" ${VENV_NVRTC:+--set nvrtc.path="$VENV_NVRTC"} \
    --workload-set qkv_format=bshd --workload-set num_gqa_groups=4 --sweep head_dim_qk=64,128,192,256 --sweep attn_mask_type=no_mask,causal
  # A head dimension no cuDNN engine supports: the failure path, with cuDNN's own reason.
  step selftest-unsupported 300 "$BIN" selftest "${COMMON[@]}" -v --python '' --workload-set head_dim_qk=512 \
    --workload-set head_dim_v=512 --workload-set max_seqlen_q=512
  step check-selftest-json 600 "$BIN" check "${COMMON[@]}" --selftest --format json --python "$PY" \
    --workload-set qkv_format=bshd --workload-set attn_mask_type=causal --workload-set max_seqlen_q=1024
}

MATRIX=(--workload-set batch_size=2 --workload-set num_heads=16 --workload-set max_seqlen_q=512
        --sweep head_dim_qk=64,128,192,256 --sweep attn_mask_type=no_mask,causal --sweep qkv_dtype=bf16,fp16)

run_matrix() {
  # JSON only (one child per check, so the text rendering would double the device time); the
  # table in docs/records/validation.md is rendered from it.
  for layout in bshd_bshd_bshd sbhd_sbhd_sbhd; do
    step "matrix-$layout-json" 600 "$BIN" selftest "${COMMON[@]}" --format json --timeout 120 --python '' "${MATRIX[@]}" \
      --workload-set qkv_layout=$layout --sweep num_gqa_groups=16,4
  done
}

run_interleaved() {
  step matrix-sbh3d-json 600 "$BIN" selftest "${COMMON[@]}" --format json --timeout 120 --python '' "${MATRIX[@]}" \
    --workload-set qkv_layout=sbh3d --workload-set num_gqa_groups=16
  step matrix-sbhd_sbh2d-json 600 "$BIN" selftest "${COMMON[@]}" --format json --timeout 120 --python '' "${MATRIX[@]}" \
    --workload-set qkv_layout=sbhd_sbh2d --workload-set num_gqa_groups=4
  step matrix-bshd_bsh2d-json 600 "$BIN" selftest "${COMMON[@]}" --format json --timeout 120 --python '' "${MATRIX[@]}" \
    --workload-set qkv_layout=bshd_bsh2d --workload-set num_gqa_groups=4
}

run_python() {
  step python-tier 600 "$BIN" selftest "${COMMON[@]}" -v --format json --timeout 120 --python "$PY" \
    --workload-set qkv_format=bshd --workload-set batch_size=2 --workload-set max_seqlen_q=1024 \
    --sweep head_dim_qk=64,128,192,256 --sweep attn_mask_type=no_mask,causal --sweep num_gqa_groups=16,4
  step python-script-direct 300 "$PY" src/selftest/selftest.py \
    '{"workloads": [{"dtype": "fp16", "layout": "sbhd_sbhd_sbhd", "batch": 2, "heads": 16, "kv_heads": 4, "seq_q": 1024, "seq_kv": 1024, "dim_qk": 128, "dim_v": 128, "causal": true}]}'
  # Issue 40: the whole self-test with the Python tier at the default shape (target <= 3 s: the
  # step's wall time), and the tier's own split in the python check's result.timings.
  step python-tier-default 300 "$BIN" selftest "${COMMON[@]}" --format json --python "$PY"
}

run_nccl() {
  step nccl 300 "$BIN" selftest "${COMMON[@]}" -v --python '' --workload-set qkv_format=bshd
  step nccl-debug 300 env NCCL_DEBUG=INFO "$BIN" selftest "${COMMON[@]}" --format json --python '' --workload-set qkv_format=bshd
}

MODEL_SHAPE=(--workload-set batch_size=1 --workload-set max_seqlen_q=8192 --workload-set attn_mask_type=causal
             --workload-set qkv_format=bshd)

run_models() {
  local f name
  for f in tests/fixtures/hf/*/config.json; do
    name=$(basename "$(dirname "$f")")
    step "model-$name" 900 "$BIN" selftest "${COMMON[@]}" -v --python '' --hf-config "$f"
  done
  step model-gemma-style-d256 900 "$BIN" selftest "${COMMON[@]}" -v --python '' "${MODEL_SHAPE[@]}" \
    --workload-set num_heads=16 --workload-set num_gqa_groups=8 --workload-set head_dim_qk=256
  step model-sliding-window-4096 900 "$BIN" selftest "${COMMON[@]}" -v --python '' "${MODEL_SHAPE[@]}" \
    --workload-set num_heads=32 --workload-set num_gqa_groups=8 --workload-set head_dim_qk=128 --workload-set window_size=4096,0
  step model-deepseek-v3-json 900 "$BIN" selftest "${COMMON[@]}" --format json --python '' --hf-config tests/fixtures/hf/deepseek-v3/config.json
}

run_coldstart() {
  local i
  for i in 1 2 3 4 5; do step "cold-$i" 120 env CUDA_CACHE_DISABLE=1 "$BIN" selftest "${COMMON[@]}" --format json --python ''; done
  for i in 1 2 3; do step "warm-$i" 120 "$BIN" selftest "${COMMON[@]}" --format json --python ''; done
  if [[ -n ${NVTE_DOCTOR_BEFORE:-} ]]; then
    for i in 1 2 3 4 5; do
      step "before-cold-$i" 120 env CUDA_CACHE_DISABLE=1 NVTE_PHASE_LOG="$LOGS/before-phases-$i.log" "$NVTE_DOCTOR_BEFORE" selftest \
        --rules "${NVTE_DOCTOR_BEFORE_RULES:-rules}" --python ''
    done
  fi
}

run_plancache() {
  local i xdg=$OUTDIR/plancache-xdg J=$OUTDIR/plancache-json
  rm -rf "$xdg" "$J"
  mkdir -p "$xdg" "$J"
  chmod 700 "$xdg"
  # One self-test: its JSON to $J/NAME.json, its wall time into its log ("wall_s=").
  plancache_run() {
    local name=$1
    shift
    step "plancache-$name" 180 bash -c 'out=$1; shift; s=$(date +%s.%N); "$@" >"$out"; rc=$?; e=$(date +%s.%N)
      echo "wall_s=$(awk -v a="$s" -v b="$e" "BEGIN{print b-a}")"; exit $rc' _ "$J/$name.json" \
      env CUDA_CACHE_DISABLE=1 XDG_CACHE_HOME="$xdg" "$BIN" selftest "${COMMON[@]}" --format json --python '' "$@"
  }
  plancache_run fill
  step plancache-files 30 bash -c 'ls -la "$1/nvte-doctor" "$1/nvte-doctor/selftest-kernels"; stat -c "%a %U %s %n" "$1"/nvte-doctor/selftest-kernels/*' _ "$xdg"
  for i in 1 2 3 4 5; do plancache_run "cached-$i"; done
  plancache_run no-cache --no-cache
  # Two bytes in the middle of every cache file overwritten: each is then refused and rewritten.
  step plancache-corrupt 30 bash -c 'for f in "$1"/*.bin; do n=$(stat -c %s "$f"); printf "\xff\xfe" | dd of="$f" bs=1 seek=$((n / 2)) conv=notrunc status=none; echo "corrupted $f"; done' \
    _ "$xdg/nvte-doctor/selftest-kernels"
  plancache_run corrupted
  plancache_run reloaded
  step plancache-verdicts 60 "$PY" - "$J" "$LOGS" <<'PYEOF'
import json, os, re, statistics, sys
J, logs = sys.argv[1], sys.argv[2]
def log(name):
    try: return open(os.path.join(logs, "plancache-" + name + ".log")).read()
    except OSError: return ""
def rc(name):
    text = log(name)
    return int(text.rsplit("# exit ", 1)[1].split()[0]) if "# exit " in text else None
def wall(name):
    m = re.search(r"wall_s=([0-9.]+)", log(name))
    return float(m.group(1)) if m else None
def verdict(ok, claim): print(("PASS " if ok else "FAIL ") + claim)
def run(name):
    try: doc = json.load(open(os.path.join(J, name + ".json")))
    except (OSError, ValueError) as e: return {"name": name, "error": str(e), "checks": {}}
    checks = {c["check"]: c for c in doc.get("selftest", {}).get("checks", []) if c.get("check") in ("cudnn_sdpa", "cudnn_sdpa_bwd")}
    bad = [c["check"] + " " + c.get("status", "?") for c in doc.get("selftest", {}).get("checks", []) if c.get("status") in ("failed", "error")]
    return {"name": name, "checks": checks, "bad": bad}
def res(r, check): return r["checks"].get(check, {}).get("result", {}) or {}
def plan(r, check): return res(r, check).get("plan_cache", {}).get("source", "none")
def reference(r): return res(r, "cudnn_sdpa").get("reference_cache", {}).get("source", "none")
def ok(r): return not r.get("error") and len(r["checks"]) == 2 and all(c.get("status") == "ok" for c in r["checks"].values()) and not r["bad"]
names = ["fill"] + ["cached-%d" % i for i in range(1, 6)] + ["no-cache", "corrupted", "reloaded"]
runs = {n: run(n) for n in names}
for n in names:
    r = runs[n]
    f, b = res(r, "cudnn_sdpa"), res(r, "cudnn_sdpa_bwd")
    print("run %-10s rc=%s wall=%ss fwd=%s plan %s (%s) bwd=%s plan %s (%s) reference %s; fwd max_abs_err=%s bwd max_rel_err=%s%s" % (
        n, rc(n), wall(n), r["checks"].get("cudnn_sdpa", {}).get("status"), plan(r, "cudnn_sdpa"), f.get("plan_cache", {}).get("why_compiled", "-"),
        r["checks"].get("cudnn_sdpa_bwd", {}).get("status"), plan(r, "cudnn_sdpa_bwd"), b.get("plan_cache", {}).get("why_compiled", "-"),
        reference(r), f.get("max_abs_err"), b.get("max_rel_err"), (" error: " + r["error"]) if r.get("error") else ""))
for n in names:
    verdict(rc(n) in (0, 1) and ok(runs[n]), "run %s passes (cudnn_sdpa and cudnn_sdpa_bwd ok, no check failed)%s" % (n, "" if not runs[n].get("bad") else ": " + ", ".join(runs[n]["bad"])))
fill = runs["fill"]
verdict(plan(fill, "cudnn_sdpa") == plan(fill, "cudnn_sdpa_bwd") == "compiled" and all(res(fill, c).get("plan_cache", {}).get("stored") for c in ("cudnn_sdpa", "cudnn_sdpa_bwd")),
        "the first run compiles both plans and stores them")
for n in ["cached-%d" % i for i in range(1, 6)]:
    r = runs[n]
    verdict(plan(r, "cudnn_sdpa") == plan(r, "cudnn_sdpa_bwd") == "loaded" and reference(r) == "loaded", "run %s loads both plans and the reference from the cache" % n)
    verdict(all("runtime_compilation_seconds" not in res(r, c) for c in ("cudnn_sdpa", "cudnn_sdpa_bwd")), "run %s claims no compile time for a loaded plan" % n)
    same = all(res(r, c).get("engine", {}).get("index") == res(fill, c).get("engine", {}).get("index") for c in ("cudnn_sdpa", "cudnn_sdpa_bwd"))
    same = same and res(r, "cudnn_sdpa").get("max_abs_err") == res(fill, "cudnn_sdpa").get("max_abs_err")
    verdict(same, "run %s: the same engines and the same forward error as the compiled run (%s vs %s); backward max_rel_err %s vs %s" % (
        n, res(r, "cudnn_sdpa").get("max_abs_err"), res(fill, "cudnn_sdpa").get("max_abs_err"), res(r, "cudnn_sdpa_bwd").get("max_rel_err"), res(fill, "cudnn_sdpa_bwd").get("max_rel_err")))
nc = runs["no-cache"]
verdict(plan(nc, "cudnn_sdpa") == plan(nc, "cudnn_sdpa_bwd") == "compiled" and "off" in res(nc, "cudnn_sdpa").get("plan_cache", {}).get("why_compiled", ""),
        "--no-cache compiles both plans (the cache is off)")
co = runs["corrupted"]
verdict(plan(co, "cudnn_sdpa") == plan(co, "cudnn_sdpa_bwd") == "compiled" and reference(co) == "compiled", "the corrupted cache is refused: both plans and the reference compiled again")
re_ = runs["reloaded"]
verdict(plan(re_, "cudnn_sdpa") == plan(re_, "cudnn_sdpa_bwd") == "loaded", "the run after that loads what the corrupted run rewrote")
walls = [wall(n) for n in ["cached-%d" % i for i in range(1, 6)] if wall(n) is not None]
if walls:
    print("timing: first (compiling) %ss, cached median %.3fs [%.3f-%.3f], --no-cache %ss" % (wall("fill"), statistics.median(walls), min(walls), max(walls), wall("no-cache")))
    verdict(statistics.median(walls) <= 1.0, "target: the cached cold self-test's median wall time <= 1 s (%.3f s)" % statistics.median(walls))
PYEOF
  grep -E '^(PASS|FAIL|run |timing)' "$LOGS/plancache-verdicts.log" >>"$SUMMARY" || true
  cp -r "$J" "$LOGS/" 2>/dev/null
}

# What docs/examples.md quotes from the GPU node (README.md a trimmed part of readme-explain-no-backend): the plain check of the node, and a check whose workload has no backend
# until a verified fix (NVTE_FUSED_ATTN=0 and NVTE_UNFUSED_ATTN=0 on a node without flash-attn),
# in text, JSON and explain --fix; the default explain of this node (TE absent: the assumed release).
run_readme() {
  step readme-check 180 "$BIN" check "${COMMON[@]}" --no-color
  step readme-check-exit 180 bash -c "\"$BIN\" check --rules rules --no-color >/dev/null; echo exit \$?"
  step readme-no-backend 180 env NVTE_FUSED_ATTN=0 NVTE_UNFUSED_ATTN=0 "$BIN" check "${COMMON[@]}" --no-color \
    --hf-config tests/fixtures/hf/llama-3-8b/config.json
  step readme-no-backend-json 180 env NVTE_FUSED_ATTN=0 NVTE_UNFUSED_ATTN=0 "$BIN" check "${COMMON[@]}" --format json \
    --hf-config tests/fixtures/hf/llama-3-8b/config.json
  # README's "What it prints": the same job's explain, verdict first (the log's "# exit" is 2).
  step readme-explain-no-backend 180 env NVTE_FUSED_ATTN=0 NVTE_UNFUSED_ATTN=0 "$BIN" explain "${COMMON[@]}" --no-color \
    --hf-config tests/fixtures/hf/llama-3-8b/config.json
  step readme-explain-fix 180 env NVTE_FUSED_ATTN=0 NVTE_UNFUSED_ATTN=0 "$BIN" explain "${COMMON[@]}" --fix \
    --hf-config tests/fixtures/hf/llama-3-8b/config.json
  step readme-explain-default 180 "$BIN" explain "${COMMON[@]}" --no-color --hf-config tests/fixtures/hf/deepseek-v3/config.json
}

# bench/run.sh with the carried binary and its helpers; the results land next to the logs.
# Then where check's time goes on this node (-vv: facts, rules, node rules, node fixes, workloads);
# with NVTE_EXPLAIN_BEFORE (an older build's nvte-bench-explain-rate), both explain loops in turn.
run_bench() {
  local i
  # The bench stage has no TE on the path: check's workloads assume TE 2.18.0 (else unknown, exit 3).
  # Where TE is installed (a wheel carried), the whole self-test with its Python tier too, with TE
  # on the tier's PYTHONPATH alone (issue 40: every target of the issue in one bench run).
  local st_py=()
  [[ -d $TE_PREFIX/transformer_engine ]] &&
    st_py=(NVTE_BENCH_SELFTEST_PYTHON="$PY" NVTE_BENCH_SELFTEST_PYTHON_ENV="CUDNN_PATH=$VENV_CUDNN_DIR PYTHONPATH=$TE_PREFIX:$PWD/.gpu-te/py")
  step bench 580 env NVTE_DOCTOR_BIN="$BIN" NVTE_BENCH_TE_VERSION="${NVTE_BENCH_TE_VERSION:-2.18.0}" "${st_py[@]}" bench/run.sh "$LOGS/bench"
  # Issue 40: the probe with its file cache warm (row probe: the second and later runs, as a
  # timer or prolog runs it) and cold (probe_cold: --no-cache), each against nvidia-smi.
  { echo "bench (process start, probe warm and cold cache, run unchanged):"
    grep -E '^(version |probe |probe_cold |run_unchanged |nvidia_smi_query |selftest_)|/ nvidia-smi --query-gpu|run \(unchanged\) median' "$LOGS/bench/bench.txt"
    sed -n '/^ratio of medians/,$p' "$LOGS/bench/bench.txt"
  } 2>&1 | tee -a "$SUMMARY"
  # Process start (issue 40, round 5): the libraries the binary loads and the loader's own count
  # of relocations and time (LD_DEBUG=statistics), beside the version row above.
  step process-start 60 bash -c "ldd \"$BIN\"; LD_DEBUG=statistics \"$BIN\" --version"
  for i in 1 2 3; do step "probe-laps-warm-$i" 60 "$BIN" probe -vv; done
  step probe-laps-cold 60 "$BIN" probe -vv --no-cache
  step run-laps 60 bash -c "d=\$(mktemp -d) && printf 'state_dir: %s\nrules: [%s]\nselftest:\n  policy: never\n' \"\$d\" \"$PWD/rules\" >\"\$d/c.yaml\" && \"$BIN\" run --config \"\$d/c.yaml\" >/dev/null; for i in 1 2 3; do \"$BIN\" run --config \"\$d/c.yaml\" -vv; done; rm -rf \"\$d\""
  if [[ -n ${NVTE_EXPLAIN_BEFORE:-} ]]; then
    step explain-compare 120 bench/explain-compare.sh "$NVTE_EXPLAIN_BEFORE" "$(dirname "$BIN")/nvte-bench-explain-rate" 5
  fi
  for i in 1 2 3; do
    step "check-laps-$i" 60 "$BIN" check "${COMMON[@]}" -vv --set te.version=2.18.0 --hf-config tests/fixtures/hf/llama-3-8b/config.json \
      --hf-config tests/fixtures/hf/mixtral-8x7b/config.json --hf-config tests/fixtures/hf/deepseek-v3/config.json
  done
}

# threads (issue 40): probe and check + 3 workloads with NVTE_DOCTOR_THREADS=N for N in
# THREADS_SWEEP (default 1 2 4 8 16), 20 runs each (nvte-bench-measure), then check -vv's laps at
# each N: whether the rules' compile threads slow the probe's threads inside check, and how many
# threads check needs. With perf on the node, perf stat's context switches, migrations and page
# faults of check and probe at the default count.
run_threads() {
  local n tools measure
  tools=$(dirname "$BIN"); measure=$tools/nvte-bench-measure
  [[ -x $measure ]] || measure=$tools/bench/nvte-bench-measure
  local hf=tests/fixtures/hf
  local check=("$BIN" check "${COMMON[@]}" --set te.version=2.18.0 --hf-config $hf/llama-3-8b/config.json
               --hf-config $hf/mixtral-8x7b/config.json --hf-config $hf/deepseek-v3/config.json)
  export XDG_CACHE_HOME=$OUTDIR/xdg-cache
  for n in ${THREADS_SWEEP:-1 2 4 8 16}; do
    step "threads-$n-probe" 120 env NVTE_DOCTOR_THREADS=$n "$measure" measure --name "probe@$n" --runs 20 --warmup 2 -- "$BIN" probe
    step "threads-$n-check" 120 env NVTE_DOCTOR_THREADS=$n "$measure" measure --name "check3@$n" --runs 20 --warmup 1 -- "${check[@]}"
    step "threads-$n-laps" 60 env NVTE_DOCTOR_THREADS=$n "${check[@]}" -vv
  done
  # glibc's allocator under the threads: arenas shared (arena_max) or grown in larger steps
  # (top_pad: fewer mprotect calls, each of which stalls every other thread's page faults).
  local i=0 t
  for t in ${THREADS_TUNABLES:-glibc.malloc.top_pad=16777216 glibc.malloc.arena_max=1 glibc.malloc.arena_max=4}; do
    i=$((i + 1))
    step "tunables-$i-probe" 120 env GLIBC_TUNABLES=$t "$measure" measure --name "probe+$t" --runs 20 --warmup 2 -- "$BIN" probe
    step "tunables-$i-check" 120 env GLIBC_TUNABLES=$t "$measure" measure --name "check3+$t" --runs 20 --warmup 1 -- "${check[@]}"
    step "tunables-$i-laps" 60 env GLIBC_TUNABLES=$t "${check[@]}" -vv
  done
  if command -v perf >/dev/null; then
    step threads-perf-probe 60 perf stat -r 10 -e task-clock,context-switches,cpu-migrations,page-faults "$BIN" probe
    step threads-perf-check 60 perf stat -r 10 -e task-clock,context-switches,cpu-migrations,page-faults "${check[@]}"
  fi
  { echo "threads (NVTE_DOCTOR_THREADS sweep; median ms, min, max, CPU ms):"
    for n in ${THREADS_SWEEP:-1 2 4 8 16}; do
      grep -h '"median_ms"' "$LOGS/threads-$n-probe.log" "$LOGS/threads-$n-check.log" | "$PY" -c 'import json,sys
for l in sys.stdin:
    d = json.loads(l); print("  %-10s median %6.1f ms  min %6.1f  max %6.1f  CPU %6.1f ms" % (d["name"], d["median_ms"], d["min_ms"], d["max_ms"], d["median_cpu_ms"]))'
      grep -hE "debug: check: (facts|rules)" "$LOGS/threads-$n-laps.log" | head -4 | sed "s/^/  N=$n /"
    done
    for ((n = 1; n <= i; n++)); do
      grep -h '"median_ms"' "$LOGS/tunables-$n-probe.log" "$LOGS/tunables-$n-check.log" | "$PY" -c 'import json,sys
for l in sys.stdin:
    d = json.loads(l); print("  %-48s median %6.1f ms  min %6.1f  max %6.1f  CPU %6.1f ms" % (d["name"], d["median_ms"], d["min_ms"], d["max_ms"], d["median_cpu_ms"]))'
      grep -hE "debug: (check: (facts|rules)|python probe: site-packages|libraries probe: wheel)" "$LOGS/tunables-$n-laps.log" | head -6 | sed "s/^/  T$n /"
    done
  } 2>&1 | tee -a "$SUMMARY"
}

# pytier (issue 40, item 1): where the Python tier's time goes. selftest.py alone at the default
# shape (its "timings"), python -X importtime's slowest imports and cProfile's cumulative top, then
# the whole self-test's wall time; first with torch alone, then (pytier-te) with TE installed as
# the te stage installs it and CUDNN_PATH on the venv's cuDNN (the node's passing configuration).
pytier_runs() { # pytier_runs TAG ENV...
  local tag=$1 i; shift
  local pyc=$OUTDIR/pyc-$tag
  rm -rf "$pyc" "$OUTDIR/xdg-$tag"
  # Runs 1-3 with the self-test's bytecode cache (run 1 fills it where the environment's own
  # bytecode is missing or stale), run 4 without it.
  for i in 1 2 3; do step "pytier-$tag-$i" 300 env "$@" "$PY" src/selftest/selftest.py "{\"bytecode_cache\": \"$pyc\"}"; done
  step "pytier-$tag-4" 300 env "$@" "$PY" src/selftest/selftest.py
  step "pytier-$tag-importtime" 120 env "$@" PYTHONPYCACHEPREFIX="$pyc" bash -c "'$PY' -X importtime -c 'import torch
try:
    import transformer_engine.pytorch
except Exception as e:
    print(e)' 2>&1 | sort -t'|' -k2 -n -r | head -30"
  step "pytier-$tag-cprofile" 300 env "$@" PYTHONPYCACHEPREFIX="$pyc" bash -c "'$PY' -m cProfile -s cumulative src/selftest/selftest.py | head -70"
  # The whole self-test: its own caches in a fresh XDG_CACHE_HOME (run 1 fills the bytecode
  # cache and keeps the tier's answer; runs 2-3 reuse it), then --fresh twice (the tier runs,
  # bytecode cached), run 4 (reuses what --fresh kept), then --no-cache.
  local xdg=$OUTDIR/xdg-$tag
  for i in 1 2 3; do step "pytier-$tag-selftest-$i" 600 env "$@" XDG_CACHE_HOME="$xdg" "$BIN" selftest "${COMMON[@]}" -v --python "$PY"; done
  for i in 1 2; do step "pytier-$tag-selftest-fresh-$i" 600 env "$@" XDG_CACHE_HOME="$xdg" "$BIN" selftest "${COMMON[@]}" -v --python "$PY" --fresh; done
  step "pytier-$tag-selftest-4" 600 env "$@" XDG_CACHE_HOME="$xdg" "$BIN" selftest "${COMMON[@]}" -v --python "$PY"
  step "pytier-$tag-selftest-json" 600 env "$@" XDG_CACHE_HOME="$xdg" "$BIN" selftest "${COMMON[@]}" --format json --python "$PY"
  step "pytier-$tag-selftest-no-cache" 600 env "$@" "$BIN" selftest "${COMMON[@]}" -v --python "$PY" --no-cache
  # The files a process that imported torch and TE and ran on the GPU maps after their file was
  # deleted, and its other odd mappings (selftest.py's loaded_files keeps an answer only without
  # a deleted library or module).
  step "pytier-$tag-maps" 120 env "$@" PYTHONPYCACHEPREFIX="$pyc" "$PY" -c 'import torch
try:
    import transformer_engine.pytorch
except Exception as e:
    print(e)
torch.ones(1, device="cuda").sum().item()
for line in open("/proc/self/maps"):
    f = line.split(None, 5)
    if len(f) == 6 and ("(deleted)" in f[5] or f[5].startswith(("/dev/", "/memfd", "/tmp", "/run"))):
        print(f[5].strip())' 
  # What the kept answer depends on: how many paths, under which directories (a path that
  # changes on its own, such as one under /tmp, would keep the answer from ever being reused).
  step "pytier-$tag-kept" 60 "$PY" -c 'import collections, glob, json, sys
for name in glob.glob(sys.argv[1] + "/nvte-doctor/selftest-python/*.bin"):
    data, parts = open(name, "rb").read(), []
    while data:
        n, _, data = data.partition(b":")
        parts.append(data[:int(n)]); data = data[int(n):]
    kept = json.loads(parts[3])
    print(name, len(kept["paths"]), "paths; ran_at", kept["ran_at"])
    top = collections.Counter("/".join(p.split("/")[:4]) for p in kept["paths"])
    for d, n in top.most_common(12): print("  %5d %s" % (n, d))
    odd = [p for p in kept["paths"] if p.startswith(("/tmp", "/var/tmp", "/run")) or "/cache" in p]
    print("  under /tmp, /run or a cache:", odd[:20])' "$xdg"
  { echo "pytier $tag: selftest.py timings (1-3 with the bytecode cache, 4 without), then the whole self-test's wall:"
    for i in 1 2 3 4; do grep -h '"timings"' "$LOGS/pytier-$tag-$i.log" | "$PY" -c 'import json,sys
for l in sys.stdin:
    d = json.loads(l); print("  ", d.get("status"), d.get("te_present"), json.dumps(d.get("bytecode")), json.dumps(d.get("timings")))'; done
    grep -h "^pytier-$tag-selftest" "$SUMMARY" | tail -8
    for i in 2 fresh-2 4; do
      echo "  selftest-$i:"; grep -hE "python .*[0-9.]+ s|^  *(ok|failed|error|skipped) +[0-9.]+ s|reused:" "$LOGS/pytier-$tag-selftest-$i.log" | head -14
    done
    grep -h -A3 '"reused"' "$LOGS/pytier-$tag-selftest-json.log" | head -5
    cat "$LOGS/pytier-$tag-kept.log"
    sort -u "$LOGS/pytier-$tag-maps.log" | head -20
    grep -h '"not_kept"' "$LOGS/pytier-$tag-selftest-json.log" | head -2
  } 2>&1 | tee -a "$SUMMARY"
}

# pyreuse (issue 40): the Python tier's answer reused, and when it is not, on the node with TE:
# a first self-test keeps it, a second reuses it; a module file created in the venv's
# site-packages (a package installed) runs the tier again and -vv names the directory; with it
# removed the tier runs once more, then is reused; another NVTE_* setting runs it (another key);
# check --selftest as a prolog runs it, twice. pyreuse-verdicts prints PASS/FAIL lines.
run_pyreuse() {
  install_te || return 0
  local xdg=$OUTDIR/xdg-pyreuse site marker
  site=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  marker=$site/nvte_doctor_reuse_marker.py
  rm -rf "$xdg"; mkdir -m 700 "$xdg"
  local E=(env XDG_CACHE_HOME="$xdg" PYTHONPATH="$TE_PREFIX:$PWD/.gpu-te/py" CUDNN_PATH="$VENV_CUDNN_DIR")
  local S=("$BIN" selftest "${COMMON[@]}" -vv --python "$PY")
  step pyreuse-1-keeps 300 "${E[@]}" "${S[@]}"
  step pyreuse-2-reuses 300 "${E[@]}" "${S[@]}"
  touch "$marker"
  step pyreuse-3-package-added 300 "${E[@]}" "${S[@]}"
  rm -f "$marker"
  step pyreuse-4-package-removed 300 "${E[@]}" "${S[@]}"
  step pyreuse-5-reuses 300 "${E[@]}" "${S[@]}"
  step pyreuse-6-nvte-setting 300 "${E[@]}" NVTE_FUSED_ATTN_BACKEND=1 "${S[@]}"
  step pyreuse-7-slurm-job 300 "${E[@]}" SLURM_JOB_ID=4242 "${S[@]}"
  step pyreuse-8-check-prolog 300 "${E[@]}" "$BIN" check "${COMMON[@]}" --selftest --python "$PY"
  step pyreuse-9-check-prolog 300 "${E[@]}" "$BIN" check "${COMMON[@]}" --selftest --python "$PY" --format json
  # TE beside the flash-attn-like extension, whose flash_attn_2_cuda lacks the varlen_bwd TE
  # imports: TE's import fails, a finding of its own (not a disagreement of backends), never kept.
  local ext=${EXT_DIR:-/tmp/nvte-ext}/good
  ls "$ext"/flash_attn_2_cuda*.so >/dev/null 2>&1 || step ext-build-good 600 "$PY" scripts/gpu-build-ext.py "$ext"
  for i in 1 2; do
    step "pyreuse-te-import-fails-$i" 300 env XDG_CACHE_HOME="$xdg" PYTHONPATH="$TE_PREFIX:$PWD/.gpu-te/py:$ext" CUDNN_PATH="$VENV_CUDNN_DIR" \
      "${S[@]}"
  done
  {
    echo "pyreuse (site-packages $site):"
    grep -h "^pyreuse-" "$SUMMARY"
    for f in "$LOGS"/pyreuse-*.log; do
      echo "  $(basename "$f" .log): $(grep -hE 'python \[|the Python tier runs:|reused:' "$f" | sed 's/^ *//' | cut -c1-180 | tr '\n' '|')"
    done
    grep -ho '"reused": {[^}]*}' "$LOGS/pyreuse-9-check-prolog.log" | head -1
    reused() { grep -q "reused: the tier's answer" "$LOGS/pyreuse-$1.log"; }
    verdict() { if "$@"; then echo "PASS $claim"; else echo "FAIL $claim"; fi; }
    claim="a second self-test reuses the first's answer"; verdict reused 2-reuses
    claim="a module created in site-packages runs the tier, naming the directory"
    verdict bash -c "! grep -q 'reused: the tier' '$LOGS/pyreuse-3-package-added.log' && grep -q 'the Python tier runs: $site changed' '$LOGS/pyreuse-3-package-added.log'"
    claim="with it removed the tier runs again, then is reused"
    verdict bash -c "! grep -q 'reused: the tier' '$LOGS/pyreuse-4-package-removed.log' && grep -q 'reused: the tier' '$LOGS/pyreuse-5-reuses.log'"
    claim="another NVTE_ setting runs the tier"; verdict bash -c "! grep -q 'reused: the tier' '$LOGS/pyreuse-6-nvte-setting.log'"
    claim="a Slurm job's own variable does not"; verdict reused 7-slurm-job
    claim="check --selftest reuses it, and its JSON says so"; verdict grep -q '"reused": {' "$LOGS/pyreuse-9-check-prolog.log"
    local f=$LOGS/pyreuse-te-import-fails-2.log
    claim="TE's failed import is selftest-python-te-does-not-import, not backends-disagree, and is not reused"
    verdict bash -c "grep -q 'selftest-python-te-does-not-import' '$f' && ! grep -q 'selftest-python-backends-disagree' '$f' && ! grep -q 'reused: the tier' '$f'"
    grep -h -A3 "FAILED.*python \[" "$f" | cut -c1-200
  } 2>&1 | tee -a "$SUMMARY"
}

run_pytier() {
  pytier_runs torch PYTHONPATH=
}

run_pytier_te() {
  install_te || return 0
  pytier_runs te PYTHONPATH="$TE_PREFIX:$PWD/.gpu-te/py" CUDNN_PATH="$VENV_CUDNN_DIR"
}

# bytecode (issue 40): the probe's python.bytecode[] for torch (a stat and a 16-byte read, no Python)
# against CPython's own judgement in the torch venv: importlib finds torch's __init__.py without
# running it, and its __pycache__ header is classified and validated by importlib's own helpers,
# as SourceFileLoader.get_code does; os.access says whether the job's user may write there.
# Read-only: nothing is compiled or written. Then check -v, which must show the finding that
# matches (python-bytecode-*) with its compileall fix. bytecode-verdicts prints PASS/FAIL lines.
run_bytecode() {
  step bytecode-probe 120 "$BIN" probe --format json -o "$OUTDIR/bytecode-probe.json"
  step bytecode-truth 120 env PYTHONPATH= "$PY" -c 'import importlib.util, importlib._bootstrap_external as be, json, os
spec = importlib.util.find_spec("torch")
src = spec.origin; pyc = importlib.util.cache_from_source(src)
st = os.stat(src)
try:
    data = open(pyc, "rb").read(16)
    try:
        flags = be._classify_pyc(data, "torch", {})
        if flags & 1: status = "ok"
        else: be._validate_timestamp_pyc(data, int(st.st_mtime), st.st_size, "torch", {}); status = "ok"
    except (ImportError, EOFError): status = "stale"
except FileNotFoundError: status = "missing"
d = os.path.dirname(pyc)
print(json.dumps({"status": status, "pyc": pyc, "writable": os.access(d if os.path.isdir(d) else os.path.dirname(d), os.W_OK)}))'
  step bytecode-check 180 "$BIN" check "${COMMON[@]}" -v --no-color
  "$PY" - "$OUTDIR/bytecode-probe.json" "$LOGS/bytecode-truth.log" "$LOGS/bytecode-check.log" >"$LOGS/bytecode-verdicts.log" 2>&1 <<'PYEOF'
import json, sys
def verdict(ok, what): print(("PASS " if ok else "FAIL ") + what)
try:
    facts = [b for b in json.load(open(sys.argv[1]))["facts"]["python"]["bytecode"] if b["package"] == "torch"][0]
    truth = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")][0]
    verdict(facts["status"] == truth["status"], "torch.bytecode.status %s, CPython says %s (%s)" % (facts["status"], truth["status"], facts.get("reason")))
    verdict(facts.get("writable") == truth["writable"], "torch.bytecode.writable %s, os.access says %s" % (facts.get("writable"), truth["writable"]))
    check = open(sys.argv[3]).read()
    shown = "python-bytecode-" in check and "compileall" in check
    verdict(shown == (truth["status"] != "ok"), "check -v shows a python-bytecode finding with compileall: %s" % shown)
except (OSError, ValueError, KeyError, IndexError) as e:
    verdict(False, "probe JSON and CPython's answer readable (%s)" % e)
PYEOF
  grep -E '^(PASS|FAIL)' "$LOGS/bytecode-verdicts.log" | tee -a "$SUMMARY" || true
}

run_gputest() {
  local t=.gpu-carry/selftest_gpu_test
  [[ -x $t ]] || t=build/tests/selftest_gpu_test
  step gputest-system-cudnn 600 "$t"
  [[ -n $VENV_CUDNN ]] && step gputest-venv-cudnn 600 env NVTE_TEST_CUDNN_PATH="$VENV_CUDNN" "$t"
  return 0
}

# The truth of one import order: what the process maps, and what torch and TE see.
TRUTH='import os, sys
order = sys.argv[1].split(",")
for name in order:
    try:
        __import__(name)
        print("imported", name)
    except Exception as e:
        print("IMPORT FAILED", name, type(e).__name__, str(e).splitlines()[0] if str(e) else "")
import torch
try:
    print("torch cudnn", torch.backends.cudnn.version())
except Exception as e:
    print("torch cudnn FAILED", type(e).__name__, str(e).splitlines()[0])
te = sys.modules.get("transformer_engine.pytorch")
if te is not None:
    from transformer_engine.pytorch.utils import get_cudnn_version
    print("TE cudnn", get_cudnn_version())
maps = {l.split()[-1] for l in open("/proc/self/maps") if "/" in l}
for key in ("libcudnn.so", "libcudnn_graph", "libnvrtc.so", "libcublasLt.so", "libcurand.so", "libtransformer_engine"):
    for path in sorted(p for p in maps if os.path.basename(p).startswith(key)):
        print("mapped", path)'

TE_PREFIX=${TE_PREFIX:-/tmp/te-prefix}
VENV_CUDNN_DIR=$(dirname "$(dirname "${VENV_CUDNN:-/x/y}")")

# TE into $TE_PREFIX: the wheel a previous build sent back, else a build from .gpu-te's sources.
install_te() {
  local prefix=$TE_PREFIX
  if [[ ! -d $prefix/transformer_engine ]]; then
    if [[ -f .gpu-te/wheel/te-wheel.name ]]; then
      step te-install-wheel 300 scripts/gpu-build-te.sh install
    else
      # No wheel travelled: build from the carried source, if any. Without a source the start
      # fails and there is nothing to wait for (a wait then spent the whole device time).
      if [[ -f /tmp/te-build/rc || -d /tmp/te-build/te ]] || scripts/gpu-build-te.sh start; then
        step te-build 590 scripts/gpu-build-te.sh wait "${TE_BUILD_WAIT:-580}"
      fi
    fi
  fi
  [[ -d $prefix/transformer_engine ]] || { echo "te: no TE installed in $prefix" | tee -a "$SUMMARY"; return 1; }
}

run_te() {
  install_te || return 0
  local prefix=$TE_PREFIX venv_cudnn_dir=$VENV_CUDNN_DIR
  local base_pp=$prefix full_pp=$prefix:$PWD/.gpu-te/py
  # Without pydantic (TE's Requires-Dist, absent from the node): TE does not import.
  step te-truth-no-pydantic 120 env PYTHONPATH=$base_pp "$PY" -c "$TRUTH" torch,transformer_engine.pytorch
  step te-probe-no-pydantic 120 env PYTHONPATH=$base_pp "$BIN" probe -v
  step te-probe-json-no-pydantic 120 env PYTHONPATH=$base_pp "$BIN" probe --format json
  step te-check-no-pydantic 180 env PYTHONPATH=$base_pp "$BIN" check "${COMMON[@]}" --no-color
  # The truth in each import order, with and without CUDNN_PATH.
  step te-truth-torch-first 120 env PYTHONPATH=$full_pp "$PY" -c "$TRUTH" torch,transformer_engine.pytorch
  step te-truth-te-first 120 env PYTHONPATH=$full_pp "$PY" -c "$TRUTH" transformer_engine.pytorch,torch
  step te-truth-torch-first-cudnn-path 120 env PYTHONPATH=$full_pp CUDNN_PATH="$venv_cudnn_dir" "$PY" -c "$TRUTH" torch,transformer_engine.pytorch
  step te-truth-te-first-cudnn-path 120 env PYTHONPATH=$full_pp CUDNN_PATH="$venv_cudnn_dir" "$PY" -c "$TRUTH" transformer_engine.pytorch,torch
  # The doctor against it.
  step te-probe 120 env PYTHONPATH=$full_pp "$BIN" probe -v
  step te-probe-json 120 env PYTHONPATH=$full_pp "$BIN" probe --format json
  step te-probe-json-cudnn-path 120 env PYTHONPATH=$full_pp CUDNN_PATH="$venv_cudnn_dir" "$BIN" probe --format json
  step te-check 180 env PYTHONPATH=$full_pp "$BIN" check "${COMMON[@]}" --no-color -v
  step te-check-cudnn-path 180 env PYTHONPATH=$full_pp CUDNN_PATH="$venv_cudnn_dir" "$BIN" check "${COMMON[@]}" --no-color -v
  step te-check-json 180 env PYTHONPATH=$full_pp "$BIN" check "${COMMON[@]}" --format json
  step te-selftest 600 env PYTHONPATH=$full_pp "$BIN" selftest "${COMMON[@]}" -v --python "$PY"
  step te-selftest-json 600 env PYTHONPATH=$full_pp "$BIN" selftest "${COMMON[@]}" --format json --python "$PY"
  step te-selftest-cudnn-path 600 env PYTHONPATH=$full_pp CUDNN_PATH="$venv_cudnn_dir" "$BIN" selftest "${COMMON[@]}" -v --python "$PY"
  step te-selftest-cudnn-path-json 600 env PYTHONPATH=$full_pp CUDNN_PATH="$venv_cudnn_dir" "$BIN" selftest "${COMMON[@]}" --format json --python "$PY"
  # Live conformance with each cuDNN TE can be made to load (TE_LIVE=0 skips it: a round that
  # changed no knowledge keeps the device minutes).
  mkdir -p "$LOGS/live"
  [[ ${TE_LIVE:-1} == 0 ]] || step te-live-system-cudnn 300 env PYTHONPATH=$full_pp TE_COMMIT="$(tar xzOf .gpu-te/te-src-*.tar.gz te/COMMIT 2>/dev/null)" \
    "$PY" tools/te-conformance/live.py --label h100 --out "$LOGS/live"
  [[ ${TE_LIVE:-1} == 0 ]] || step te-live-venv-cudnn 300 env PYTHONPATH=$full_pp CUDNN_PATH="$venv_cudnn_dir" TE_COMMIT="$(tar xzOf .gpu-te/te-src-*.tar.gz te/COMMIT 2>/dev/null)" \
    "$PY" tools/te-conformance/live.py --label h100 --out "$LOGS/live"
  # Every claim above against the truth, one PASS/FAIL line each.
  step te-verdicts 60 python3 scripts/gpu-te-verdicts.py "$LOGS"
  cat "$LOGS/te-verdicts.log" >>"$SUMMARY"
}

# Verified by experiment (issue #36.5): with TE built here and imported after torch, no
# CUDNN_PATH (two cuDNN copies mapped), the self-test's Python tier classifies TE's failing
# FusedAttention as sublibrary_load, names the two-copies finding and its CUDNN_PATH fix, and
# re-runs that check with CUDNN_PATH set: the proof is a PASS line from the checker below
# ("verify-fix: PASS ... verified here") and "(verified here)" in verify-fix-text.log. NOT
# REPRODUCED means the tier passed without CUDNN_PATH this time (whether FusedAttention fails
# depends on what else the process did): nothing to verify, not a failure of the doctor.
run_verify_fix() {
  install_te || return 0
  local full_pp=$TE_PREFIX:$PWD/.gpu-te/py
  step verify-fix-text 600 env -u CUDNN_PATH -u CUDNN_HOME PYTHONPATH=$full_pp "$BIN" selftest "${COMMON[@]}" -v --python "$PY"
  step verify-fix-json 600 bash -c "env -u CUDNN_PATH -u CUDNN_HOME PYTHONPATH=$full_pp \"$BIN\" selftest ${COMMON[*]} --format json --python \"$PY\" >\"$LOGS/verify-fix.json\""
  "$PY" - "$LOGS/verify-fix.json" <<'PYEOF' 2>&1 | tee -a "$SUMMARY"
import json, sys
try:
    checks = json.load(open(sys.argv[1]))["selftest"]["checks"]
except Exception as e:
    print("verify-fix: FAIL no JSON from selftest:", e); sys.exit(0)
failed = [c for c in checks if c.get("check", "").startswith("python") and c.get("status") in ("failed", "error")]
for c in failed:
    fix = c.get("fix") or {}
    print("verify-fix: %s [%s] class=%s explained_by=%s fix=%r verified=%s note=%s" % (
        c["check"], c.get("label"), c.get("class"), c.get("explained_by"), fix.get("command"), fix.get("verified"), fix.get("note")))
hits = [c for c in failed if c.get("class") == "sublibrary_load"]
if not failed:
    print("verify-fix: NOT REPRODUCED (the Python tier passed without CUDNN_PATH)")
elif not hits:
    print("verify-fix: FAIL the Python tier failed, but not as sublibrary_load")
elif all("CUDNN_PATH" in (c.get("fix") or {}).get("command", "") and (c.get("fix") or {}).get("verified") == "here" for c in hits):
    print("verify-fix: PASS %d sublibrary_load check(s), explained by %s, CUDNN_PATH verified here" % (
        len(hits), ", ".join(sorted({c.get("explained_by") or "?" for c in hits}))))
else:
    print("verify-fix: FAIL a sublibrary_load check without a CUDNN_PATH fix verified here")
PYEOF
  grep -E "class: |fix: |verified here|did not help here|re-run with" "$LOGS/verify-fix-text.log" | head -20 | tee -a "$SUMMARY"
}

# verdict-truth (issue 36): with TE installed (install_te) and the node's two cuDNN copies, what
# TE's DotProductAttention does in one process (scripts/gpu-verdict-truth.py: llama-3-8b's shape,
# forward and backward, TE's debug log on) against the doctor's verdict for the same workload from
# explain and check, and TE's own log read back with explain --te-log; three processes: torch
# then TE (plain), PyTorch's cuDNN attention first (torch-sdpa-first), and that with CUDNN_PATH set
# to the venv's cuDNN. One PASS/FAIL line per claim: the backend the doctor names is the one TE
# logged; runs -> TE ran, fails -> TE failed, at_risk -> either (which one is printed).
run_verdict_truth() {
  install_te || return 0
  local full_pp=$TE_PREFIX:$PWD/.gpu-te/py hf=tests/fixtures/hf/llama-3-8b/config.json mode extra cudnn
  for mode in plain torch-sdpa-first cudnn-path; do
    extra=() cudnn=()
    [[ $mode == plain ]] || extra=(--torch-sdpa-first)
    [[ $mode == cudnn-path ]] && cudnn=(CUDNN_PATH="$VENV_CUDNN_DIR")
    step "vt-$mode-te" 300 env -u CUDNN_PATH -u CUDNN_HOME "${cudnn[@]}" PYTHONPATH=$full_pp NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2 \
      "$PY" scripts/gpu-verdict-truth.py "${extra[@]}"
    step "vt-$mode-explain" 120 bash -c "env -u CUDNN_PATH -u CUDNN_HOME ${cudnn[*]} PYTHONPATH=$full_pp \"$BIN\" explain ${COMMON[*]} --hf-config $hf --format json >\"$LOGS/vt-$mode-explain.json\""
    step "vt-$mode-explain-text" 120 env -u CUDNN_PATH -u CUDNN_HOME "${cudnn[@]}" PYTHONPATH=$full_pp "$BIN" explain "${COMMON[@]}" --hf-config $hf --no-color
    step "vt-$mode-check" 180 bash -c "env -u CUDNN_PATH -u CUDNN_HOME ${cudnn[*]} PYTHONPATH=$full_pp \"$BIN\" check ${COMMON[*]} --hf-config $hf --format json >\"$LOGS/vt-$mode-check.json\""
    step "vt-$mode-telog" 120 bash -c "\"$BIN\" explain ${COMMON[*]} --te-log \"$LOGS/vt-$mode-te.log\" --format json >\"$LOGS/vt-$mode-telog.json\""
  done
  "$PY" - "$LOGS" <<'PYEOF' 2>&1 | tee -a "$SUMMARY"
import json, os, re, sys
logs = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(logs, name)))
    except Exception as e:
        return {"error": str(e)}
for mode in ("plain", "torch-sdpa-first", "cudnn-path"):
    te_log = open(os.path.join(logs, "vt-%s-te.log" % mode), errors="replace").read()
    m = re.search(r"RESULT (ran|failed)(.*)", te_log)
    ran = m.group(1) if m else "no result"
    sel = re.findall(r"Selected backend = (\w+)", te_log)
    te_sel = sel[-1] if sel else "?"
    for cmd in ("explain", "check"):
        r = load("vt-%s-%s.json" % (mode, cmd))
        ws = r.get("workloads") or [{}]
        w = ws[0]
        verdict, backend = w.get("verdict"), w.get("backend")
        same = backend == te_sel
        agree = {"runs": ran == "ran", "fails": ran == "failed", "at_risk": ran in ("ran", "failed")}.get(verdict, False)
        print("verdict-truth %-16s %-7s %s doctor: %s on %s (fix: %s); TE selected %s and %s%s" % (
            mode, cmd, "PASS" if same and agree else "FAIL", verdict, backend,
            (w.get("fix") or {}).get("command"), te_sel, ran, (m.group(2)[:120] if m and ran == "failed" else "")))
    t = load("vt-%s-telog.json" % mode)
    tw = (t.get("workloads") or [{}])[0]
    print("verdict-truth %-16s te-log  %s TE's log read back: verdict %s on %s, te_log %s" % (
        mode, "PASS" if tw.get("backend") == te_sel else "FAIL", tw.get("verdict"), tw.get("backend"),
        (tw.get("te_log") or {}).get("agreement", (tw.get("te_log") or {}).get("agrees"))))
PYEOF
}

# What a process that runs a cuBLAS GEMM maps: torch.matmul on the GPU goes through cublasLt (a
# plain GEMM) and libcublas; the version from the mapped cuBLASLt itself.
CUBLAS_TRUTH='import ctypes, os, torch
a = torch.ones(64, 64, device="cuda")
(a @ a).sum().item()
torch.nn.functional.linear(a, a, a[0]).sum().item()
maps = sorted({l.split()[-1] for l in open("/proc/self/maps") if "/" in l})
for p in maps:
    n = os.path.basename(p)
    if n.startswith("libcublasLt.so") or n.startswith("libcublas.so"):
        print("mapped", n, os.path.realpath(p))
        if n.startswith("libcublasLt.so"):
            f = ctypes.CDLL(p).cublasLtGetVersion
            f.restype = ctypes.c_size_t
            print("cublasLtGetVersion", f())
print("torch", torch.__version__, "cuda", torch.version.cuda)'

run_cublas() {
  step cublas-truth 180 "$PY" -c "$CUBLAS_TRUTH"
  step cublas-probe 120 "$BIN" probe
  step cublas-probe-json 120 "$BIN" probe --format json
  local i
  for i in 1 2 3; do step "cublas-probe-laps-$i" 60 "$BIN" probe -vv; done
  step cublas-bench 580 env NVTE_DOCTOR_BIN="$BIN" NVTE_BENCH_RUNS=30 bench/run.sh "$LOGS/bench"
  step cublas-verdicts 60 python3 scripts/gpu-cublas-verdicts.py "$LOGS"
  cat "$LOGS/cublas-verdicts.log" >>"$SUMMARY"
}

# The self-test's TE path at the full shapes of the HF fixtures (seq 8192 where the model has it),
# with TE pointed at torch's cuDNN (CUDNN_PATH, the doctor's verified fix: without it TE's
# FusedAttention fails at every shape on the reference node, two cuDNN copies being mapped).
# TE_MODELS (a glob of fixture names, default all) narrows the list.
run_te_models() {
  install_te || return 0
  local full_pp=$TE_PREFIX:$PWD/.gpu-te/py f name
  for f in tests/fixtures/hf/${TE_MODELS:-*}/config.json; do
    name=$(basename "$(dirname "$f")")
    step "te-selftest-model-$name" 300 env PYTHONPATH=$full_pp CUDNN_PATH="$VENV_CUDNN_DIR" "$BIN" selftest "${COMMON[@]}" -v \
      --python "$PY" --hf-config "$f"
  done
}

run_cudnn_support() {
  local f name
  mkdir -p "$LOGS/cudnn-support"
  for f in tests/fixtures/hf/${CUDNN_SUPPORT_MODELS:-*}/config.json; do
    name=$(basename "$(dirname "$f")")
    # stderr beside the report: a model without attention (mamba) is refused with exit 3 and
    # the verdicts script reads the refusal as a SKIP, not a missing answer.
    step "cudnn-support-$name" 900 bash -c "\"$BIN\" selftest ${COMMON[*]} --format json --python '' --hf-config \"$f\" \
      > \"$LOGS/cudnn-support/$name.json\" 2> \"$LOGS/cudnn-support/$name.err\"; head -c 300 \"$LOGS/cudnn-support/$name.json\" \"$LOGS/cudnn-support/$name.err\""
  done
  step cudnn-support-verdicts 60 "$PY" scripts/gpu-cudnn-support-verdicts.py "$LOGS"/cudnn-support/*.json
  grep -E '^(PASS|FAIL|SKIP)' "$LOGS/cudnn-support-verdicts.log" >>"$SUMMARY" || true
}

# preflight (issue 24): a real node's facts against the fixture image (tests/fixtures/image-te), the
# node probed live (--node-root /) and from its own snapshot (--node-facts), the in-pod form
# (--root / --node-root /: one probe), and, when scripts/build-bundle.sh was carried
# (NVTE_BUNDLE, default .gpu-carry/bundle), the bundle on this distribution with an empty
# environment through nvte-doctor-preflight. What proves it: each report's first line
# "preflight of image ... on node <this host>", the fixture image's TE 2.4.0 beside this node's
# GPU and driver in preflight-image-*.log, and rc=0 with "job ran" in preflight-bundle.log.
run_preflight() {
  local image=tests/fixtures/image-te/rootfs mla=packaging/workloads/deepseek-v3-mla.yaml
  step preflight-node-snapshot 60 bash -c "\"$BIN\" probe --format json > \"$LOGS/node.json\"; head -c 400 \"$LOGS/node.json\""
  step preflight-image-node-facts 60 "$BIN" check "${COMMON[@]}" --no-color --root "$image" --node-facts "$LOGS/node.json" \
    --image fixture/image-te --workload "$mla" --termination-log "$LOGS/termination.txt"
  step preflight-termination-log 10 cat "$LOGS/termination.txt"
  step preflight-image-node-root 60 "$BIN" check "${COMMON[@]}" --no-color --root "$image" --node-root / \
    --image fixture/image-te --workload "$mla"
  step preflight-image-json 60 bash -c "\"$BIN\" check --rules rules --root $image --node-root / --workload $mla --format json \
    | $PY -c 'import json,sys; d=json.load(sys.stdin); f=d[\"facts\"]; print(f[\"preflight\"], f[\"te\"][\"version\"], f[\"gpu\"][0][\"name\"], f[\"driver\"][\"version\"], [(w[\"name\"], w[\"selected\"]) for w in d[\"workloads\"]])'"
  step preflight-in-place 60 "$BIN" check "${COMMON[@]}" --no-color --root / --node-root / --image this-node \
    --hf-config tests/fixtures/hf/llama-3-8b/config.json
  local bundle=${NVTE_BUNDLE:-.gpu-carry/bundle}
  if [[ -x $bundle/bin/nvte-doctor-preflight ]]; then
    step preflight-bundle 60 env -i PATH=/usr/bin:/bin NVTE_TERMINATION_LOG="$LOGS/bundle-termination.txt" \
      "$bundle/bin/nvte-doctor-preflight" --root / --node-root / --image this-node --workload "$mla" -- echo "job ran"
    step preflight-bundle-termination 10 cat "$LOGS/bundle-termination.txt" "$bundle/MANIFEST"
  else
    echo "preflight-bundle: no bundle at $bundle (scripts/build-bundle.sh --binary build-gpu/nvte-doctor --out $bundle)" | tee -a "$SUMMARY"
  fi
}

run_hostcheck() {
  # The Kubernetes DaemonSet's mode (base/daemonset.yaml, docs/kubernetes.md "What the pods may
  # do"): `run --root /host` as uid 10001, the host's paths bind-mounted read-only under /host as
  # the DaemonSet mounts them, in a private mount namespace (needs root with CAP_SYS_ADMIN); no
  # GPU device is used (NVML is skipped under a node root). PASS when the run exits 0-2 and its
  # report's driver version and GPU count equal the live probe's, as root.
  local T=$OUTDIR/hostcheck
  rm -rf "$T"; mkdir -p "$T/state" "$T/features"
  chown 10001:10001 "$T/state" "$T/features"
  printf 'state_dir: %s/state\nselftest:\n  policy: never\noutputs:\n  prometheus: %s/state/nvte_doctor.prom\n  nfd: %s/features/nvte-doctor\n' \
    "$T" "$T" "$T" > "$T/config.yaml"
  step hostcheck-live 120 bash -c "\"$BIN\" probe --format json > \"$T/live.json\""
  step hostcheck-nonroot 300 unshare -m bash -c '
    set -e; T=$1; BIN=$2; mount --make-rprivate /
    for p in proc/driver/nvidia usr/lib usr/local sys etc/os-release etc/ld.so.cache; do
      [[ -e /$p ]] || continue
      if [[ -d /$p ]]; then mkdir -p "$T/host/$p"; else mkdir -p "$(dirname "$T/host/$p")"; touch "$T/host/$p"; fi
      mount --bind "/$p" "$T/host/$p"; mount -o remount,bind,ro "$T/host/$p"
    done
    rc=0; setpriv --reuid=10001 --regid=10001 --clear-groups env -i PATH=/usr/bin:/bin \
      "$BIN" run --root "$T/host" --config "$T/config.yaml" --rules "$PWD/rules" --force || rc=$?
    ls -ln "$T/state" "$T/features"; exit $rc' hostcheck "$T" "$(readlink -f "$BIN")"
  step hostcheck-verdict 60 "$PY" -c 'import json, sys
live = json.load(open(sys.argv[1]))
live = live.get("facts", live)
host = json.load(open(sys.argv[2]))["facts"]
def key(f): return (f.get("driver", {}).get("version"), len(f.get("gpu", [])))
print("live", key(live), "as uid 10001 under /host", key(host))
print("PASS" if key(live) == key(host) and key(host)[1] > 0 else "FAIL", "the non-root host check sees the driver and GPUs the live probe sees")' "$T/live.json" "$T/state/report.json"
}

run_fuzz() {
  local pack=${NVTE_FUZZ_PACK:-.gpu-fuzz/fuzz.tar.xz} dir=${TMPDIR:-/tmp}/nvte-fuzz
  [[ -f $pack ]] || { echo "fuzz: no $pack (scripts/fuzz-carry.sh makes it)" | tee -a "$SUMMARY"; return 0; }
  mkdir -p "$OUTDIR/fuzz"
  if [[ ${FUZZ_RESUME:-0} == 1 && -d $dir/tests/fuzz ]]; then
    echo "fuzz: resuming from $dir (corpora of the last call)" | tee -a "$SUMMARY"
  else
    rm -rf "$dir" && mkdir -p "$dir"
    step fuzz-unpack 120 tar -C "$dir" -xJf "$pack"
  fi
  step fuzz-ldd 60 bash -c "LD_LIBRARY_PATH=$dir/lib ldd $dir/tests/fuzz/fuzz_version | grep -E 'not found|=>' ; ! LD_LIBRARY_PATH=$dir/lib ldd $dir/tests/fuzz/fuzz_* | grep -q 'not found'"
  # Every target that has not reached 10^7 at once for the whole time (-a: even with a few more
  # targets than cores, better than rounds of half the time each); spare cores become extra
  # workers of the targets furthest from the goal.
  step fuzz-campaign $((${FUZZ_SECONDS:-360} + 120)) env LD_LIBRARY_PATH="$dir/lib" \
    scripts/fuzz-campaign.sh -j "$(nproc)" -a -t "${FUZZ_SECONDS:-360}" -b "$dir" -o "$OUTDIR/fuzz" ${FUZZ_TARGETS:-}
  [[ ${FUZZ_STATE:-1} == 0 ]] || step fuzz-state 120 bash -c "tar -C $dir -cf - corpus | xz -T0 -3 >$OUTDIR/fuzz/fuzz-state.tar.xz"
  # The ledger the campaign updated (this checkout's copy): copy it over tests/fuzz/totals.tsv there.
  cp tests/fuzz/totals.tsv "$OUTDIR/fuzz/totals.tsv"
  cp "$OUTDIR/fuzz/summary.md" "$LOGS/fuzz-summary.md" 2>/dev/null
  rm -rf "$OUTDIR/fuzz/logs/"*.row
}

# ext (see the head): a torch extension that links, the same with a symbol torch lacks, the doctor
# and the truth on both; TE's real libraries when the te stage installed them.
# The truth for one layout: import the module after torch (or dlopen it RTLD_LOCAL|RTLD_NOW, what
# Python does for an extension module, where the node cannot build one).
EXT_TRUTH='import sys, os, ctypes
import torch
path = sys.argv[1]
try:
    if sys.argv[2] == "python":
        sys.path.insert(0, os.path.dirname(path)); import flash_attn_2_cuda; print("EXT LOADS", flash_attn_2_cuda.twice(torch.ones(2)).tolist())
    else:
        ctypes.CDLL(path); print("EXT LOADS")
except (ImportError, OSError) as e:
    print("EXT FAILS", str(e).splitlines()[0])'

run_ext() {
  local root=${EXT_DIR:-/tmp/nvte-ext} v so
  rm -rf "$root"
  step ext-build-good 600 "$PY" scripts/gpu-build-ext.py "$root/good"
  step ext-build-bad 600 "$PY" scripts/gpu-build-ext.py "$root/bad" -DNVTE_EXT_MISSING
  for v in good bad; do
    so=$(ls "$root/$v"/flash_attn_2_cuda*.so 2>/dev/null | head -1)
    step "ext-truth-$v" 120 "$PY" -c "$EXT_TRUTH" "${so:-$root/$v/missing.so}" "$(cat "$root/$v/mode" 2>/dev/null || echo ctypes)"
    step "ext-probe-json-$v" 120 env PYTHONPATH="$root/$v" "$BIN" probe --format json
    step "ext-check-$v" 180 env PYTHONPATH="$root/$v" "$BIN" check "${COMMON[@]}" --no-color -v
  done
  # The probe's cost with the native probe running (TE or flash-attn present), next to without.
  for i in 1 2 3 4 5; do step "ext-probe-time-$i" 60 env PYTHONPATH="$root/good" "$BIN" probe --format json; done
  for i in 1 2 3; do step "ext-probe-time-plain-$i" 60 "$BIN" probe --format json; done
  if [[ -d $TE_PREFIX/transformer_engine ]]; then
    step ext-te-truth 120 env PYTHONPATH="$TE_PREFIX:$PWD/.gpu-te/py" "$PY" -c "$TRUTH" torch,transformer_engine.pytorch
    step ext-te-probe-json 120 env PYTHONPATH="$TE_PREFIX:$PWD/.gpu-te/py" "$BIN" probe --format json
    step ext-te-check 180 env PYTHONPATH="$TE_PREFIX:$PWD/.gpu-te/py" "$BIN" check "${COMMON[@]}" --no-color -v
  fi
  # Every claim against the truth, one PASS/FAIL line each, and the native probe's time.
  step ext-verdicts 60 python3 scripts/gpu-ext-verdicts.py "$LOGS"
  cat "$LOGS/ext-verdicts.log" >>"$SUMMARY"
}

# bench-native (see the head): the budget of issue 22 on a tree with TE and flash-attn.
run_bench_native() {
  local root=${EXT_DIR:-/tmp/nvte-ext} pp i
  install_te || echo "bench-native: no TE, only the flash-attn-like extension is on PYTHONPATH" | tee -a "$SUMMARY"
  ls "$root/good"/flash_attn_2_cuda*.so >/dev/null 2>&1 || step ext-build-good 600 "$PY" scripts/gpu-build-ext.py "$root/good"
  pp=$root/good
  [[ -d $TE_PREFIX/transformer_engine ]] && pp=$TE_PREFIX:$PWD/.gpu-te/py:$pp
  # With TE there, the whole self-test with its Python tier too (issue 40), as pytier-te runs it:
  # TE without the flash-attn-like extension, which TE's import rejects (its flash_attn_2_cuda has
  # no varlen_bwd: the tier then fails every time, and a failed answer is never reused).
  local st_py=()
  [[ -d $TE_PREFIX/transformer_engine ]] &&
    st_py=(NVTE_BENCH_SELFTEST_PYTHON="$PY" NVTE_BENCH_SELFTEST_PYTHON_ENV="CUDNN_PATH=$VENV_CUDNN_DIR PYTHONPATH=$TE_PREFIX:$PWD/.gpu-te/py")
  step bench-native 580 env PYTHONPATH="$pp" NVTE_DOCTOR_BIN="$BIN" NVTE_BENCH_QUICK=1 NVTE_BENCH_RUNS="${NVTE_BENCH_RUNS:-30}" \
    "${st_py[@]}" bench/run.sh "$LOGS/bench-native"
  # The self-test the bench's selftest_python rows ran, twice (the second reuses the first's
  # answer: XDG_CACHE_HOME is the node's), with what decided the Python tier's reuse (-vv).
  if [[ ${#st_py[@]} -gt 0 ]]; then
    for i in 1 2; do
      step "bench-native-selftest-$i" 300 env PYTHONPATH="$TE_PREFIX:$PWD/.gpu-te/py" CUDNN_PATH="$VENV_CUDNN_DIR" "$BIN" selftest "${COMMON[@]}" -vv \
        --python "$PY"
    done
  fi
  for i in 1 2 3; do step "bench-native-laps-$i" 60 env PYTHONPATH="$pp" "$BIN" probe -vv; done
  step bench-native-laps-cold 60 env PYTHONPATH="$pp" "$BIN" probe -vv --no-cache
  { echo "bench-native (PYTHONPATH=$pp):"
    grep -E '^  (native|python_path|gpu):' "$LOGS/bench-native/bench.txt"
    grep -E '^(probe |probe_cold |check |check_3_workloads |nvidia_smi_query |selftest_python)|/ nvidia-smi --query-gpu|check \+ 3 workloads / probe|selftest with TE' "$LOGS/bench-native/bench.txt"
    for i in 1 2; do
      [[ -f $LOGS/bench-native-selftest-$i.log ]] || continue
      echo "  bench-native-selftest-$i:"
      grep -hE "Python tier|^  *(ok|FAILED|ERROR|skipped) +[0-9.]+ s|reused:|not reused|^# exit|^\[|fails|runs" "$LOGS/bench-native-selftest-$i.log" | cut -c1-220 | head -30
    done
    grep -hE 'probe\.[a-z_]+\.seconds|native probe: ' "$LOGS"/bench-native-laps-*.log | head -40
  } 2>&1 | tee -a "$SUMMARY"
}

run_portable() {
  local pack=${NVTE_PORTABLE_PACK:-.gpu-portable/portable.tar.xz} unpacked=${TMPDIR:-/tmp}/nvte-portable
  local bundle=${NVTE_PORTABLE_BUNDLE:-} wheel=${NVTE_WHEEL:-} T=$OUTDIR/portable W=""
  if [[ -z $bundle && -f $pack ]]; then
    rm -rf "$unpacked" && mkdir -p "$unpacked" && chmod 755 "$unpacked"
    step portable-unpack 120 tar -C "$unpacked" -xJf "$pack"
    bundle=$unpacked/portable
    [[ -n $wheel ]] || wheel=$(ls "$unpacked"/wheel/*.whl 2>/dev/null | head -n 1)
  fi
  [[ -n $bundle ]] || bundle=.gpu-carry/portable
  [[ -n $wheel ]] || wheel=$(ls .gpu-carry/wheel/*.whl 2>/dev/null | head -n 1)
  rm -rf "$T"; mkdir -p "$T"; chmod 755 "$T"
  local E=(env -i PATH=/usr/bin:/bin HOME="$T")
  if [[ -x $bundle/bin/nvte-doctor ]]; then
    step portable-env 30 bash -c "ldd --version | head -n 1; cat /etc/os-release | head -n 2; cat \"$bundle/MANIFEST\""
    step portable-version 30 "${E[@]}" "$bundle/bin/nvte-doctor" --version
    step portable-probe 120 "${E[@]}" "$bundle/bin/nvte-doctor" probe --format json -o "$T/probe.json"
    # No TE on the node: without a TE release the workload's verdict is unknown (exit 3), so
    # check names the release the bench assumes too.
    step portable-check 180 "${E[@]}" "$bundle/bin/nvte-doctor" check --no-color --set te.version=2.18.0 \
      --hf-config tests/fixtures/hf/llama-3-8b/config.json
    step portable-explain 120 "${E[@]}" "$bundle/bin/nvte-doctor" explain --no-color --hf-config tests/fixtures/hf/llama-3-8b/config.json
    step portable-rules 60 bash -c "env -i \"$bundle/bin/nvte-doctor\" rules list --format json | grep -m 1 '\"source\"'"
    step portable-selftest 600 env -u NVTE_DOCTOR_SELFTEST_PY "$bundle/bin/nvte-doctor" selftest -v --python "$PY" --format json -o "$T/selftest.json"
  else
    echo "portable: no bundle at $bundle (scripts/build-portable.sh, then scripts/portable-carry.sh)" | tee -a "$SUMMARY"
  fi
  if [[ -f $wheel ]]; then
    # The venv lives where nobody can reach it: $OUTDIR is under root's home (mode 700).
    local U=() py3
    W=$(mktemp -d "${TMPDIR:-/tmp}/nvte-wheel.XXXXXX") && chmod 755 "$W"
    local EW=(env -i PATH=/usr/bin:/bin HOME="$W")
    py3=/usr/bin/python3 # the distribution's, which an unprivileged user can run
    [[ -x $py3 ]] || py3=$(command -v python3)
    [[ $(id -u) == 0 ]] && U=(setpriv --reuid=nobody --regid=nogroup --clear-groups) && chown nobody:nogroup "$W"
    cp "$wheel" "$W/" && chmod 644 "$W/$(basename "$wheel")"
    # A venv of the node's python: the distribution's (Ubuntu's needs python3-venv for ensurepip),
    # else the torch venv's base interpreter; without either's pip, a venv without pip that the
    # torch venv's pip (>= 22.3: --python) installs into. The log says which.
    step wheel-venv 120 "${EW[@]}" "${U[@]}" bash -c '
      t=$1 py3=$2 py=$3
      if "$py3" -m venv "$t/venv"; then echo "venv: $py3 -m venv"; exit 0; fi
      rm -rf "$t/venv"
      if "$py" -m venv "$t/venv"; then echo "venv: $py -m venv (the torch venv base)"; exit 0; fi
      rm -rf "$t/venv"
      "$py3" -m venv --without-pip "$t/venv" && echo "venv: $py3 -m venv --without-pip; pip: $py -m pip --python"' _ "$W" "$py3" "$PY"
    if [[ -x $W/venv/bin/pip ]]; then
      step wheel-install 120 "${EW[@]}" "${U[@]}" "$W/venv/bin/python" -m pip install --no-index --no-deps "$W/$(basename "$wheel")"
    else
      step wheel-install 120 "${EW[@]}" "${U[@]}" "$PY" -m pip --python "$W/venv/bin/python" install --no-index --no-deps "$W/$(basename "$wheel")"
    fi
    step wheel-version 30 "${EW[@]}" "${U[@]}" "$W/venv/bin/nvte-doctor" --version
    step wheel-module-version 30 "${EW[@]}" "${U[@]}" "$W/venv/bin/python" -m nvte_doctor --version
    step wheel-probe 120 bash -c "env -i PATH=/usr/bin:/bin HOME=$W ${U[*]} $W/venv/bin/nvte-doctor probe --format json > $W/wheel-probe.json"
    step wheel-explain 120 "${EW[@]}" "${U[@]}" "$W/venv/bin/nvte-doctor" explain --no-color --hf-config tests/fixtures/hf/llama-3-8b/config.json
    cp "$W/wheel-probe.json" "$T/" 2>/dev/null
  else
    echo "portable: no wheel (scripts/portable-carry.sh packs it)" | tee -a "$SUMMARY"
  fi
  step portable-verdicts 60 "$PY" - "$LOGS" "$T" "$W" <<'PYEOF'
import json, os, sys
logs, t, w = sys.argv[1], sys.argv[2], sys.argv[3]
def log(name):
    try: return open(os.path.join(logs, name + ".log")).read()
    except OSError: return ""
def rc(name):
    text = log(name)
    return int(text.rsplit("# exit ", 1)[1].split()[0]) if "# exit " in text else None
def verdict(ok, claim): print(("PASS " if ok else "FAIL ") + claim)
if log("portable-version"):
    verdict(rc("portable-version") == 0 and "nvte-doctor " in log("portable-version"), "bundle --version runs on this distribution")
    verdict(rc("portable-probe") == 0, "bundle probe exits 0")
    verdict(rc("portable-check") in (0, 1, 2), "bundle check with its own rules exits 0-2")
    # explain's exit 3 is also the verdict "unknown" (no TE where it runs): the verdict line tells.
    verdict(rc("portable-explain") in (0, 1, 2, 3) and "llama-3-8b \u2192 " in log("portable-explain"), "bundle explain gives the workload's verdict")
    verdict("/share/nvte-doctor/rules" in log("portable-rules"), "bundle finds its rules beside itself")
    try:
        st = json.load(open(os.path.join(t, "selftest.json")))
        text = json.dumps(st)
        # The Python tier runs only when the script is found (no NVTE_DOCTOR_SELFTEST_PY here).
        verdict('"check": "python"' in text, "self-test ran its Python tier from the bundle's selftest.py")
    except (OSError, ValueError) as e:
        verdict(False, "self-test JSON readable (%s)" % e)
if log("wheel-venv"):
    how = [l for l in log("wheel-venv").splitlines() if l.startswith("venv: ")]
    verdict(rc("wheel-venv") == 0 and how, "a fresh venv of the node's python (%s)" % (how[-1][6:] if how else "none"))
if log("wheel-install"):
    verdict(rc("wheel-install") == 0, "wheel installs offline into a fresh venv as nobody")
    verdict(log("wheel-version").count("nvte-doctor ") >= 1 and rc("wheel-version") == 0, "nvte-doctor --version from the venv")
    verdict(rc("wheel-module-version") == 0, "python -m nvte_doctor --version")
    try:
        exe = json.load(open(os.path.join(t, "wheel-probe.json")))["facts"]["python"]["executable"]
        verdict(exe == os.path.join(w, "venv/bin/python"), "the wheel examines its venv (%s)" % exe)
    except (OSError, ValueError, KeyError) as e:
        verdict(False, "wheel probe JSON readable (%s)" % e)
    verdict(rc("wheel-explain") in (0, 1, 2, 3) and "llama-3-8b \u2192 " in log("wheel-explain"), "wheel explain gives the workload's verdict")
PYEOF
  grep -E '^(PASS|FAIL)' "$LOGS/portable-verdicts.log" >>"$SUMMARY" || true
}

echo "# nvte-doctor GPU validation, stage $STAGE, $(date -u +%FT%TZ), binary $BIN" >>"$SUMMARY"
case $STAGE in
  basic) run_basic ;;
  matrix) run_matrix ;;
  interleaved) run_interleaved ;;
  python) run_python ;;
  nccl) run_nccl ;;
  gputest) run_gputest ;;
  models) run_models ;;
  coldstart) run_coldstart ;;
  readme) run_readme ;;
  bench) run_bench ;;
  te) run_te ;;
  te-models) run_te_models ;;
  cublas) run_cublas ;;
  preflight) run_preflight ;;
  hostcheck) run_hostcheck ;;
  fuzz) run_fuzz ;;
  ext) run_ext ;;
  bench-native) run_bench_native ;;
  threads) run_threads ;;
  pytier) run_pytier ;;
  pytier-te) run_pytier_te ;;
  pyreuse) run_pyreuse ;;
  bytecode) run_bytecode ;;
  plancache) run_plancache ;;
  cudnn-support) run_cudnn_support ;;
  verify-fix) run_verify_fix ;;
  verdict-truth) run_verdict_truth ;;
  portable) run_portable ;;
  all) run_basic; run_gputest; run_models; run_coldstart; run_nccl; run_matrix; run_interleaved; run_python ;;
  *) echo "unknown stage $STAGE" >&2 ;;
esac
# One tarball per stage, so that several stages in one device call do not overwrite each other.
tar -czf "$OUTDIR/gpu-validate-$STAGE.tar.gz" -C "$OUTDIR" gpu-validate summary.txt 2>/dev/null
rm -rf "$LOGS"
cat "$SUMMARY"
