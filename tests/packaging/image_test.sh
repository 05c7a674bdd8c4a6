#!/bin/bash
# The OCI image (scripts/build-image.sh), built as the test suite can afford: the minimal variant
# (the package and the libraries it links, extracted) from this build tree's .deb, with the
# downloaded Debian packages cached in the build tree. Then, from the image alone: unpack it with
# umoci, run the doctor inside its root filesystem (chroot, with its own /proc as a container
# runtime gives it) — --version, `rules lint` of the installed rules, and `check --facts` of the
# A100 and H100 snapshots, which must say what the build tree's binary says — check the image
# config (entrypoint, labels, created = SOURCE_DATE_EPOCH) and build it a second time: the same
# manifest digest (reproducible).
# Needs root, mmdebstrap, umoci, unshare (util-linux) and the apt mirror; skipped (77) without them.
# Usage: image_test.sh BUILD_DIR SOURCE_DIR VERSION
set -uo pipefail
build=$1 src=$2 version=$3
work=$(mktemp -d)
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
step() { echo "--- $*"; }
cleanup() { rm -rf "$work"; }
trap cleanup EXIT

if [[ $(id -u) != 0 ]]; then echo "not root: mmdebstrap --mode=root impossible, skipped"; exit 77; fi
for tool in mmdebstrap umoci unshare; do
  command -v "$tool" >/dev/null || { echo "$tool not installed (apt-get install mmdebstrap umoci util-linux): skipped"; exit 77; }
done
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
[[ "$prefix" == /usr ]] || { echo "the build tree's install prefix is '$prefix', not /usr: skipped"; exit 77; }

step "cpack"
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/deb" > "$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/deb/nvte-doctor_*.deb | head -n 1)
[[ -f "$deb" ]] || { cat "$work/cpack.log"; echo "FAIL no .deb"; exit 1; }

export SOURCE_DATE_EPOCH=1764547200 # 2025-12-01T00:00:00Z
build_image() { # OUT
  local start=$SECONDS
  if ! "$src/scripts/build-image.sh" --variant minimal --deb "$deb" --out "$1" --cache "$build/image-cache" > "$1.digest" 2> "$1.log"; then
    cat "$1.log"
    return 1
  fi
  echo "built in $((SECONDS - start)) s: $(tail -n 1 "$1.digest")"
}

step "build-image.sh --variant minimal"
mkdir -p "$work/a" "$work/b"
build_image "$work/a" || { echo "FAIL build-image.sh failed"; exit 1; }
digest=$(tail -n 1 "$work/a.digest")
[[ "$digest" =~ ^sha256:[0-9a-f]{64}$ ]] || fail "build-image.sh printed '$digest', not a digest"
[[ -f "$work/a/nvte-doctor_${version}.oci.tar" ]] || fail "no oci-archive nvte-doctor_${version}.oci.tar"
listing=$(tar -tf "$work/a/nvte-doctor_${version}.oci.tar")
grep -qx './index.json' <<< "$listing" || fail "the oci-archive has no index.json"
grep -q "\"org.opencontainers.image.ref.name\":\"$version\"" "$work/a/nvte-doctor/index.json" || fail "the layout is not tagged $version"

step "the image config"
manifest=$(cat "$work/a/nvte-doctor/blobs/sha256/${digest#sha256:}")
config_digest=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["config"]["digest"])' "$manifest")
config="$work/a/nvte-doctor/blobs/sha256/${config_digest#sha256:}"
python3 - "$config" "$version" <<'EOF' || fail "image config"
import json, sys
c = json.load(open(sys.argv[1]))
want = {"entrypoint": ["/usr/bin/nvte-doctor"], "cmd": ["check"], "created": "2025-12-01T00:00:00Z"}
got = {"entrypoint": c["config"].get("Entrypoint"), "cmd": c["config"].get("Cmd"), "created": c.get("created")}
labels = c["config"].get("Labels", {})
ok = got == want and labels.get("org.opencontainers.image.version") == sys.argv[2] and len(c["rootfs"]["diff_ids"]) == 1
print("config:", got, "labels:", labels)
sys.exit(0 if ok else 1)
EOF

step "the doctor inside the image"
umoci unpack --image "$work/a/nvte-doctor:$version" "$work/bundle" > "$work/unpack.log" 2>&1 || { cat "$work/unpack.log"; fail "umoci unpack"; exit 1; }
root="$work/bundle/rootfs"
[[ ! -e "$root/bin/sh" ]] || fail "the minimal image has a shell: more than the package and its libraries"
# The doctor starts as a container runtime starts an image's entrypoint: chrooted into the root
# filesystem, as PID 1 of its own PID and mount namespaces, with a fresh /proc (every OCI runtime
# mounts one). The mount lives only in that namespace and vanishes with it, so nothing stays
# mounted under $work, not even when the test is killed. A bare chroot has no /proc, which no
# container has: the doctor then cannot read /proc/self/exe to find the rules beside a relocated
# binary, and the sanitized build (scripts/sanitize.sh packages it, libasan and libubsan among
# its Depends, and tests that package like any other) cannot read /proc/self/maps: ASan does not
# know where the main thread's stack is, cannot unpoison it when an exception unwinds it
# ("ignoring requested __asan_handle_no_return") and then reports a stack-buffer-overflow on the
# next write there, which its own warning calls a possible false positive.
mkdir -p "$root/proc"
in_image() { unshare --pid --fork --mount-proc="$root/proc" chroot "$root" "$@"; }
got=$(in_image /usr/bin/nvte-doctor --version 2>&1)
[[ "$got" == "nvte-doctor $version" ]] || fail "--version in the image printed '$got'"
echo "$got"
in_image /usr/bin/nvte-doctor rules lint > "$work/lint.log" 2>&1 || { cat "$work/lint.log"; fail "rules lint of the image's rules"; }
tail -n 1 "$work/lint.log"
mkdir -p "$root/tmp"
for node in a100-node h100-node; do
  cp "$src/tests/fixtures/snapshots/$node.json" "$root/tmp/"
  in_image /usr/bin/nvte-doctor check --facts "/tmp/$node.json" --format json > "$work/image.json" 2> "$work/image.err"
  rc=$?
  "$build/nvte-doctor" check --facts "$src/tests/fixtures/snapshots/$node.json" --rules "$src/rules" --format json > "$work/tree.json" 2>/dev/null
  tree_rc=$?
  echo "check --facts $node.json: exit $rc in the image, $tree_rc from the build tree"
  ((rc != 3)) || { cat "$work/image.err"; fail "check in the image exited 3"; }
  ((rc == tree_rc)) || fail "check of $node in the image exited $rc, the build tree's $tree_rc"
  python3 - "$work/image.json" "$work/tree.json" <<'EOF' || fail "the image's check of $node differs from the build tree's"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
key = lambda d: (d["summary"], sorted(f["id"] for f in d["findings"]))
print("  image:", key(a)[0]["status"], key(a)[1])
sys.exit(0 if key(a) == key(b) else 1)
EOF
  python3 "$src/tests/validate_report.py" "$src/packaging/schema/report.schema.json" "$work/image.json"
  [[ $? == 1 ]] && fail "the image's report of $node does not match report.schema.json"
done

step "reproducible: a second build"
build_image "$work/b" || fail "the second build failed"
second=$(tail -n 1 "$work/b.digest")
if [[ "$second" == "$digest" ]]; then
  echo "same digest: $digest"
else
  fail "two builds gave $digest and $second"
  cmp "$work/a/nvte-doctor_${version}.oci.tar" "$work/b/nvte-doctor_${version}.oci.tar"
fi
cmp -s "$work/a/nvte-doctor_${version}.oci.tar" "$work/b/nvte-doctor_${version}.oci.tar" || fail "the two oci-archives differ"

((failures == 0)) && echo "image test passed"
((failures == 0))
