#!/bin/bash
# report-summary.awk, the JSON reader the NHC, Slurm and NPD integrations share: exact output on
# fixture reports (nested decoys named "title"/"findings", escapes, unicode, truncation, a
# non-report), with every awk on the machine (mawk, gawk, busybox), and agreement with the real
# binary: the node status and failing workloads it reads from `check --format json` explain the
# exit code, and the first error title or failing workload's cause it reads is printed in text.
# Usage: report_summary_test.sh BINARY SOURCE_DIR
set -uo pipefail
binary=$1 source_dir=$2
script="$source_dir/packaging/integrations/report-summary.awk"
reports="$source_dir/tests/packaging/reports"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

awks=()
declare -A seen=()
for a in mawk gawk original-awk "busybox awk" awk; do
  path=$(command -v "${a%% *}") || continue
  [[ "$a" != busybox* ]] || busybox awk 'BEGIN{}' 2>/dev/null || continue
  real=$(readlink -f "$path")
  [[ "$a" == busybox* ]] && real="$real awk"
  [[ -z "${seen[$real]+x}" ]] || continue
  seen[$real]=1
  awks+=("$a")
done

T=$'\t'
expected_critical="status${T}CRITICAL
generated${T}2026-11-22T05:00:00Z
error${T}attention-cp-all-gather-bottom-right-cudnn${T}all_gather context parallelism needs cuDNN 9.3 for its bottom-right causal mask
error${T}attention-no-backend${T}No dot product attention backend is available \"quoted\"
warning${T}cudnn-too-old-warning${T}cuDNN 9.1 is older than TE recommends
node_error${T}attention-cp-all-gather-bottom-right-cudnn${T}all_gather context parallelism needs cuDNN 9.3 for its bottom-right causal mask
node_error${T}attention-no-backend${T}No dot product attention backend is available \"quoted\"
node_warning${T}cudnn-too-old-warning${T}cuDNN 9.1 is older than TE recommends
workload${T}deepseek-v3${T}none${T}no_backend
workload_fails${T}deepseek-v3${T}no attention backend"

for a in "${awks[@]}"; do
  got=$($a -f "$script" "$reports/critical.json"); rc=$?
  [[ $rc == 0 && "$got" == "$expected_critical" ]] || fail "$a critical.json: rc=$rc, got:
$got"
  got=$($a -f "$script" "$reports/ok.json")
  [[ "$got" == "status${T}OK"$'\n'"generated${T}2026-11-22T05:00:00Z" ]] || fail "$a ok.json: $got"
  got=$($a -f "$script" "$reports/truncated.json"); rc=$?
  [[ $rc == 3 && "$got" == "invalid: unterminated string" ]] || fail "$a truncated.json: rc=$rc $got"
  got=$($a -f "$script" "$reports/not-a-report.json"); rc=$?
  [[ $rc == 3 && "$got" == "invalid: no summary.status"* ]] || fail "$a not-a-report.json: rc=$rc $got"
  got=$(printf '{"summary": {"status": "OK"}} trailing' | $a -f "$script"); rc=$?
  [[ $rc == 3 && "$got" == "invalid: trailing data"* ]] || fail "$a trailing data: rc=$rc $got"
  got=$(printf '' | $a -f "$script"); rc=$?
  [[ $rc == 3 && "$got" == "invalid: empty input" ]] || fail "$a empty: rc=$rc $got"
  got=$(printf '{"summary": {"status": "OK"},}' | $a -f "$script"); rc=$?
  [[ $rc == 3 ]] || fail "$a trailing comma accepted: $got"
  echo "ok   fixtures with $a"
done

# Agreement with the real binary on a snapshot and on what-if variants of it.
snapshot="$source_dir/tests/fixtures/snapshots/h100-node.json"
variants=(
  ""
  "--set gpu.compute_capability=8.0 --set te.version=2.3.0 --set env.NVTE_FLASH_ATTN=0 --set env.NVTE_UNFUSED_ATTN=0 --hf-config $source_dir/tests/fixtures/hf/deepseek-v3/config.json"
  "--set cudnn.version=9.1.0 --set te.version=2.3.0 --workload-set cp_comm_type=all_gather --workload-set context_parallel=true --workload-set cp_size=2 --workload-set qkv_dtype=bf16 --workload-set attn_mask_type=causal"
)
for v in "${variants[@]}"; do
  # shellcheck disable=SC2086
  "$binary" check --format json --facts "$snapshot" --rules "$source_dir/rules" $v > "$work/report.json"; rc=$?
  # shellcheck disable=SC2086
  "$binary" check --no-color --facts "$snapshot" --rules "$source_dir/rules" $v > "$work/report.txt"
  summary=$(awk -f "$script" "$work/report.json") || { fail "real report unreadable ($v): $summary"; continue; }
  status=$(sed -n 's/^status\t//p' <<< "$summary")
  # summary.status is the node's own (its findings); check's exit is the worse of that and the
  # workloads' verdicts, so exit 2 on a WARNING node needs a workload that fails.
  node_rc=$(case "$status" in OK) echo 0;; WARNING) echo 1;; CRITICAL) echo 2;; *) echo 3;; esac)
  fails=$(awk -F'\t' '$1 == "workload_fails" {print $2; exit}' <<< "$summary")
  if [[ -n "$fails" ]]; then want_rc=2; else want_rc=$node_rc; fi
  ((want_rc >= node_rc)) || want_rc=$node_rc
  [[ "$rc" == "$want_rc" ]] || fail "exit $rc but node status '$status' and failing workload '${fails}' ($v)"
  title=$(awk -F'\t' '$1 == "error" || $1 == "workload_fails" {print $3; exit}' <<< "$summary")
  if [[ $rc == 2 ]]; then
    [[ -n "$title" ]] || fail "exit 2 without an error or a failing workload ($v)"
    grep -qF -- "$title" "$work/report.txt" || fail "'$title' not in the text report ($v)"
  fi
  echo "ok   real report, exit $rc, status $status${title:+, first error: $title}"
done

((failures == 0)) && echo "all report-summary cases passed"
((failures == 0))
