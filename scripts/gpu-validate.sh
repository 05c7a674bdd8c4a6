#!/usr/bin/env bash
# GPU-node validation, run on the device machine from the repo root with the carried binary
# (scripts/gpu-carry.sh builds it into .gpu-carry/). Every step is guarded: one failure never
# stops the rest. All logs go under $OUT/validate and are packed into $OUT/validate.tar.gz.
set -u
OUT=${OUT:-/tmp/nvte-validate}
BIN=${NVTE_DOCTOR_BIN:-$PWD/.gpu-carry/nvte-doctor}
LOG=$OUT/validate
mkdir -p "$LOG"
export NVTE_DOCTOR_RULES=$PWD/rules

step() { # step NAME CMD... : runs CMD, keeps stdout/stderr, exit code and wall time
  local name=$1; shift
  local start end rc
  start=$(date +%s.%N)
  "$@" >"$LOG/$name.out" 2>"$LOG/$name.err"; rc=$?
  end=$(date +%s.%N)
  printf '%-34s rc=%-3s %8.3f s\n' "$name" "$rc" "$(awk "BEGIN{print $end - $start}")" | tee -a "$LOG/summary.txt"
}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)  kernel: $(uname -r)"
  nvidia-smi --query-gpu=index,name,pci.device_id,pci.bus_id,driver_version,compute_cap,memory.total,mig.mode.current --format=csv 2>&1
  echo "python3: $(command -v python3)"
  ls -la /usr/lib/x86_64-linux-gnu/ | grep -E 'libcudnn.so|libnccl.so' 2>&1
} >"$LOG/node.txt" 2>&1

section=${1:-all}
if [[ $section == all || $section == probe ]]; then
  step probe-text          "$BIN" probe --no-color
  step probe-json          "$BIN" probe --format json
  step probe-verbose       "$BIN" probe --no-color -v
  step check-text          "$BIN" check --no-color -v
  step check-json          "$BIN" check --format json
  step explain-llama       "$BIN" explain --no-color --hf-config tests/fixtures/hf/llama-3-8b/config.json
  step explain-deepseek    "$BIN" explain --no-color --hf-config tests/fixtures/hf/deepseek-v3/config.json
  step explain-sweep       "$BIN" explain --no-color --workload-set qkv_format=bshd --sweep head_dim_qk=64,128,192,256 --sweep attn_mask_type=no_mask,causal
  # The ground truth the probe must match: what torch itself loads.
  step torch-truth python3 -c 'import torch, ctypes, os
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "nccl", torch.cuda.nccl.version())
maps=open("/proc/self/maps").read().split("\n")
print("\n".join(sorted({l.split()[-1] for l in maps if "libcudnn.so" in l or "libnccl.so" in l or "libnvrtc" in l})))'
  for i in 1 2 3 4 5; do step "probe-time-$i" "$BIN" probe --format json; done
  for i in 1 2 3; do step "nvidia-smi-query-$i" nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv; done
fi

tar -C "$OUT" -czf "$OUT/validate.tar.gz" validate
cat "$LOG/summary.txt"
