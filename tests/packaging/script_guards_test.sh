#!/bin/bash
# The guards of the integration scripts (reliability audit 2026-12-01, items 14, 19 and 26, and
# issue 37's missing-helper case), each as its reproducer:
#  - a report that is a FIFO (a bad restore; a DaemonSet writing the host's directory) must not
#    block the Slurm prolog, the health check, the NPD plugin or the NHC check: each tests for a
#    regular file first and runs awk under `timeout`;
#  - a health check whose helper report-summary.awk is not where it looks names the missing
#    helper and changes nothing (no drain for a broken installation); prolog, NPD plugin and NHC
#    check say the same and do not fail the node for it;
#  - nvte-doctor-preflight passes options through unchanged (a trailing newline included), and
#    does not start the job when the verdict is CRITICAL: neither when the doctor could not write
#    the termination log (the real binary) nor when a doctor exits 3 after a CRITICAL report.
# Usage: script_guards_test.sh BINARY SOURCE_DIR
set -uo pipefail
binary=$1 source_dir=$2
integrations="$source_dir/packaging/integrations"
reports="$source_dir/tests/packaging/reports"
snapshot="$source_dir/tests/fixtures/snapshots/h100-node.json"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
failures=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1 ($2)"; failures=$((failures + 1)); fi; }

# A stub scontrol that records every call: a drain or feature change shows up in the log.
cat > "$work/scontrol" <<EOS
#!/bin/sh
echo "\$*" >> "$work/scontrol.log"
[ "\$1" = show ] && echo "NodeName=\$3 State=IDLE" && echo "   AvailableFeatures=a100" && echo "   ActiveFeatures=a100"
exit 0
EOS
chmod +x "$work/scontrol"
export SCONTROL="$work/scontrol"

# --- item 14: a FIFO where the report should be -------------------------------------------------
mkfifo "$work/report.json"
export NVTE_DOCTOR_LIBEXEC="$integrations"
start=$SECONDS
NVTE_DOCTOR_REPORT="$work/report.json" timeout 20 bash "$integrations/slurm/prolog.sh" 2>"$work/err"; rc=$?
check "prolog on a FIFO report: exit 0 at once (no usable report), no hang" "[[ $rc == 0 ]] && (( SECONDS - start < 10 ))"
: > "$work/scontrol.log"
timeout 20 bash "$integrations/slurm/nvte-doctor-healthcheck" --node n1 --report "$work/report.json" --features=off 2>"$work/err"; rc=$?
check "health check on a FIFO report: UNKNOWN, no hang" "[[ $rc == 3 ]]"
check "health check names the FIFO as not a regular file" "grep -q 'report $work/report.json is not a regular file' '$work/err'"
out=$(timeout 20 bash "$integrations/kubernetes/npd-check" --report "$work/report.json"); rc=$?
check "npd-check on a FIFO report: Unknown (2), no hang" "[[ $rc == 2 ]]"
check "npd-check says why" '[[ $out == "nvte-doctor: UNKNOWN: report $work/report.json is not a regular file" ]]'
nhc_run() { # NHC's die/log stubbed, as tests/packaging/nhc_test.sh does; prints rc, DIED, LOGGED
  timeout 20 bash -c 'DIED="" LOGGED=""
    die() { local code=$1; shift; DIED="$*"; return "$code"; }
    log() { LOGGED+="$*"; }
    dbg() { :; }
    source "$1/nhc/nvte_doctor.nhc"; shift
    check_nvte_doctor "$@"; echo "rc=$? died=$DIED log=$LOGGED"' nhc "$integrations" "$@"
}
out=$(nhc_run -c -r "$work/report.json")
check "NHC check on a FIFO report: UNKNOWN, no hang" '[[ $out == "rc=1 died=nvte-doctor: UNKNOWN: report $work/report.json is not a regular file log=" ]]'

# --- issue 37: the helper report-summary.awk is not where the scripts look ------------------------
cp "$reports/ok.json" "$work/ok.json"
export NVTE_DOCTOR_LIBEXEC="$work/no-such-libexec"
: > "$work/scontrol.log"
bash "$integrations/slurm/nvte-doctor-healthcheck" --node n1 --report "$work/ok.json" 2>"$work/err"; rc=$?
check "health check without its helper: exit 3" "[[ $rc == 3 ]]"
check "... names the missing helper" "grep -q 'no-such-libexec/report-summary.awk is missing' '$work/err'"
check "... does not call the report unreadable" "! grep -q 'unreadable report' '$work/err'"
check "... drains nothing and changes no feature" "! grep -q update '$work/scontrol.log'"
NVTE_DOCTOR_REPORT="$work/ok.json" bash "$integrations/slurm/prolog.sh" 2>"$work/err"; rc=$?
check "prolog without its helper lets the job run and says why" "[[ $rc == 0 ]] && grep -q 'report-summary.awk is missing' '$work/err'"
out=$(bash "$integrations/kubernetes/npd-check" --report "$work/ok.json"); rc=$?
check "npd-check without its helper: Unknown naming the helper" '[[ $rc == 2 && $out == *"report-summary.awk is missing"* ]]'
out=$(nhc_run -c -r "$work/ok.json")
check "NHC check without its helper: passes, logged" '[[ $out == "rc=0 died= log=check_nvte_doctor: $work/no-such-libexec/report-summary.awk is missing"* ]]'
export NVTE_DOCTOR_LIBEXEC="$integrations"

# --- item 26: options pass through the preflight wrapper unchanged -----------------------------
mkdir -p "$work/stub/bin"
cp "$integrations/preflight/nvte-doctor-preflight" "$work/stub/bin/"
cat > "$work/stub/bin/nvte-doctor" <<EOS
#!/bin/sh
# Records its arguments one per file, then plays the verdict of \$STUB_EXIT.
i=0; for a in "\$@"; do i=\$((i + 1)); printf '%s' "\$a" > "$work/arg.\$i"; done
echo "0 errors, 1 warning, 0 notes: \${STUB_STATUS:-WARNING}"
exit \${STUB_EXIT:-1}
EOS
chmod +x "$work/stub/bin/nvte-doctor"
NVTE_TERMINATION_LOG="$work/tlog" "$work/stub/bin/nvte-doctor-preflight" --image $'name\n\n' --workload "it's" -- true 2>/dev/null
check "a trailing newline of an option reaches the doctor" "[[ \"\$(cat '$work/arg.3'; echo x)\" == \$'name\n\nx' ]]"
check "a quote too" "[[ \"\$(cat '$work/arg.5')\" == \"it's\" ]]"

# --- item 19: a CRITICAL verdict never starts the job -------------------------------------------
rm -f "$work/started"
STUB_EXIT=3 STUB_STATUS=CRITICAL NVTE_TERMINATION_LOG="$work/tlog" "$work/stub/bin/nvte-doctor-preflight" -- touch "$work/started" 2>/dev/null; rc=$?
check "exit 3 after a CRITICAL report: the job does not start" "[[ $rc == 2 && ! -e '$work/started' ]]"
STUB_EXIT=3 STUB_STATUS=UNKNOWN NVTE_TERMINATION_LOG="$work/tlog" "$work/stub/bin/nvte-doctor-preflight" -- touch "$work/started" 2>/dev/null; rc=$?
check "a real UNKNOWN still runs the job by default" "[[ $rc == 0 && -e '$work/started' ]]"
mkfifo "$work/fifo-log"; rm -f "$work/started"
STUB_EXIT=3 STUB_STATUS=UNKNOWN NVTE_TERMINATION_LOG="$work/fifo-log" timeout 20 "$work/stub/bin/nvte-doctor-preflight" -- touch "$work/started" 2>/dev/null; rc=$?
check "the wrapper's own UNKNOWN message does not block on a FIFO termination log" "[[ $rc == 0 && -e '$work/started' ]]"
# The audit's reproducer, with the real binary: the termination log cannot be written.
mkdir -p "$work/b/bin"; cp "$binary" "$integrations/preflight/nvte-doctor-preflight" "$work/b/bin/"
rm -f "$work/started"
NVTE_TERMINATION_LOG="$work/no/such/dir" "$work/b/bin/nvte-doctor-preflight" --facts "$snapshot" --rules "$source_dir/rules" \
  --hf-config "$source_dir/tests/fixtures/hf/llama-3-8b/config.json" --set env.NVTE_FUSED_ATTN=0 --set env.NVTE_UNFUSED_ATTN=0 \
  --set env.NVTE_FLASH_ATTN=0 -- touch "$work/started" 2>"$work/err"; rc=$?
check "CRITICAL with an unwritable termination log: exit 2, the job does not start" "[[ $rc == 2 && ! -e '$work/started' ]]"
check "... the log's failure is a warning" "grep -q 'warning: --termination-log: ' '$work/err'"

(( failures == 0 )) || { echo "$failures failure(s)"; exit 1; }
echo "all passed"
