#!/bin/bash
# NHC check (packaging/integrations/nhc/nvte_doctor.nhc) in a fake NHC harness: the check file is
# sourced into bash with NHC's die/log/dbg stubbed to record what NHC would do, then run on
# fixture reports (fresh, stale, missing, malformed), on fake doctors (exit codes, a hang) and
# on the real binary replaying a facts snapshot.
# Usage: nhc_test.sh BINARY SOURCE_DIR
set -uo pipefail
binary=$1 source_dir=$2
integrations="$source_dir/packaging/integrations"
reports="$source_dir/tests/packaging/reports"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export NVTE_DOCTOR_LIBEXEC="$integrations"

# The harness: NHC's die() records the reason and returns the code; log/dbg collect lines.
DIED="" LOGGED=""
die() { local code=$1; shift; DIED="$*"; return "$code"; }
log() { LOGGED+="$*"$'\n'; }
dbg() { :; }
source "$integrations/nhc/nvte_doctor.nhc"

failures=0
# expect NAME RC DIED_PATTERN LOG_PATTERN -- ARGS...: run the check, compare.
expect() {
  local name=$1 want_rc=$2 want_died=$3 want_log=$4; shift 5
  DIED="" LOGGED=""
  check_nvte_doctor "$@"
  local rc=$?
  local ok=1
  [[ $rc == "$want_rc" ]] || ok=0
  if [[ -z "$want_died" ]]; then [[ -z "$DIED" ]] || ok=0; else [[ "$DIED" == $want_died ]] || ok=0; fi
  [[ -z "$want_log" || "$LOGGED" == *$want_log* ]] || ok=0
  if ((ok)); then echo "ok   $name"; else
    echo "FAIL $name: rc=$rc (want $want_rc) died='$DIED' (want '$want_died') log='$LOGGED' (want *$want_log*)"
    failures=$((failures + 1))
  fi
}

cp "$reports"/*.json "$work/"
expect "critical: drain with the first error's title" 1 \
  "nvte-doctor: all_gather context parallelism needs cuDNN 9.3 for its bottom-right causal mask" \
  "also: No dot product attention backend is available \"quoted\" (attention-no-backend)" -- -c -r "$work/critical.json"
expect "warning passes, logged" 0 "" "warning: TE falls back to UnfusedDotProductAttention" -- -c -r "$work/warning.json"
expect "warning fails with -W" 1 "nvte-doctor: TE falls back to UnfusedDotProductAttention" "" -- -c -W -r "$work/warning.json"
expect "ok passes" 0 "" "" -- -c -r "$work/ok.json"
expect "UNKNOWN fails" 1 "nvte-doctor: UNKNOWN: the doctor could not complete*" "" -- -c -r "$work/unknown.json"
expect "UNKNOWN passes with -u" 0 "" "UNKNOWN: the doctor could not complete" -- -c -u -r "$work/unknown.json"
expect "truncated report" 1 "nvte-doctor: UNKNOWN: unreadable report from */truncated.json: unterminated string" "" -- -c -r "$work/truncated.json"
expect "not a report" 1 "nvte-doctor: UNKNOWN: unreadable report*not an nvte-doctor report*" "" -- -c -r "$work/not-a-report.json"
cp "$work/ok.json" "$work/stale.json"; touch -d '3 days ago' "$work/stale.json"
expect "stale report, cache only" 1 "nvte-doctor: UNKNOWN: report */stale.json is *s old (maximum 93600 s)" "" -- -c -r "$work/stale.json"
expect "stale report within -a" 0 "" "" -- -c -a 400000 -r "$work/stale.json"
expect "missing report, cache only" 1 "nvte-doctor: UNKNOWN: no report at $work/none.json" "" -- -c -r "$work/none.json"
expect "bad option" 1 "check_nvte_doctor: invalid option -x*" "" -- -x

# Without a fresh report the check runs the doctor: fake doctors first.
cat > "$work/doctor-critical" <<EOS
#!/bin/sh
[ "\$1 \$2 \$3" = "check --format json" ] || { echo "unexpected arguments: \$*" >&2; exit 3; }
cat "$work/critical.json"; exit 2
EOS
printf '#!/bin/sh\nsleep 30\n' > "$work/doctor-hang"
printf '#!/bin/sh\necho "nvte-doctor: cannot read rules" >&2; exit 3\n' > "$work/doctor-broken"
chmod +x "$work"/doctor-*
expect "runs the doctor when the report is missing" 1 \
  "nvte-doctor: all_gather context parallelism needs cuDNN 9.3 for its bottom-right causal mask" "" \
  -- -r "$work/none.json" -b "$work/doctor-critical"
expect "runs the doctor when the report is stale" 1 "nvte-doctor: all_gather*" "" -- -r "$work/stale.json" -b "$work/doctor-critical"
start=$SECONDS
expect "doctor hangs: timeout" 1 "nvte-doctor: UNKNOWN: */doctor-hang check timed out after 1s" "" -- -r "$work/none.json" -t 1 -b "$work/doctor-hang"
((SECONDS - start < 10)) || { echo "FAIL the timeout did not stop the hung doctor"; failures=$((failures + 1)); }
expect "doctor fails without a report" 1 "nvte-doctor: UNKNOWN: */doctor-broken check exited 3 without a report" "" -- -r "$work/none.json" -b "$work/doctor-broken"

# The real binary: a facts snapshot replayed through a wrapper (NHC passes no --facts).
cat > "$work/doctor-real" <<EOS
#!/bin/sh
exec "$binary" "\$@" --facts "$source_dir/tests/fixtures/snapshots/h100-node.json" --rules "$source_dir/rules"
EOS
chmod +x "$work/doctor-real"
"$work/doctor-real" check --format json > "$work/real.json"
real_rc=$?
case $real_rc in
  0) expect "real doctor, OK node" 0 "" "" -- -r "$work/none.json" -b "$work/doctor-real" ;;
  1) expect "real doctor, WARNING node" 0 "" "warning: " -- -r "$work/none.json" -b "$work/doctor-real" ;;
  2) expect "real doctor, CRITICAL node" 1 "nvte-doctor: ?*" "" -- -r "$work/none.json" -b "$work/doctor-real" ;;
  *) echo "FAIL the real doctor exited $real_rc on the h100 snapshot"; failures=$((failures + 1)) ;;
esac
# What-if: an sm80 GPU with the DeepSeek-V3 head dims and FlashAttention/Unfused disabled has no backend.
cat > "$work/doctor-incident" <<EOS
#!/bin/sh
exec "$binary" "\$@" --facts "$source_dir/tests/fixtures/snapshots/h100-node.json" --rules "$source_dir/rules" \
  --set gpu.compute_capability=8.0 --set te.version=2.3.0 --set env.NVTE_FLASH_ATTN=0 --set env.NVTE_UNFUSED_ATTN=0 \
  --hf-config "$source_dir/tests/fixtures/hf/deepseek-v3/config.json"
EOS
chmod +x "$work/doctor-incident"
# A workload without a backend is the workload's verdict, not the node's: logged, no drain...
expect "real doctor, incident 1 (no backend) logs the workload" 0 "" "*workload deepseek-v3: No dot product attention backend*" \
  -- -r "$work/none.json" -b "$work/doctor-incident"
# ...unless the operator opts in with -w.
expect "real doctor, incident 1 with -w drains" 1 "nvte-doctor: ?*deepseek-v3*" "" -- -w -r "$work/none.json" -b "$work/doctor-incident"

((failures == 0)) && echo "all NHC cases passed"
((failures == 0))
