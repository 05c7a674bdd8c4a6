#!/usr/bin/env bash
# selftest_no_toolkit_test.sh NVTE_DOCTOR: on a machine with neither a GPU nor NVRTC and cuDNN (a
# login node, a fresh CI root without the CUDA toolkit), the self-test's NVRTC and cuDNN checks
# are skipped, as its driver check is, instead of failing: nothing there compiles or runs a
# kernel, and the job's node runs the same checks with its GPU, where a missing library fails.
# Where this machine has NVRTC or cuDNN, the test hides their directories in a private mount
# namespace (unshare -m, a tmpfs over each); it is skipped (77) on a GPU machine or where that is
# not allowed.
set -euo pipefail
bin=$(realpath "$1")
if ldconfig -p | grep -q 'libcuda\.so\.1 '; then echo "SKIP: this machine has a CUDA driver"; exit 77; fi
dirs=$(ldconfig -p | awk '/lib(nvrtc|cudnn)\.so\.[0-9]+ /{print $NF}' | xargs -r -n1 dirname | sort -u)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run=(env -u LD_LIBRARY_PATH -u CUDNN_PATH "$bin" selftest --format json --timeout 120 --python '')
if [[ -n $dirs ]]; then
  if ! unshare -m true 2>/dev/null; then echo "SKIP: unshare -m is not allowed here"; exit 77; fi
  mounts=$(for d in $dirs; do printf 'mount -t tmpfs none %q; ' "$d"; done)
  unshare -m bash -c "set -e; $mounts exec $(printf '%q ' "${run[@]}")" \
    >"$out/report.json" 2>"$out/stderr" && rc=0 || rc=$?
else
  "${run[@]}" >"$out/report.json" 2>"$out/stderr" && rc=0 || rc=$?
fi
python3 - "$out/report.json" "$rc" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
checks = {c["check"]: c for c in report["selftest"]["checks"]}
bad = []
for name in ("nvrtc", "cudnn_sdpa"):
    c = checks.get(name)
    if c is None:
        bad.append(f"{name}: missing from the report")
    elif c.get("status") != "skipped":
        bad.append(f"{name}: {c.get('status')} ({c.get('error') or c.get('reason')})")
    elif "not found" not in json.dumps(c):
        bad.append(f"{name}: skipped without naming the missing library: {c}")
if any(f.get("id", "").startswith("selftest-") and f.get("severity") in ("error", "critical") for f in report["selftest"]["findings"]):
    bad.append("a self-test finding of severity error: " + ", ".join(f["id"] for f in report["selftest"]["findings"]))
if int(sys.argv[2]) not in (0, 3):
    bad.append(f"exit {sys.argv[2]} (0, or 3 when no GPU is known, expected)")
if bad:
    print("FAIL:", *bad, sep="\n  ")
    sys.exit(1)
print("PASS: nvrtc and cudnn_sdpa skipped without a GPU, NVRTC or cuDNN; exit", sys.argv[2])
PY
