#!/bin/bash
# nvte-doctor Slurm prolog: refuse to start a job on a node whose last nvte-doctor report has an
# error finding of the node itself (a workload's error is a node feature, never a refusal: see
# nvte-doctor-healthcheck). slurmd runs Prolog as root on every allocated node before the job; a non-zero
# exit makes Slurm drain the node and requeue the job on another node, so a job never starts on
# a node known to be broken for TransformerEngine. It only reads the timer's cached report (no
# probing: the prolog must be fast), and it lets the job run when there is no usable report
# (missing or stale: the HealthCheckProgram, nvte-doctor-healthcheck, deals with those).
#
# slurm.conf:  Prolog=/usr/libexec/nvte-doctor/prolog.sh
# To combine with a site prolog, call it from there:  /usr/libexec/nvte-doctor/prolog.sh || exit 1
# Environment: NVTE_DOCTOR_REPORT (default /var/lib/nvte-doctor/report.json),
#              NVTE_DOCTOR_MAX_AGE (seconds, default 93600), NVTE_DOCTOR_LIBEXEC.
set -uo pipefail

report="${NVTE_DOCTOR_REPORT:-/var/lib/nvte-doctor/report.json}"
max_age="${NVTE_DOCTOR_MAX_AGE:-93600}"
libexec="${NVTE_DOCTOR_LIBEXEC:-/usr/libexec/nvte-doctor}"

# A regular file only: a FIFO or device there would block the read, and every job start with it.
[[ -f "$report" && -r "$report" ]] || exit 0
(( $(date +%s) - $(stat -c %Y -- "$report") <= max_age )) || exit 0
if [[ ! -f "$libexec/report-summary.awk" ]]; then
  echo "nvte-doctor prolog: $libexec/report-summary.awk is missing (set NVTE_DOCTOR_LIBEXEC); job not checked" >&2
  exit 0
fi
summary=$(timeout 10 awk -f "$libexec/report-summary.awk" "$report") || exit 0

status="" first_error=""
while IFS=$'\t' read -r kind id title; do
  case "$kind" in
    status) status="$id" ;;
    node_error) [[ -n "$first_error" ]] || first_error="$title ($id)" ;;
  esac
done <<< "$summary"

if [[ "$status" == CRITICAL && -n "$first_error" ]]; then
  # slurmd logs this line; the node's drain reason becomes "Prolog error".
  echo "nvte-doctor prolog: job ${SLURM_JOB_ID:-?} refused on $(hostname -s): ${first_error:-error finding}" >&2
  exit 1
fi
exit 0
