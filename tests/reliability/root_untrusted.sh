#!/bin/bash
# The audit's (2026-12-01) reproducers for the rule for untrusted trees that need root: files of
# another user (chown to uid 65534). CI runs as root; elsewhere this exits 77, which ctest reports
# as skipped. Item 8: as root, a library another user can change is never loaded, not even in the
# version child (nor NVML or libcuda by SONAME); root's own library in a directory only root can
# change still is.
# Usage: root_untrusted.sh NVTE_DOCTOR FAKE_CUDNN_MARKER_LIBRARY
set -uo pipefail
doctor=$1
marker_lib=$2
if [[ $(id -u) != 0 ]]; then echo "needs root (files of another user): skipped"; exit 77; fi
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
chmod 755 "$T"
failures=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1 ($2)"; failures=$((failures + 1)); fi; }
probe() { # LD_LIBRARY_PATH MARKER OUT: the live probe as root, with the library where the loader looks
  env NVTE_TEST_LOAD_MARKER="$2" LD_LIBRARY_PATH="$1" timeout 60 "$doctor" probe --format json > "$3" 2> "$3.err"
}

# The audit's reproducer: LD_LIBRARY_PATH names a directory another user owns and can write.
mkdir -m 777 "$T/theirs"
cp "$marker_lib" "$T/theirs/libcudnn.so.9"
chown -R 65534 "$T/theirs"
probe "$T/theirs" "$T/LOADED" "$T/theirs.json"
check "another user's library is never loaded as root" '[[ ! -e $T/LOADED ]]'
check "its copy is listed with why its version is unknown" \
  'grep -q "$T/theirs/libcudnn.so.9: version unknown: not loaded (owned by uid 65534)" "$T/theirs.json"'

# Root's file, but in a directory every user can write (another user could replace it).
mkdir -m 777 "$T/open"
cp "$marker_lib" "$T/open/libcudnn.so.9"
probe "$T/open" "$T/LOADED_OPEN" "$T/open.json"
check "root's library in a directory all users can write is not loaded" '[[ ! -e $T/LOADED_OPEN ]]'
check "and the directory is named" 'grep -q "directory $T/open is writable by all users" "$T/open.json"'

# Root's file in root's directory: the version child still asks it (the rule is not a blanket ban).
mkdir -m 755 "$T/roots"
cp "$marker_lib" "$T/roots/libcudnn.so.9"
probe "$T/roots" "$T/LOADED_ROOTS" "$T/roots.json"
check "root's own library in root's directory is loaded for its version" '[[ -e $T/LOADED_ROOTS ]]'
check "and its version read" 'grep -q "\"version\": \"9.3.0\"" "$T/roots.json"'

# A root-owned library, but LD_LIBRARY_PATH also names another user's directory: its
# dependencies could come from there, so nothing is loaded.
probe "$T/roots:$T/theirs" "$T/LOADED_BOTH" "$T/both.json"
check "nothing is loaded while LD_LIBRARY_PATH names another user's directory" '[[ ! -e $T/LOADED_BOTH ]]'
check "and that directory is named" 'grep -q "LD_LIBRARY_PATH names $T/theirs" "$T/both.json"'

# NVML and libcuda, which the vendor probes dlopen by SONAME, would come from that directory too.
cp "$marker_lib" "$T/theirs/libnvidia-ml.so.1"
cp "$marker_lib" "$T/theirs/libcuda.so.1"
chown -R 65534 "$T/theirs"
env NVTE_TEST_LOAD_MARKER="$T/LOADED_VENDOR" LD_LIBRARY_PATH="$T/theirs" timeout 60 "$doctor" probe --deep --format json > "$T/deep.json" 2>&1
check "NVML and libcuda are not loaded from another user's directory" '[[ ! -e $T/LOADED_VENDOR ]]'
check "and the vendor probes say why" 'grep -q "not loaded: LD_LIBRARY_PATH names $T/theirs" "$T/deep.json"'

echo "$failures failure(s)"
((failures == 0))
