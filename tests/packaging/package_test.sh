#!/bin/bash
# The Debian package end to end, as a cluster rolls it out: build it from this build tree with
# CPack, lintian reports no errors, Depends comes from dpkg-shlibdeps and names no NVIDIA
# library, install with dpkg -i, the installed binary reports its version and lints the
# installed rules, the conffile is registered, reinstall (the upgrade path) works, then
# dpkg --purge leaves no file of the package (nor its state directory) behind.
# Needs root (dpkg -i). Installs lintian with apt-get when it is missing.
# Usage: package_test.sh BUILD_DIR VERSION
set -uo pipefail
build=$1 version=$2
pkg=nvte-doctor
work=$(mktemp -d)
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
step() { echo "--- $*"; }

if [[ $(id -u) != 0 ]]; then echo "not root: dpkg -i impossible, skipped"; exit 77; fi
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
if [[ "$prefix" != /usr ]]; then
  echo "FAIL the build tree's install prefix is '$prefix': a package of it would look for its rules there."
  echo "     Configure with -DCMAKE_INSTALL_PREFIX=/usr (the project's default for a new build tree)."
  exit 1
fi
if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed'; then
  echo "FAIL $pkg is already installed on this machine; this test would replace and purge it. Remove it first."
  exit 1
fi
cleanup() {
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q installed; then dpkg --purge "$pkg" >/dev/null 2>&1; fi
  rm -rf "$work"
}
trap cleanup EXIT

step "cpack"
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work" > "$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/${pkg}_*.deb 2>/dev/null | head -n 1)
[[ -f "$deb" ]] || { cat "$work/cpack.log"; echo "FAIL no .deb produced"; exit 1; }
echo "$(basename "$deb"), $(stat -c %s "$deb") bytes"

step "control fields"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libpci3 libc6; do
  [[ "$depends" == *"$lib"* ]] || fail "Depends lacks $lib (dpkg-shlibdeps should have found it)"
done
# The C++ runtime and yaml-cpp are linked in where their archives exist (cmake/Dependencies.cmake);
# Depends names them exactly when the binary needs their shared libraries.
needed=$(objdump -p "$build/nvte-doctor")
for pair in "libstdc++.so:libstdc++6" "libyaml-cpp.so:libyaml-cpp"; do
  so=${pair%%:*} dep=${pair#*:}
  if grep -q "NEEDED *$so" <<< "$needed"; then
    [[ "$depends" == *"$dep"* ]] || fail "Depends lacks $dep, which the binary needs"
  elif [[ "$depends" == *"$dep"* ]]; then
    fail "Depends names $dep, which the binary does not need"
  fi
done
if grep -qiE 'nvidia|cudnn|nccl|libcuda|nvrtc|cudart' <<< "$depends"; then fail "Depends names an NVIDIA library: $depends"; fi
[[ "$(dpkg-deb -f "$deb" Version)" == "$version"-* ]] || fail "package version $(dpkg-deb -f "$deb" Version) is not $version-REVISION"
dpkg-deb -I "$deb" conffiles | grep -qx /etc/nvte-doctor/config.yaml || fail "config.yaml is not a conffile"
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for path in ./usr/bin/nvte-doctor ./usr/share/nvte-doctor/rules/ ./usr/share/nvte-doctor/report.schema.json \
            ./etc/nvte-doctor/config.yaml ./usr/share/man/man1/nvte-doctor.1.gz ./usr/share/man/man5/nvte-doctor-rules.5.gz \
            ./usr/share/man/man5/nvte-doctor.conf.5.gz ./usr/share/bash-completion/completions/nvte-doctor \
            ./usr/share/zsh/vendor-completions/_nvte-doctor ./usr/share/fish/vendor_completions.d/nvte-doctor.fish \
            ./usr/share/doc/nvte-doctor/copyright \
            ./usr/share/doc/nvte-doctor/changelog.Debian.gz ./usr/libexec/nvte-doctor/nvte-doctor-healthcheck; do
  grep -qxF "$path" <<< "$contents" || fail "the package lacks $path"
done
for unit in nvte-doctor.service nvte-doctor.timer nvte-doctor-daemon.service; do
  grep -qE "^\./(usr/)?lib/systemd/system/$unit$" <<< "$contents" || fail "the package lacks the systemd unit $unit"
done

step "lintian"
if ! command -v lintian >/dev/null; then
  echo "lintian missing: apt-get install lintian"
  DEBIAN_FRONTEND=noninteractive timeout 150 apt-get install -y -qq --no-install-recommends lintian > "$work/apt.log" 2>&1 \
    || { cat "$work/apt.log"; fail "could not install lintian"; }
fi
if command -v lintian >/dev/null; then
  lintian --allow-root --tag-display-limit 0 "$deb" > "$work/lintian.log" 2>&1
  cat "$work/lintian.log"
  if grep -q '^E: ' "$work/lintian.log"; then fail "lintian reports errors"; fi
fi

step "dpkg -i"
dpkg -i "$deb" > "$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i failed"; exit 1; }
got=$(/usr/bin/nvte-doctor --version 2>&1)
[[ "$got" == "nvte-doctor $version" ]] || fail "--version printed '$got'"
echo "$got"
# Run from / with a clean environment so nothing but the installed rules can be found.
(cd / && env -u NVTE_DOCTOR_RULES /usr/bin/nvte-doctor rules lint) > "$work/lint.log" 2>&1 || { cat "$work/lint.log"; fail "rules lint of the installed rules failed"; }
tail -n 3 "$work/lint.log"
files=$(cd / && env -u NVTE_DOCTOR_RULES /usr/bin/nvte-doctor rules list --format json | grep -o '"file": *"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/' | sort -u)
[[ -n "$files" ]] || fail "rules list --format json names no rule files"
if grep -v '^/usr/share/nvte-doctor/rules/' <<< "$files" | grep -q .; then fail "the installed binary read rules outside /usr/share/nvte-doctor/rules: $files"; fi
/usr/bin/nvte-doctor rules lint /usr/share/nvte-doctor/rules > /dev/null 2>&1 || fail "rules lint /usr/share/nvte-doctor/rules failed"
dpkg-query -W -f='${Conffiles}\n' "$pkg" | grep -q '/etc/nvte-doctor/config.yaml' || fail "dpkg does not track /etc/nvte-doctor/config.yaml as a conffile"
man_out=$(zcat /usr/share/man/man1/nvte-doctor.1.gz | head -n 20)
[[ "$man_out" == *nvte-doctor* ]] || fail "the installed man page is unreadable"
out=$(bash -c 'source /usr/share/bash-completion/completions/nvte-doctor; COMP_WORDS=(nvte-doctor rules sh); COMP_CWORD=2; _nvte_doctor; echo "${COMPREPLY[*]}"')
[[ "$out" == show ]] || fail "the installed bash completion completed 'rules sh' to '$out'"
if command -v fish >/dev/null; then
  # fish finds vendor completions by itself: nothing sourced.
  out=$(fish -c 'complete -C "nvte-doctor rules sh"')
  [[ "$out" == show* ]] || fail "the installed fish completion completed 'rules sh' to '$out'"
fi
NVTE_DOCTOR_LIBEXEC=/usr/libexec/nvte-doctor /usr/libexec/nvte-doctor/npd-check --report /nonexistent > /dev/null
[[ $? == 2 ]] || fail "the installed npd-check does not exit 2 (Unknown) without a report"
dpkg -L "$pkg" > "$work/files"

step "reinstall (upgrade path)"
echo "# operator edit" >> /etc/nvte-doctor/config.yaml
dpkg -i --force-confold "$deb" > "$work/dpkg2.log" 2>&1 || { cat "$work/dpkg2.log"; fail "reinstall failed"; }
grep -q '^# operator edit$' /etc/nvte-doctor/config.yaml || fail "reinstall overwrote the edited conffile"

step "dpkg --purge"
# What the service leaves at run time: its state directory and report.
mkdir -p /var/lib/nvte-doctor && echo '{}' > /var/lib/nvte-doctor/report.json
dpkg --purge "$pkg" > "$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "dpkg --purge failed"; }
dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q installed && fail "$pkg still known to dpkg after purge"
left=0
while IFS= read -r path; do
  [[ -d "$path" ]] && continue
  if [[ -e "$path" || -L "$path" ]]; then echo "left behind: $path"; left=1; fi
done < "$work/files"
for dir in /etc/nvte-doctor /usr/share/nvte-doctor /usr/libexec/nvte-doctor /usr/share/doc/nvte-doctor /var/lib/nvte-doctor; do
  [[ -e "$dir" ]] && { echo "left behind: $dir"; left=1; }
done
((left == 0)) || fail "purge left files behind"

((failures == 0)) && echo "package test passed"
((failures == 0))
