#!/usr/bin/env bash
# Regenerates the fixture part of docs/examples.md from real runs of the built binary:
#
#   scripts/regen-examples.sh [BINARY]        (default: build/nvte-doctor)
#
# Everything between the "regen-examples: begin" and "end" markers is rewritten: each example
# below is run from the repository root on the committed fixtures and facts snapshots, and its
# command, output and exit status are written as a console block. The part above the markers
# (captured on a GPU node by scripts/gpu-validate.sh readme) is kept as recorded. The file is
# replaced atomically; a failed run leaves it as it was.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/nvte-doctor}
DOC=docs/examples.md
[[ -x $BIN ]] || { echo "regen-examples: $BIN is not built (scripts/bootstrap.sh)" >&2; exit 3; }
grep -q '^<!-- regen-examples: begin -->$' "$DOC" && grep -q '^<!-- regen-examples: end -->$' "$DOC" ||
  { echo "regen-examples: $DOC has no regen-examples markers" >&2; exit 3; }

H100=tests/fixtures/snapshots/h100-node.json
A100=tests/fixtures/snapshots/a100-node.json
section=$(mktemp)
trap 'rm -f "$section" "$DOC.tmp"' EXIT

# example "prose" ARGS... : the prose, then "$ nvte-doctor ARGS" with its output and exit status.
example() {
  local prose=$1; shift
  local out rc=0
  out=$("$BIN" "$@" --rules rules 2>&1) || rc=$?
  {
    printf '%s\n\n```console\n$ nvte-doctor' "$prose"
    printf ' %s' "$@"
    printf '\n%s\n$ echo $?\n%s\n```\n\n' "$out" "$rc"
  } >>"$section"
}

example "A job's own TE debug log (\`NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2\`), here pasted from Ray output: packed
sequences (thd) with MLA head dims on Blackwell under TE 2.1, where TE found no backend. Each
distinct \`Running with config=\` block is a workload explained with the versions TE logged, and
TE's own verdict is checked against the doctor's:" \
  explain --facts "$H100" --te-log tests/fixtures/te-logs/v2.1-blackwell-thd-ray.log

example "Incident 1 of the design, DeepSeek-V3 (head_dim_qk 192, v 128) on an A100 (sm80) with TE 2.3 and
\`NVTE_FLASH_ATTN=0 NVTE_UNFUSED_ATTN=0\`, asked of the H100 snapshot with \`--set\` (what-if). Every
printed command is verified by re-running the model with the change applied (\`→\` what the
workload then gets) or marked unverified with the reason (docs/fix-search.md):" \
  explain --facts "$H100" --hf-config tests/fixtures/hf/deepseek-v3/config.json \
  --set gpu.compute_capability=8.0 --set te.version=2.3.0 --set env.NVTE_FLASH_ATTN=0 --set env.NVTE_UNFUSED_ATTN=0 --no-color

example "The same question for scripts: only the verified fixes, best first, one per line:" \
  explain --facts "$H100" --hf-config tests/fixtures/hf/deepseek-v3/config.json \
  --set gpu.compute_capability=8.0 --set te.version=2.3.0 --set env.NVTE_FLASH_ATTN=0 --set env.NVTE_UNFUSED_ATTN=0 --fix

example "A model whose layers attend differently is one workload per variant; what TE cannot run is a
finding that names the config key:" \
  explain --facts "$A100" --hf-config tests/fixtures/hf/gemma-2-9b/config.json --no-color

example "A Megatron-LM launch script, read as it is (it runs nothing), with context parallelism (the snapshot has no TE: \`--set te.version\` names the release):" \
  explain --facts "$H100" --set te.version=2.18.0 --megatron-args tests/fixtures/megatron/deepseek_v3_cp.sh --no-color

example "A check with a workload that has no backend left, on the H100 snapshot with TE 2.18 assumed:" \
  check --facts "$H100" --set te.version=2.18.0 --set env.NVTE_FUSED_ATTN=0 --set env.NVTE_UNFUSED_ATTN=0 \
  --hf-config tests/fixtures/hf/llama-3-8b/config.json --no-color

example "A kernel TE selects that then computes wrong results: packed (thd) training on an RTX 50 (sm120)
with TE 2.17, where FusedAttention's backward gives wrong gradients (TE #3333). The finding names
its impact; the workaround and the fixed release are both verified by the model:" \
  explain --facts "$H100" --set gpu.sm=120 --set te.version=2.17.0 --set cudnn.version=9.25.0 \
  --workload-set qkv_format=thd --workload-set attn_mask_type=padding_causal --no-color

example "A node newer than the rules: a compute capability the selection was never checked on. The
verdict comes first, then one line saying it is extrapolated:" \
  explain --facts "$H100" --set gpu.compute_capability=11.0 --set te.version=2.18.0 \
  --workload-set qkv_format=bshd --no-color

example "What node_exporter's textfile collector reads (\`outputs.prometheus\` in config.yaml):" \
  check --facts "$H100" --hf-config tests/fixtures/hf/llama-3-8b/config.json --format prometheus

{
  sed '/^<!-- regen-examples: begin -->$/q' "$DOC"
  echo "<!-- Written by scripts/regen-examples.sh from $("$BIN" --version 2>&1 | head -1); do not edit by hand. -->"
  echo
  cat "$section"
  sed -n '/^<!-- regen-examples: end -->$/,$p' "$DOC"
} >"$DOC.tmp"
mv "$DOC.tmp" "$DOC"
echo "regen-examples: $DOC rewritten ($(grep -c '^\$ nvte-doctor' "$section") examples)"
