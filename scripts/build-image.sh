#!/usr/bin/env bash
# Builds the nvte-doctor OCI image from Debian packages only, offline but for the apt mirror, and
# reproducibly: mmdebstrap makes the root filesystem (Debian 12 with the project's .deb installed)
# as one tarball, umoci turns it into an OCI image layout tagged with the package's version. No
# registry is pulled from and no Dockerfile is involved. The same .deb, mirror content and
# SOURCE_DATE_EPOCH give the same image digest.
#
#   scripts/build-image.sh [--deb FILE] [--out DIR] [--variant essential|minimal]
#                          [--mirror SOURCE]... [--cache DIR] [--keep-rootfs]
#
#   --deb FILE     the package to install (default: built with scripts/build-deb.sh)
#   --out DIR      where the image goes (default build-image/): DIR/nvte-doctor (the OCI layout,
#                  tag VERSION) and DIR/nvte-doctor_VERSION.oci.tar (the same as one archive)
#   --variant      essential (default): Debian's Essential:yes set (a shell, coreutils) plus the
#                  package with its dependencies and libcurl4 + ca-certificates for `push`;
#                  minimal: only the package and the libraries it links, extracted (no shell,
#                  no dpkg; what the test suite builds, in seconds rather than minutes)
#   --mirror       an apt source line (repeatable; default: Debian 12 main, updates, security
#                  from deb.debian.org). For an image that rebuilds bit for bit later, use
#                  snapshot.debian.org ("deb http://snapshot.debian.org/archive/debian/20261120T000000Z bookworm main").
#   --cache DIR    keep downloaded packages here between builds (what the tests do)
#   --keep-rootfs  keep DIR/rootfs.tar (the image's single layer, uncompressed)
#
# SOURCE_DATE_EPOCH (default: the date of the newest packaging/debian/changelog entry) is every
# timestamp in the image: file times, the config's "created", the archive's entries.
# Needs root (mmdebstrap --mode=root), mmdebstrap and umoci (apt-get install mmdebstrap umoci).
# Prints the image's manifest digest (sha256:...) on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD

deb="" out=build-image variant=essential cache="" keep_rootfs=0
mirrors=()
while (($#)); do
  case "$1" in
    --deb) deb=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --variant) variant=$2; shift 2 ;;
    --mirror) mirrors+=("$2"); shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    --keep-rootfs) keep_rootfs=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-image: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
case "$variant" in essential|minimal) ;; *) echo "build-image: --variant is essential or minimal, not '$variant'" >&2; exit 2 ;; esac
for tool in mmdebstrap umoci dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "build-image: $tool is missing (apt-get install mmdebstrap umoci)" >&2; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "build-image: needs root (mmdebstrap --mode=root installs packages into the tree)" >&2; exit 1; }
((${#mirrors[@]})) || mirrors=("deb http://deb.debian.org/debian bookworm main"
                               "deb http://deb.debian.org/debian bookworm-updates main"
                               "deb http://deb.debian.org/debian-security bookworm-security main")

if [[ -z "$deb" ]]; then
  deb=$(scripts/build-deb.sh | tail -n 1)
fi
[[ -f "$deb" ]] || { echo "build-image: no package at '$deb'" >&2; exit 1; }
deb=$(realpath "$deb")
[[ "$(dpkg-deb -f "$deb" Package)" == nvte-doctor ]] || { echo "build-image: $deb is not the nvte-doctor package" >&2; exit 1; }
version=$(dpkg-deb -f "$deb" Version)
version=${version%-*} # the image is tagged with the upstream version: nvte-doctor:VERSION

if [[ -z "${SOURCE_DATE_EPOCH:-}" ]]; then
  SOURCE_DATE_EPOCH=$(dpkg-parsechangelog -l "$src/packaging/debian/changelog" -STimestamp)
fi
export SOURCE_DATE_EPOCH
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)

mkdir -p "$out"
out=$(realpath "$out")
rootfs="$out/rootfs.tar"
layout="$out/nvte-doctor"
rm -rf "$layout" "$rootfs" "$out/nvte-doctor_${version}.oci.tar"

# The root filesystem, as a directory first: the same finishing steps apply to both variants
# (mmdebstrap runs no customize hook in extract mode), then one tarball of it.
tree="$out/rootfs"
rm -rf "$tree"
hooks=()
if [[ -n "$cache" ]]; then
  mkdir -p "$cache"
  cache=$(realpath "$cache")
  hooks+=(--setup-hook="mkdir -p \"\$1/var/cache/apt/archives/\"" --setup-hook="sync-in $cache /var/cache/apt/archives/")
fi
# apt installs the local .deb from inside the tree, at the path it has outside: a copy is staged
# under /tmp, outside and in the tree, for the install and removed below.
stage=$(mktemp -d /tmp/nvte-doctor-image.XXXXXX)
trap 'rm -rf "$stage"' EXIT
cp "$deb" "$stage/"
staged="$stage/$(basename "$deb")"
hooks+=(--setup-hook="mkdir -p \"\$1$stage\" && cp '$staged' \"\$1$stage/\"")
if [[ $variant == essential ]]; then
  mode=(--variant=essential --include="$staged" --include=libcurl4,ca-certificates)
else
  mode=(--variant=extract --include="$staged")
fi
echo "build-image: $variant root filesystem with $(basename "$deb") (SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH)" >&2
mmdebstrap --quiet --mode=root --format=directory --skip=cleanup/apt/cache --skip=essential/unlink \
  "${mode[@]}" "${hooks[@]}" bookworm "$tree" "${mirrors[@]}"

# Downloaded packages go to the cache (Debian's only: a package of this project with the same
# version but another build must never be taken from it), then out of the tree.
archives="$tree/var/cache/apt/archives"
if [[ -n "$cache" ]]; then
  find "$archives" -maxdepth 1 -name '*.deb' ! -name 'nvte-doctor_*' -exec cp -n -t "$cache" {} +
fi
find "$archives" -maxdepth 1 -name '*.deb' -delete
rm -rf "$archives/partial" "$archives/lock" "$tree"/var/cache/apt/*.bin # apt's caches: they differ per run
rm -rf "$tree$stage"
# Host files mmdebstrap copies in, made the same on every build machine.
rm -f "$tree/etc/resolv.conf"
: > "$tree/etc/hostname"
if [[ $variant == minimal ]]; then
  # Extracted, not installed: no maintainer script ran, so the loader cache is made here.
  ldconfig -r "$tree"
  rm -f "$tree/var/cache/ldconfig/aux-cache"
fi
# One tarball, in name order, every time clamped to SOURCE_DATE_EPOCH, numeric owners, no atime
# or ctime: the reproducible-builds recipe for tar.
tar --sort=name --format=pax --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
  --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime --numeric-owner -C "$tree" -cf "$rootfs" .
rm -rf "$tree"

# The OCI image: one layer (the tarball, added verbatim), the config, no history timestamps
# other than SOURCE_DATE_EPOCH.
umoci init --layout "$layout"
umoci new --image "$layout:$version"
umoci config --image "$layout:$version" --no-history --created "$created" --author "nvte-doctor build-image.sh" \
  --config.entrypoint /usr/bin/nvte-doctor --config.cmd check --config.workingdir / \
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.label org.opencontainers.image.title=nvte-doctor \
  --config.label org.opencontainers.image.version="$version" \
  --config.label org.opencontainers.image.created="$created" \
  --config.label org.opencontainers.image.description="nvte-doctor $version on Debian 12 ($variant)" \
  --manifest.annotation org.opencontainers.image.version="$version"
umoci raw add-layer --image "$layout:$version" --history.created "$created" \
  --history.created_by "mmdebstrap --variant=$variant + $(basename "$deb")" "$rootfs"
umoci gc --layout "$layout"
((keep_rootfs)) || rm -f "$rootfs"

# One archive of the layout, for `skopeo copy oci-archive:...` and `podman load`.
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner --mode=go-w \
  -C "$layout" -cf "$out/nvte-doctor_${version}.oci.tar" .

digest=$(sed -n 's/.*"digest":"\(sha256:[0-9a-f]*\)".*/\1/p' "$layout/index.json")
echo "build-image: $layout:$version (oci-archive: $out/nvte-doctor_${version}.oci.tar)" >&2
echo "$digest"
