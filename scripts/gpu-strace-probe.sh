#!/usr/bin/env bash
# Where the probe's threads spend their system calls on the GPU node with TE on PYTHONPATH (as
# bench-native leaves it): three warm-up probes, two `strace -f -tt -T` timelines with `-vv` laps,
# one `strace -f -c` summary, three plain `probe -vv` laps, and PATH's directories with their
# sizes. Needs Debian's strace carried with its libraries in .gpu-carry/tools (RPATH $ORIGIN, as
# patchelf --force-rpath --set-rpath '$ORIGIN' makes it). Issue 40 round 9 ran it as
# .gpu-carry/diag2.sh (docs/records/validation.md). Writes $OUT/strace-probe.tar.gz.
set -u
cd "$(dirname "$0")/.." || exit 3
bin=${1:-.gpu-carry/nvte-doctor}
strace=${STRACE:-.gpu-carry/tools/strace}
out=${OUT:?OUT names the directory for the results}
pp=${TE_PREFIX:-/tmp/te-prefix}:$PWD/.gpu-te/py:${EXT_DIR:-/tmp/nvte-ext}/good
d=$out/strace-probe
mkdir -p "$d"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/root/nvte-strace-cache}
mkdir -p "$XDG_CACHE_HOME" && chmod 700 "$XDG_CACHE_HOME"
for i in 1 2 3; do PYTHONPATH=$pp "$bin" probe >/dev/null 2>&1; done
for i in 1 2; do PYTHONPATH=$pp "$strace" -f -tt -T -o "$d/strace-$i.txt" "$bin" probe -vv >/dev/null 2>"$d/laps-strace-$i.log"; done
PYTHONPATH=$pp "$strace" -f -c -o "$d/strace-c.txt" "$bin" probe >/dev/null 2>&1
for i in 1 2 3; do PYTHONPATH=$pp "$bin" probe -vv >/dev/null 2>"$d/laps-$i.log"; done
{ echo "PATH=$PATH"; for p in ${PATH//:/ }; do echo "$p $(ls "$p" 2>/dev/null | wc -l)"; done; } >"$d/env.txt"
tar czf "$out/strace-probe.tar.gz" -C "$out" strace-probe && rm -rf "$d"
