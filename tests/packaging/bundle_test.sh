#!/bin/bash
# The relocatable bundle (scripts/build-bundle.sh) and the preflight's first step
# (nvte-doctor-preflight) as a job's container runs them: the bundle is built from the tested
# binary, moved to another directory, and run with an empty environment (no LD_LIBRARY_PATH, no
# NVTE_DOCTOR_RULES): it must find its libraries through its RPATH and its rules beside itself.
# Then the preflight wrapper against the fixture image (tests/fixtures/image-te) and node
# snapshots: the job's command runs when the verdict allows it, does not when it is CRITICAL
# (the verdict in the termination log), and an UNKNOWN runs it unless told otherwise.
# Usage: bundle_test.sh NVTE_DOCTOR SOURCE_DIR
set -uo pipefail
binary=$1
source_dir=$2
command -v patchelf >/dev/null || { echo "patchelf not installed (scripts/bootstrap.sh installs it): skipped"; exit 77; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fixtures="$source_dir/tests/fixtures"
workloads="$source_dir/packaging/workloads"

failures=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1 ($2)"; failures=$((failures + 1)); fi; }

"$source_dir/scripts/build-bundle.sh" --binary "$binary" --out "$work/built/nvte-doctor" 2>"$work/build.log"
check "build-bundle.sh succeeds" '[[ -x "$work/built/nvte-doctor/bin/nvte-doctor" ]] || { cat "$work/build.log"; false; }'
mv "$work/built/nvte-doctor" "$work/moved"
b="$work/moved"
# readelf's and ldd's outputs are read whole: with pipefail, `ldd | grep -q` fails when grep
# exits at the first match and ldd, still writing, dies of SIGPIPE (seen under load).
dynamic=$(readelf -d "$b/bin/nvte-doctor" 2>&1)
check "RPATH is \$ORIGIN/../lib" 'grep -q "(RPATH).*\[\$ORIGIN/../lib\]" <<<"$dynamic"'
ldd_out=$(env -i ldd "$b/bin/nvte-doctor" 2>&1)
check "no library is missing" '! grep -q "not found" <<<"$ldd_out"'
# yaml-cpp and libstdc++ are linked in where their archives exist (cmake/Dependencies.cmake);
# libpci has none in Debian and is always carried.
check "libpci comes from the bundle" 'grep -q "libpci.* => $b/bin/../lib/" <<<"$ldd_out"'
for so in libyaml-cpp libstdc++; do
  check "$so comes from the bundle or is linked in" \
    '! grep -q "$so" <<<"$dynamic" || grep -q "$so.* => $b/bin/../lib/" <<<"$ldd_out"'
done
check "carries selftest.py and the completions" \
  '[[ -f $b/share/nvte-doctor/selftest.py && -f $b/share/bash-completion/completions/nvte-doctor && -f $b/share/zsh/vendor-completions/_nvte-doctor ]]'
check "glibc never travels" '! ls "$b/lib" | grep -Eq "^(libc|libm|ld-linux)"'
check "MANIFEST names the oldest glibc" 'grep -Eq "^glibc: >= 2\.[0-9]+$" "$b/MANIFEST"'
check "runs with an empty environment" 'env -i "$b/bin/nvte-doctor" --version | grep -q "^nvte-doctor "'
env -i "$b/bin/nvte-doctor" rules list --format json > "$work/rules.json" 2>&1
check "finds its rules beside itself" 'grep -q "\"source\": \"$b/share/nvte-doctor/rules\"" "$work/rules.json" && grep -q "\"id\"" "$work/rules.json"'

# The self-test's Python tier runs the bundle's own script (audit 2026-12-01 item 7: never the
# selftest.py of the checkout the bundle was built from, a path anyone may create on a node).
check "ships the Python tier's script" '[[ -f "$b/share/nvte-doctor/selftest.py" ]]'
printf '#!/bin/sh\necho "$1" > "%s/script"\necho "{\\"status\\": \\"ok\\"}"\n' "$work" > "$work/py"
chmod +x "$work/py"
env -i "$b/bin/nvte-doctor" selftest --facts "$fixtures/snapshots/h100-node.json" --python "$work/py" --timeout 10 >/dev/null 2>&1
check "the self-test runs the bundle's selftest.py" '[[ $(cat "$work/script" 2>/dev/null) == "$b/share/nvte-doctor/selftest.py" ]]'

preflight() { # NODE_SNAPSHOT WORKLOAD [ENV...]: runs the wrapper; the job's command records that it ran
  local node=$1 workload=$2; shift 2
  rm -f "$work/ran" "$work/term"
  env -i "$@" NVTE_TERMINATION_LOG="$work/term" "$b/bin/nvte-doctor-preflight" \
    --root "$fixtures/image-te/rootfs" --node-facts "$node" --image registry.example.com/pt:25.03 \
    --workload "$workload" -- /bin/sh -c 'echo ran > "$0"' "$work/ran" 2>"$work/stderr"
  echo $? > "$work/rc"
}
rc() { cat "$work/rc"; }

preflight "$fixtures/snapshots/h100-node.json" "$workloads/deepseek-v3-mla.yaml"
check "H100: the job's command runs" '[[ $(rc) == 0 || $(rc) == 1 ]] && [[ -f "$work/ran" ]]'
check "H100: the termination log names image and node" \
  'head -n 1 "$work/term" | grep -Eq "^nvte-doctor (OK|WARNING): image registry.example.com/pt:25.03 on node "'
check "H100: the report went to stderr" 'grep -q "preflight of image registry.example.com/pt:25.03" "$work/stderr"'

preflight "$fixtures/snapshots/a100-node.json" "$workloads/deepseek-v3-mla.yaml"
check "A100 + DeepSeek MLA: CRITICAL stops the job" '[[ $(rc) == 2 && ! -e "$work/ran" ]]'
check "A100 + DeepSeek MLA: the verdict names the workload" \
  'head -n 1 "$work/term" | grep -q "^nvte-doctor CRITICAL: image registry.example.com/pt:25.03 on node a100-node" && grep -q "^error: .*(workload deepseek-v3-mla)" "$work/term"'
check "the termination message fits the kubelet's 4096 bytes" '(( $(wc -c < "$work/term") <= 4096 ))'

preflight "$work/no-such-node.json" "$workloads/deepseek-v3-mla.yaml"
check "UNKNOWN: the job runs by default" '[[ $(rc) == 0 && -f "$work/ran" ]] && grep -q "^nvte-doctor UNKNOWN" "$work/term"'
preflight "$work/no-such-node.json" "$workloads/deepseek-v3-mla.yaml" NVTE_PREFLIGHT_UNKNOWN=fail
check "UNKNOWN with NVTE_PREFLIGHT_UNKNOWN=fail stops it" '[[ $(rc) == 3 && ! -e "$work/ran" ]]'

((failures == 0)) && echo "all bundle cases passed"
((failures == 0))
