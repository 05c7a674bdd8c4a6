#!/usr/bin/env bash
# bench/run.sh [OUT_DIR]: issue 9's benchmark, in one run on one node. Measures whole-process
# wall time and peak RSS (repeated runs, medians) of nvte-doctor probe / check / check with three
# workloads / run when nothing changed / selftest cold and warm, next to what users run instead
# (nvidia-smi --query-gpu, nvidia-smi -q, python3 -m torch.utils.collect_env), plus the
# in-process explain rate; then checks that probe starts no program (no Python), creates no CUDA
# context and that an unchanged run loads no vendor library. Prints a table of medians and
# ratios and writes OUT_DIR/bench.json (+ bench.txt, bench.jsonl and the logs).
#
# Binaries: NVTE_DOCTOR_BIN=/path/nvte-doctor uses a prebuilt doctor (no compiler needed); the
# helpers (nvte-bench-measure, nvte-bench-explain-rate, cuda-trap/libcuda.so.1) are taken from
# NVTE_BENCH_TOOLS, else next to the binary, else from its bench/ subdirectory. Without
# NVTE_DOCTOR_BIN the script builds everything in build-bench/ first, as NVTE_BENCH_BUILD_TYPE
# (default RelWithDebInfo: the type the README, scripts/bootstrap.sh and the Debian package build,
# so the numbers are those of the binary users get). The meta line "build_type" says which type
# was measured (nvte-bench-explain-rate --build-type; the tools are built with the doctor).
# The other build type in the same run: NVTE_BENCH_COMPARE_BUILD_TYPE (default Release; empty for
# none) builds it in build-bench-TYPE/ and measures probe, check_3_workloads and the explain rate
# with it too, as rows named NAME@TYPE; with a prebuilt doctor, NVTE_BENCH_COMPARE_BIN names that
# build's nvte-doctor (its nvte-bench-explain-rate next to it), default $tools/compare/nvte-doctor
# when it exists (scripts/gpu-carry.sh with NVTE_GPU_COMPARE_BUILD_TYPE packs one there); a
# binary without that tool beside it (another commit's, carried alone) names its rows by its
# directory instead (NAME@compare).
# Knobs: NVTE_BENCH_TE_VERSION (assume that TE release for check_3_workloads: --set te.version),
# NVTE_BENCH_RUNS (30), NVTE_BENCH_SLOW_RUNS (3: collect_env, selftest),
# NVTE_BENCH_EXPLAIN_SECONDS (5, in five windows), NVTE_BENCH_RULES (rules/ of this tree), NVTE_BENCH_SELFTEST_ARGS,
# NVTE_BENCH_SELFTEST_PYTHON and NVTE_BENCH_SELFTEST_PYTHON_ENV (the whole self-test with the Python tier, see below),
# NVTE_BENCH_ROOT (a node root made by bench/fixture-root.sh: adds probe_root, the probe of that
# tree with its TE on PYTHONPATH, and probe_root_no_te, the same tree without it, so the native
# probe's cost shows as their difference), NVTE_BENCH_QUICK=1 (only probe, check and nvidia-smi:
# no run, explain rate, selftest or collect_env). The environment is the doctor's: PYTHONPATH with
# TE or flash-attn on it makes probe and check run the native probe; the meta line "native" says
# what it linked (issue 22's budget is measured on such a tree).
# OUT_DIR defaults to $OUT, else ./bench-out.
#
# Exit status: 0 when every measurement ran (timings never fail anything), 1 when the harness
# broke (a doctor command could not run or ended with 3 / a signal), 4 when a behaviour check
# failed (Python started, cuInit called, vendor library loaded by an unchanged run).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
out=${1:-${OUT:-$PWD/bench-out}}
runs=${NVTE_BENCH_RUNS:-30}
slow_runs=${NVTE_BENCH_SLOW_RUNS:-3}
explain_seconds=${NVTE_BENCH_EXPLAIN_SECONDS:-5}
rules=${NVTE_BENCH_RULES:-$repo/rules}
hf=$repo/tests/fixtures/hf
snapshot=$repo/tests/fixtures/snapshots/h100-node.json

bin=${NVTE_DOCTOR_BIN:-}
compare_type=${NVTE_BENCH_COMPARE_BUILD_TYPE-Release}
compare_bin=${NVTE_BENCH_COMPARE_BIN:-}
if [[ -z $bin ]]; then
  build=${NVTE_BENCH_BUILD_DIR:-$repo/build-bench}
  build_type=${NVTE_BENCH_BUILD_TYPE:-RelWithDebInfo}
  echo "bench: building $build_type binaries in $build" >&2
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" -DNVTE_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j"$(nproc)" --target nvte-bench >&2
  bin=$build/nvte-doctor
  if [[ -n $compare_type && $compare_type != "$build_type" ]]; then
    compare_build=$build-$(tr '[:upper:]' '[:lower:]' <<<"$compare_type")
    echo "bench: building $compare_type binaries in $compare_build for the comparison" >&2
    cmake -S "$repo" -B "$compare_build" -G Ninja -DCMAKE_BUILD_TYPE="$compare_type" -DNVTE_BUILD_TESTS=OFF >/dev/null
    cmake --build "$compare_build" -j"$(nproc)" --target nvte-bench >&2
    compare_bin=$compare_build/nvte-doctor
    cp "$compare_build/bench/nvte-bench-explain-rate" "$compare_build/" 2>/dev/null || true
  fi
fi
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
tools=${NVTE_BENCH_TOOLS:-}
if [[ -z $tools ]]; then
  for d in "$(dirname "$bin")" "$(dirname "$bin")/bench"; do
    [[ -x $d/nvte-bench-measure ]] && { tools=$d; break; }
  done
fi
if [[ -z $compare_bin && -n $tools && -x $tools/compare/nvte-doctor ]]; then compare_bin=$tools/compare/nvte-doctor; fi
measure=${tools:+$tools/nvte-bench-measure}
if [[ -z $measure || ! -x $measure ]]; then
  echo "bench: nvte-bench-measure not found (set NVTE_BENCH_TOOLS)" >&2
  exit 1
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/nvte-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=$out/bench.jsonl
logs=$out/logs
rm -f "$results"
mkdir -p "$logs"
broken=0
behaviour_failed=0

json_str() { # a JSON string literal
  local s=${1//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/ }
  s=${s//$'\t'/ }
  printf '"%s"' "$s"
}
meta() { printf '{"meta":{%s:%s}}\n' "$(json_str "$1")" "$(json_str "$2")" >>"$results"; }
check() { # name ok(true|false|null) detail
  printf '{"check":%s,"ok":%s,"detail":%s}\n' "$(json_str "$1")" "$2" "$(json_str "$3")" >>"$results"
  if [[ $2 == false ]]; then behaviour_failed=1; fi
}
# m NAME RUNS [measure options] -- COMMAND...; a doctor command (doctor=1) that could not run or
# ended with exit 3, a signal or a timeout breaks the harness.
m() {
  local name=$1 n=$2 doctor=$3
  shift 3
  echo "bench: $name ($n runs)" >&2
  local line
  line=$("$measure" measure --name "$name" --runs "$n" --log "$logs/$name.stderr" "$@") || true
  if [[ -z $line ]]; then line="{\"name\":\"$name\",\"error\":\"the measuring helper failed\"}"; fi
  echo "$line" >>"$results"
  if [[ $doctor == 1 ]] && { [[ $line == *'"error"'* ]] || [[ $line =~ \"(exit\ 3|signal\ [0-9]+|timeout)\" ]]; }; then
    echo "bench: $name did not run cleanly: $line (see $logs/$name.stderr)" >&2
    broken=1
  fi
}

# ---- what, where ----
meta date "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
meta host "$(uname -n)"
meta cpu "$(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo) x $(nproc) ($(uname -r))"
meta doctor "$("$bin" --version 2>&1 | head -1) $bin"
meta runs "$runs (slow: $slow_runs)"
# The build type measured: the tools are compiled with the doctor (bench/CMakeLists.txt).
build_type_of() { # DIR: the type of the nvte-bench-explain-rate in DIR
  if [[ -x $1/nvte-bench-explain-rate ]]; then "$1/nvte-bench-explain-rate" --build-type 2>/dev/null || echo unknown
  else echo "unknown (no nvte-bench-explain-rate in $1)"; fi
}
meta build_type "$(build_type_of "$tools")"
compare_label=
if [[ -n $compare_bin && -x $compare_bin ]]; then
  compare_label=$(build_type_of "$(dirname "$compare_bin")")
  # Another commit's binary carried without its tools (NVTE_BENCH_COMPARE_BIN, compare/): its rows
  # are named by its directory, and the meta line says what it is.
  if [[ $compare_label == unknown* ]]; then compare_label=$(basename "$(dirname "$compare_bin")"); fi
  meta compare "rows NAME@$compare_label: $compare_bin ($("$compare_bin" --version 2>/dev/null | head -1))"
fi
meta load "$(cut -d' ' -f1-3 /proc/loadavg) (1/5/15-min load average at the start)"
smi=$(command -v nvidia-smi || true)
if [[ -n $smi ]]; then
  meta gpu "$("$smi" --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>&1 | paste -sd ';' -)"
else
  meta gpu "none (no nvidia-smi)"
fi
meta python_path "${PYTHONPATH:-(unset)}"
# What the native probe links in this environment (it runs only with TE or flash-attn installed).
probe_json=$("$bin" probe --format json 2>/dev/null || true)
native_counts=$(grep -oE '"(extension_count|object_count|broken_count)": *[0-9]+' <<<"$probe_json" | tr -d ' "' | paste -sd ' ' - || true)
native_packages=$(grep -oE '"package": *"[A-Za-z0-9_]+"' <<<"$probe_json" | sed -E 's/.*"([^"]+)"$/\1/' | sort | uniq -c |
                  awk '{printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1}' || true)
meta native "${native_counts:-not run (neither TE nor flash-attn found)}${native_packages:+ ($native_packages)}"
quick=${NVTE_BENCH_QUICK:-0}
help=$("$bin" --help 2>&1 || true)
# NVIDIA libraries an LD_DEBUG=files log shows: "NAME" when it was loaded, "NAME (tried)" when a
# dlopen looked for it and found nothing.
vendor_libraries() {
  local re='lib(cuda|nvidia-ml|cudnn[a-z_]*|nccl|nvrtc[a-z-]*|cudart|cublas[A-Za-z]*)\.so[.0-9]*'
  local loaded tried
  loaded=$(grep -E "file=[^ ]*$re \[[0-9]+\];  generating link map" "$1" | grep -oE "file=[^ ]*" | sed 's/file=//' | sort -u || true)
  tried=$(grep -E "file=[^ ]*$re \[[0-9]+\];  dynamically loaded by" "$1" | grep -oE "file=[^ ]*" | sed 's/file=//' | sort -u || true)
  { for l in $loaded; do echo "$l"; done
    for t in $tried; do grep -qxF "$t" <<<"$loaded" || echo "$t (tried)"; done; } | paste -sd ' ' -
}
has_command() { grep -Eq "^ +$1( |$)" <<<"$help"; }

# ---- the doctor ----
hf_args=(--hf-config "$hf/llama-3-8b/config.json" --hf-config "$hf/mixtral-8x7b/config.json"
         --hf-config "$hf/deepseek-v3/config.json")
# The probe's file cache (issue 40) in a directory of the bench's own: "probe" is measured warm,
# as a timer or prolog runs it the second time and later (the warm-up runs fill it), and
# "probe_cold" with --no-cache, as a first run or one after every library changed.
export XDG_CACHE_HOME=$work/xdg-cache
no_cache=()
"$bin" probe --help 2>&1 | grep -q -- '--no-cache' && no_cache=(--no-cache)
# Process start (issue 40, round 5): what every command pays before its own work (exec, the
# dynamic loader, static initialisers, the command line's parser); no target, the floor of the rows below.
m version "$runs" 1 --warmup 2 -- "$bin" --version
m probe "$runs" 1 --warmup 2 -- "$bin" probe
if [[ ${#no_cache[@]} -gt 0 ]]; then
  m probe_cold "$runs" 1 --warmup 2 -- "$bin" probe --no-cache
fi
# With NVML and libcuda asked too (what the systemd units run): no target, shown for its cost.
m probe_deep "$runs" 1 --warmup 2 -- "$bin" probe --deep
if [[ -n ${NVTE_BENCH_ROOT:-} ]]; then
  root_env=(env -i PATH=/opt/torch/.venv/bin:/usr/bin VIRTUAL_ENV=/opt/torch/.venv)
  root_env+=(XDG_CACHE_HOME="$XDG_CACHE_HOME")
  m probe_root "$runs" 1 --warmup 2 -- "${root_env[@]}" PYTHONPATH=/opt/te "$bin" probe --root "$NVTE_BENCH_ROOT"
  if [[ ${#no_cache[@]} -gt 0 ]]; then
    m probe_root_cold "$runs" 1 --warmup 2 -- "${root_env[@]}" PYTHONPATH=/opt/te "$bin" probe --root "$NVTE_BENCH_ROOT" --no-cache
  fi
  m probe_root_no_te "$runs" 1 --warmup 2 -- "${root_env[@]}" "$bin" probe --root "$NVTE_BENCH_ROOT"
fi
m check "$runs" 1 --warmup 1 -- "$bin" check --rules "$rules"
# Without TE on the node every workload's verdict is unknown (exit 3): NVTE_BENCH_TE_VERSION
# assumes a release, as a user asking "would it run with TE X" does (--set te.version=X).
te_args=()
[[ -z ${NVTE_BENCH_TE_VERSION:-} ]] || te_args=(--set "te.version=$NVTE_BENCH_TE_VERSION")
m check_3_workloads "$runs" 1 --warmup 1 -- "$bin" check --rules "$rules" "${te_args[@]}" "${hf_args[@]}"
if [[ -n $compare_label ]]; then
  m "probe@$compare_label" "$runs" 1 --warmup 2 -- "$compare_bin" probe
  m "check_3_workloads@$compare_label" "$runs" 1 --warmup 1 -- "$compare_bin" check --rules "$rules" "${te_args[@]}" "${hf_args[@]}"
fi

if [[ $quick == 1 ]]; then
  check run_no_vendor_library null "not measured (NVTE_BENCH_QUICK=1)"
elif has_command run; then
  state=$work/run-state
  mkdir -p "$state"
  cat >"$work/run.yaml" <<EOF
state_dir: $state
rules: [$rules]
selftest:
  policy: never
EOF
  # The first run does the full check and records the fingerprint; the measured ones find
  # nothing changed.
  "$bin" run --config "$work/run.yaml" >"$logs/run_first.stdout" 2>"$logs/run_first.stderr" || true
  m run_unchanged "$runs" 1 --warmup 2 -- "$bin" run --config "$work/run.yaml"
  LD_DEBUG=files "$bin" run --config "$work/run.yaml" >/dev/null 2>"$work/run.lddebug" || true
  vendor=$(vendor_libraries "$work/run.lddebug")
  if [[ -z $vendor ]]; then check run_no_vendor_library true "an unchanged run opened no NVIDIA library (LD_DEBUG=files)"
  else check run_no_vendor_library false "an unchanged run opened: $vendor"; fi
else
  check run_no_vendor_library null "this nvte-doctor has no run command"
fi

explain_tool=$tools/nvte-bench-explain-rate
if [[ $quick == 1 ]]; then
  :
elif [[ -x $explain_tool ]]; then
  echo "bench: explain rate (${explain_seconds}s)" >&2
  if line=$("$explain_tool" --rules "$rules" --facts "$snapshot" "${hf_args[@]}" --seconds "$explain_seconds" 2>"$logs/explain_rate.stderr"); then
    echo "$line" >>"$results"
  else
    echo "{\"name\":\"explain_rate\",\"error\":\"failed, see logs/explain_rate.stderr\"}" >>"$results"
    broken=1
  fi
else
  echo "{\"name\":\"explain_rate\",\"error\":\"nvte-bench-explain-rate not found\"}" >>"$results"
fi
compare_explain=$(dirname "${compare_bin:-/nonexistent/x}")/nvte-bench-explain-rate
if [[ $quick != 1 && -n $compare_label && -x $compare_explain ]]; then
  echo "bench: explain rate of the $compare_label build (${explain_seconds}s)" >&2
  if line=$("$compare_explain" --rules "$rules" --facts "$snapshot" "${hf_args[@]}" --seconds "$explain_seconds" \
              --name "explain_rate@$compare_label" 2>"$logs/explain_rate_compare.stderr"); then
    echo "$line" >>"$results"
  else
    echo "{\"name\":\"explain_rate@$compare_label\",\"error\":\"failed, see logs/explain_rate_compare.stderr\"}" >>"$results"
  fi
fi

if [[ $quick != 1 ]] && has_command selftest; then
  # Cold: CUDA's JIT cache disabled. The doctor's own kernel cache (selftest-kernels/ in the
  # bench's cache directory) is kept as a node keeps it: the warm-up run compiles cuDNN's plans
  # and the reference and stores them, the measured runs load them (a node from its second
  # self-test on). selftest_cold_nocache: --no-cache too, so every run compiles everything (a
  # node's first self-test). Warm: CUDA's JIT cache that the warm-up run filled. (A cold page
  # cache needs root to drop; not done here.)
  # NVTE_BENCH_SELFTEST_ARGS: extra arguments (word-split), e.g. to pick the tier or the workload.
  read -r -a st_args <<<"${NVTE_BENCH_SELFTEST_ARGS:-}"
  # The CUDA tier (driver, NVRTC, cuDNN forward + backward at the default workload, NCCL), as the
  # target defines it: --python '' leaves out the Python tier (importing torch alone takes 5 s).
  m selftest_cold "$slow_runs" 0 --warmup 1 --timeout 120 --env CUDA_CACHE_DISABLE=1 -- "$bin" selftest --rules "$rules" --python '' "${st_args[@]}"
  if "$bin" selftest --help 2>&1 | grep -q -- '--no-cache'; then
    m selftest_cold_nocache "$slow_runs" 0 --warmup 0 --timeout 120 --env CUDA_CACHE_DISABLE=1 -- "$bin" selftest --rules "$rules" --python '' --no-cache "${st_args[@]}"
  fi
  m selftest_warm "$slow_runs" 0 --warmup 1 --timeout 120 --env "CUDA_CACHE_PATH=$work/cuda-cache" -- "$bin" selftest --rules "$rules" --python '' "${st_args[@]}"
fi

# The whole self-test with the Python tier (NVTE_BENCH_SELFTEST_PYTHON: an interpreter with TE;
# NVTE_BENCH_SELFTEST_PYTHON_ENV: KEY=VALUE words for its runs, e.g. CUDNN_PATH), in quick mode
# too: selftest_python as an unchanged node meets it in a prolog (the warm-up run keeps the tier's
# answer, the measured runs reuse it while the CUDA checks run), selftest_python_fresh with the
# tier run every time (--fresh; its bytecode cached by the warm-up).
if [[ -n ${NVTE_BENCH_SELFTEST_PYTHON:-} ]] && has_command selftest; then
  read -r -a st_args <<<"${NVTE_BENCH_SELFTEST_ARGS:-}"
  st_env=()
  for kv in ${NVTE_BENCH_SELFTEST_PYTHON_ENV:-}; do st_env+=(--env "$kv"); done
  m selftest_python "$slow_runs" 0 --warmup 1 --timeout 300 "${st_env[@]}" -- "$bin" selftest --rules "$rules" \
    --python "$NVTE_BENCH_SELFTEST_PYTHON" "${st_args[@]}"
  if "$bin" selftest --help 2>&1 | grep -q -- '--fresh'; then
    m selftest_python_fresh "$slow_runs" 0 --warmup 0 --timeout 300 "${st_env[@]}" -- "$bin" selftest --rules "$rules" \
      --python "$NVTE_BENCH_SELFTEST_PYTHON" --fresh "${st_args[@]}"
  fi
fi

# ---- what users run instead ----
if [[ -n $smi ]]; then
  m nvidia_smi_query "$runs" 0 --warmup 2 -- "$smi" --query-gpu=name,compute_cap,driver_version --format=csv
  m nvidia_smi_q "$runs" 0 --warmup 1 -- "$smi" -q
fi
py=$(command -v python3 || true)
if [[ $quick != 1 && -n $py ]] && "$py" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' 2>/dev/null; then
  m collect_env "$slow_runs" 0 --warmup 1 --timeout 300 -- "$py" -m torch.utils.collect_env
fi

# ---- behaviour of probe: no program started (so no Python), no CUDA context ----
fake=$work/fake-bin
mkdir -p "$fake"
for name in python python3 python3.{6,7,8,9,10,11,12,13,14} pip pip3 ldconfig; do
  printf '#!/bin/sh\necho "%s $*" >>"%s/started"\nexit 1\n' "$name" "$work" >"$fake/$name"
  chmod +x "$fake/$name"
done
LD_DEBUG=files PATH="$fake:$PATH" "$bin" probe >/dev/null 2>"$work/probe.lddebug" || true
# Every exec'd dynamic program prints "initialize program:"; the first is nvte-doctor itself.
programs=$(grep -oE 'initialize program: .*' "$work/probe.lddebug" | sed 's/initialize program: //' | tail -n +2 | sort -u | paste -sd ' ' - || true)
started=$(cat "$work/started" 2>/dev/null | paste -sd ';' - || true)
if [[ -n $started ]] || grep -qiE 'python' <<<"$programs"; then
  check probe_no_python false "probe started: ${started:-$programs}"
else
  check probe_no_python true "no python* on PATH ran (fake interpreters first on PATH) and LD_DEBUG saw no Python start"
fi
if [[ -z $programs ]]; then check probe_no_exec true "probe exec'd no program (LD_DEBUG=files)"
else check probe_no_exec null "probe exec'd: $programs"; fi
if command -v strace >/dev/null; then
  strace -f -qq -e trace=execve -o "$work/probe.strace" "$bin" probe >/dev/null 2>&1 || true
  n=$(grep -c 'execve(' "$work/probe.strace" || true)
  if [[ $n -le 1 ]]; then check probe_no_exec_strace true "strace -f: one execve (nvte-doctor itself)"
  else check probe_no_exec_strace null "strace -f: $((n - 1)) execve besides the doctor: $(grep 'execve(' "$work/probe.strace" | tail -n +2 | cut -c1-120 | paste -sd ';' -)"; fi
fi
vendor=$(vendor_libraries "$work/probe.lddebug")
check probe_vendor_libraries null "dlopen'd by probe (LD_DEBUG=files, its child processes included): ${vendor:-none}"

trap_dir=$tools/cuda-trap
if [[ -e $trap_dir/libcuda.so.1 ]]; then
  : >"$work/cuda-trap.log"
  NVTE_BENCH_CUDA_TRAP_LOG=$work/cuda-trap.log LD_LIBRARY_PATH="$trap_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$bin" probe >/dev/null 2>"$logs/probe_cuda_trap.stderr" || true
  if grep -q '^cuInit' "$work/cuda-trap.log"; then
    check probe_no_cuda_context false "cuInit was called ($(paste -sd ';' "$work/cuda-trap.log"))"
  elif grep -q '^loaded' "$work/cuda-trap.log"; then
    check probe_no_cuda_context true "the trap libcuda was loaded $(grep -c '^loaded' "$work/cuda-trap.log")x and cuInit never called"
  else
    check probe_no_cuda_context true "libcuda was never loaded (the trap on LD_LIBRARY_PATH stayed unused), so no CUDA context"
  fi
else
  check probe_no_cuda_context null "no trap libcuda at $trap_dir"
fi

# ---- the table ----
"$measure" report --input "$results" --json "$out/bench.json" | tee "$out/bench.txt" || broken=1
echo "bench: wrote $out/bench.json, $out/bench.txt" >&2
if [[ $broken == 1 ]]; then exit 1; fi
if [[ $behaviour_failed == 1 ]]; then exit 4; fi
exit 0
