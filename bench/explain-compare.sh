#!/usr/bin/env bash
# Two builds' explain loops, alternately, on one machine: the way to compare them where one run's
# rate is noisy (the shared GPU node, where one binary's runs spread by 1.5x). Each round runs
# BEFORE then AFTER for 1 s (one window where the tool has windows) with bench/run.sh's inputs.
#
#   bench/explain-compare.sh BEFORE_TOOL AFTER_TOOL [ROUNDS]    (tools: nvte-bench-explain-rate)
#
# Prints one line per round ("before N  after M", explains per CPU second) and the ranges.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -ge 2 ]] || { echo "usage: $0 BEFORE_TOOL AFTER_TOOL [ROUNDS]" >&2; exit 2; }
before=$1 after=$2 rounds=${3:-5}
hf=$repo/tests/fixtures/hf
args=(--rules "${NVTE_BENCH_RULES:-$repo/rules}" --facts "$repo/tests/fixtures/snapshots/h100-node.json"
      --hf-config "$hf/llama-3-8b/config.json" --hf-config "$hf/mixtral-8x7b/config.json"
      --hf-config "$hf/deepseek-v3/config.json" --seconds 1)
rate() { # rate TOOL: one 1 s run's explains per CPU second
  local extra=()
  # Tools from before the windows existed take no --windows (their usage does not name it).
  if "$1" --bogus 2>&1 | grep -q -- --windows; then extra=(--windows 1); fi
  "$1" "${args[@]}" "${extra[@]}" | sed -n 's/.*"value":\([0-9]*\).*/\1/p'
}
b_all=() a_all=()
for ((i = 1; i <= rounds; i++)); do
  b=$(rate "$before") a=$(rate "$after")
  b_all+=("$b") a_all+=("$a")
  echo "before $b  after $a"
done
range() { printf '%s\n' "$@" | sort -n | sed -n '1p;$p' | paste -sd- ; }
echo "before $(range "${b_all[@]}"), after $(range "${a_all[@]}") explains per CPU second over $rounds rounds"
