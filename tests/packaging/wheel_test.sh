#!/bin/bash
# The Python wheel (scripts/build-wheel.py) of the portable bundle that portable_test.sh left in
# BUILD_DIR/portable: packed by Debian's python3-wheel (`python3 -m wheel pack`, offline) when it
# is installed, built twice (the same bytes), its RECORD checked (`python3 -m wheel unpack`) and
# the same as the zipfile writer's (build-wheel.py --builtin, for machines without python3-wheel),
# then installed offline (pip --no-index) into a fresh `python3 -m venv` by an
# unprivileged user (nobody, when the test runs as root), and run from there: the console script
# and `python -m nvte_doctor`, `explain` on a committed snapshot, and `probe`, which must examine
# the venv's own interpreter (the launcher's NVTE_DOCTOR_PYTHON) unless --python says otherwise.
# Skipped (77) without the bundle or without python3's venv module.
# Usage: wheel_test.sh BUILD_DIR SOURCE_DIR VERSION
set -uo pipefail
build=$1
source_dir=$2
version=$3
bundle=$build/portable/nvte-doctor
[[ -x $bundle/bin/nvte-doctor ]] || { echo "no portable bundle in $bundle (the test portable_bundle makes it): skipped"; exit 77; }
python=python3
[[ -x /usr/bin/python3 ]] && python=/usr/bin/python3 # Debian's, with ensurepip (python3-venv)
"$python" -c 'import venv, ensurepip' 2>/dev/null || { echo "python3's venv or ensurepip missing (apt-get install python3-venv): skipped"; exit 77; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
chmod 755 "$work"

failures=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1 ($2)"; failures=$((failures + 1)); fi; }

wheel=$("$python" "$source_dir/scripts/build-wheel.py" --bundle "$bundle" --out "$work/a" 2>"$work/build.log")
check "build-wheel.py succeeds" '[[ -f $wheel ]] || { cat "$work/build.log"; false; }'
((failures)) && exit 1
name=$(basename "$wheel")
check "named nvte_doctor-$version-py3-none-manylinux_2_31_x86_64.whl ($name)" '[[ $name == "nvte_doctor-$version-py3-none-manylinux_2_31_x86_64.whl" ]]'
again=$("$python" "$source_dir/scripts/build-wheel.py" --bundle "$bundle" --out "$work/b" 2>/dev/null)
check "the same bundle gives the same wheel" 'cmp -s "$wheel" "$again"'
if "$python" -c 'import wheel' 2>/dev/null; then
  check "packed by Debian's python3-wheel" 'grep -q "(python3 -m wheel pack)" "$work/build.log"'
  check "RECORD's hashes hold (python3 -m wheel unpack)" '"$python" -m wheel unpack --dest "$work/unpacked" "$wheel" >/dev/null'
  builtin=$("$python" "$source_dir/scripts/build-wheel.py" --bundle "$bundle" --out "$work/c" --builtin 2>/dev/null)
  record() { "$python" -c "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); print(''.join(sorted(z.read(n).decode() for n in z.namelist() if n.endswith('/RECORD'))))" "$1" | sort; }
  check "the zipfile writer (--builtin) gives the same files" '[[ -n $builtin && "$(record "$wheel")" == "$(record "$builtin")" ]]'
else
  echo "skip python3-wheel's checks: not installed (apt-get install python3-wheel)"
fi
check "the binary is executable in the wheel" \
  '"$python" -c "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); sys.exit(0 if z.getinfo(\"nvte_doctor/bundle/bin/nvte-doctor\").external_attr >> 16 & 0o111 else 1)" "$wheel"'

# Everything below runs as an unprivileged user when the test runs as root.
as_user=()
if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null; then
  as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
  chown nobody:nogroup "$work"
fi
run() { env -i HOME="$work" PATH=/usr/bin:/bin PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "${as_user[@]}" "$@"; }
cp "$wheel" "$work/" && chmod 644 "$work/$name"
run "$python" -m venv "$work/venv" > "$work/venv.log" 2>&1
check "python3 -m venv (user $(run id -un))" '[[ -x $work/venv/bin/python ]] || { cat "$work/venv.log"; false; }'
run "$work/venv/bin/python" -m pip install --no-index --no-deps "$work/$name" > "$work/pip.log" 2>&1
check "pip install --no-index the wheel" '[[ -x $work/venv/bin/nvte-doctor ]] || { tail -n 20 "$work/pip.log"; false; }'
out=$(run "$work/venv/bin/nvte-doctor" --version 2>&1)
check "nvte-doctor --version ($out)" '[[ $out == "nvte-doctor $version" ]]'
out=$(run "$work/venv/bin/python" -m nvte_doctor --version 2>&1)
check "python -m nvte_doctor --version ($out)" '[[ $out == "nvte-doctor $version" ]]'
run "$work/venv/bin/nvte-doctor" explain --facts "$source_dir/tests/fixtures/snapshots/h100-node.json" \
  --hf-config "$source_dir/tests/fixtures/hf/llama-3-8b/config.json" > "$work/explain.txt" 2>&1
explain_rc=$?
# Exit 3 is the verdict "unknown" (no TE in the venv) as well as bad input: the verdict line tells.
check "nvte-doctor explain from the venv (exit $explain_rc)" \
  '[[ $explain_rc -le 3 ]] && grep -q "^llama-3-8b → " "$work/explain.txt" || { head -n 20 "$work/explain.txt"; false; }'
site=$(run "$work/venv/bin/python" -c 'import nvte_doctor, os; print(os.path.dirname(nvte_doctor.__file__))')
run "$work/venv/bin/nvte-doctor" rules list --format json > "$work/rules.json" 2>&1
check "finds the rules inside the installed package" 'grep -q "\"source\": \"$site/bundle/share/nvte-doctor/rules\"" "$work/rules.json"'
run "$work/venv/bin/nvte-doctor" probe --format json > "$work/probe.json" 2>&1
check "probe examines the venv's interpreter by default" \
  '"$python" -c "import json, sys; f = json.load(open(sys.argv[1]))[\"facts\"]; sys.exit(0 if f[\"python\"][\"executable\"] == sys.argv[2] else 1)" "$work/probe.json" "$work/venv/bin/python" || { grep -m 3 -n "\"executable\"" "$work/probe.json"; false; }'
run "$work/venv/bin/nvte-doctor" probe --format json --python /usr/bin/python3 > "$work/probe2.json" 2>&1
check "--python still chooses another interpreter" \
  '"$python" -c "import json, sys; f = json.load(open(sys.argv[1]))[\"facts\"]; sys.exit(0 if f[\"python\"][\"executable\"] == \"/usr/bin/python3\" else 1)" "$work/probe2.json" || { grep -m 3 -n "\"executable\"" "$work/probe2.json"; false; }'

echo "$failures failure(s)"
((failures == 0))
