#!/usr/bin/env bash
# Times README command 1 (`scripts/bootstrap.sh --doctor && build/nvte-doctor`) as a new user
# runs it: in a fresh clone of this checkout's HEAD, without a compiler cache (CCACHE_DISABLE=1).
#   scripts/time-first-run.sh [--keep] [--ref REF]
#   --keep     leave the clone (its path is printed) instead of removing it
#   --ref REF  clone REF instead of HEAD (committed work only: the clone is what a user gets)
# Prints the wall time to the report, the CPU time (user+sys of every process it started), the
# machine (cores, load average before and after: on a shared machine the load inflates the wall
# time, the CPU time is the steadier number), the Debian packages bootstrap.sh had to install,
# and where the time went: configure, the compile steps (their number and the slowest ones from
# ninja's log), the link of the binary, the doctor's own run. The last line is the summary that
# docs/records/performance.md quotes. Packages are installed as bootstrap.sh installs them (root
# or sudo); on a machine that has them, the number is the build's alone.
set -euo pipefail
cd "$(dirname "$0")/.."
keep=0 ref=HEAD
while (($#)); do
  case "$1" in
    --keep) keep=1 ;;
    --ref) ref=${2:?--ref needs a REF}; shift ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "time-first-run: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
commit=$(git rev-parse --short "$ref")
clone=$(mktemp -d /tmp/nvte-first-run.XXXXXX)
((keep)) || trap 'rm -rf "$clone"' EXIT
git clone --quiet --no-hardlinks "$PWD" "$clone/nvte-doctor"
git -C "$clone/nvte-doctor" checkout --quiet "$commit"
cd "$clone/nvte-doctor"

missing=0
for p in cmake ninja-build g++ pkg-config libpci-dev libyaml-cpp-dev libcurl4-openssl-dev nlohmann-json3-dev \
         libcli11-dev libelf-dev libsystemd-dev libyaml-dev libsodium-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing=$((missing + 1))
done
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
export CCACHE_DISABLE=1
now() { date +%s.%N; }
cpu() { times | tail -n 1 | awk '{ split($1, u, "m"); split($2, s, "m"); printf "%.0f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }'; }
t0=$(now)
# README command 1, as written there; the doctor's exit status (0-3) is its verdict, not a failure.
scripts/bootstrap.sh --doctor > bootstrap.log 2>&1 || { tail -n 30 bootstrap.log; echo "time-first-run: bootstrap.sh failed" >&2; exit 1; }
t1=$(now)
build/nvte-doctor > doctor.log 2>&1 || true
t2=$(now)
cpu_s=$(cpu)
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# ninja's log: start and end (ms since the build started) of each step; the first line is a header.
read -r steps compile_ms span_ms link_ms < <(awk -F'\t' 'NR > 1 {
    d = $2 - $1; if ($2 > end) end = $2
    if ($4 ~ /\.o$/) { n++; c += d } else if ($4 ~ /(^|\/)nvte-doctor$/) l = d
  } END { print n + 0, c + 0, end + 0, l + 0 }' build/.ninja_log)
total=$(awk -v a="$t0" -v b="$t2" 'BEGIN { printf "%.0f", b - a }')
boot=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
doctor=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.1f", b - a }')
rest=$(awk -v b="$boot" -v s="$span_ms" 'BEGIN { printf "%.1f", b - s / 1000 }')
mmss() { printf '%d min %02d s' $(($1 / 60)) $(($1 % 60)); }

echo "commit $commit, $(nproc) cores, load average before $load_before, after $load_after"
echo "Debian packages bootstrap.sh installed: $missing of 13"
printf '  %-44s %8.1f s\n' "packages + configure (bootstrap.sh before ninja)" "$rest"
printf '  %-44s %8.1f s  (%d compile steps, %.1f s summed)\n' "build (ninja, -j$(nproc))" "$(awk -v s="$span_ms" 'BEGIN{print s/1000}')" "$steps" "$(awk -v s="$compile_ms" 'BEGIN{print s/1000}')"
printf '  %-44s %8.1f s\n' "  of it the link of nvte-doctor" "$(awk -v s="$link_ms" 'BEGIN{print s/1000}')"
printf '  %-44s %8.1f s\n' "build/nvte-doctor (the report)" "$doctor"
echo "  slowest compile steps:"
awk -F'\t' 'NR > 1 && $4 ~ /\.o$/ { printf "    %6.1f s  %s\n", ($2 - $1) / 1000, $4 }' build/.ninja_log | sort -rn | head -n 5
((keep)) && echo "clone kept: $clone/nvte-doctor"
echo "first run: $(mmss "$total") wall, ${cpu_s} s CPU, $(nproc) cores, load $load_before -> $load_after, $missing packages installed, ccache off, commit $commit"
