#!/usr/bin/env bash
# Two nvte-doctor binaries' outputs, byte for byte, over the command lines an explain change can
# move: check and explain, text and JSON, on the H100 and A100 snapshots with the Hugging Face and
# Megatron fixtures, a sweep, --fix, explain's test cases (`rules lint`) and `rules list`.
#
#   bench/explain-outputs.sh OLD_BINARY NEW_BINARY
#
# Prints one line per command that differs (stdout, stderr or exit code; time stamps masked) and
# "N of M identical"; exits 1 when any differs.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -eq 2 ]] || { echo "usage: $0 OLD_BINARY NEW_BINARY" >&2; exit 2; }
old=$1 new=$2
# Both read the rules of this checkout (a copied binary finds none beside itself).
export NVTE_DOCTOR_RULES=$repo/rules
snap=$repo/tests/fixtures/snapshots hf=$repo/tests/fixtures/hf mg=$repo/tests/fixtures/megatron
hf3=(--hf-config "$hf/llama-3-8b/config.json" --hf-config "$hf/mixtral-8x7b/config.json" --hf-config "$hf/deepseek-v3/config.json")
hfall=()
for d in "$hf"/*/; do hfall+=(--hf-config "$d/config.json"); done
mgall=()
for f in "$mg"/*; do mgall+=(--megatron-args "$f"); done
cases=()
for node in h100-node a100-node h100-node-te; do
  for fmt in text json; do
    cases+=("check --facts $snap/$node.json --format $fmt")
    cases+=("check --facts $snap/$node.json --format $fmt ${hf3[*]}")
    cases+=("explain --facts $snap/$node.json --format $fmt ${hfall[*]}")
    cases+=("explain --facts $snap/$node.json --format $fmt ${mgall[*]}")
  done
done
cases+=("explain --facts $snap/h100-node.json --hf-config $hf/deepseek-v3/config.json --sweep max_seqlen_q=4096,32768 --sweep head_dim_qk=64,128,192,256")
cases+=("explain --facts $snap/a100-node.json --format json --hf-config $hf/llama-3-8b/config.json --sweep qkv_format=bshd,sbhd,thd --set cudnn.version=9.3.0")
cases+=("explain --facts $snap/a100-node.json --hf-config $hf/deepseek-v3/config.json --fix")
cases+=("explain --facts $snap/h100-node.json --format json --hf-config $hf/deepseek-v3/config.json --fix")
cases+=("check --facts $snap/a100-node.json --format json ${mgall[*]}")
cases+=("rules lint")
cases+=("rules list --format json")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
same=0 n=0
for c in "${cases[@]}"; do
  n=$((n + 1))
  # shellcheck disable=SC2086 # the command lines are split on purpose
  "$old" --no-color $c >"$out/o.out" 2>"$out/o.err"
  echo "rc=$?" >>"$out/o.err"
  # shellcheck disable=SC2086
  "$new" --no-color $c >"$out/n.out" 2>"$out/n.err"
  echo "rc=$?" >>"$out/n.err"
  # The report's time stamp is the one thing that may differ.
  sed -i -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z/TIME/g' "$out"/*.out "$out"/*.err
  if cmp -s "$out/o.out" "$out/n.out" && cmp -s "$out/o.err" "$out/n.err"; then
    same=$((same + 1))
  else
    echo "differs: ${c:0:160}"
  fi
done
echo "$same of $n identical"
[[ $same -eq $n ]]
