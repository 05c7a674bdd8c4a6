#!/usr/bin/env bash
# Times README command 1 (`scripts/bootstrap.sh --doctor && build/nvte-doctor`), or with
# --command 2 README command 2 (the install, the whole build and the whole test suite, as CI runs
# it), as a new user runs it: in a fresh clone of this checkout's HEAD, without a compiler cache
# (CCACHE_DISABLE=1).
#   scripts/time-first-run.sh [--command 1|2] [--keep] [--ref REF] [--fresh-root [--mirror URL]]
#   --command N   which README command: 1 (default) or 2, whose line is read from the clone's
#                 README.md (the second line of its first sh block) and run as written there
#   --keep        leave the clone (its path is printed) instead of removing it
#   --ref REF     clone REF instead of HEAD (committed work only: the clone is what a user gets)
#   --fresh-root  run it inside a new Debian 12 root (mmdebstrap --variant=minbase bookworm, made
#                 first and not timed; needs root, mmdebstrap and the mirror), where none of the
#                 packages is installed: apt-get update and their installation are in the time,
#                 as on a new machine, whatever this machine has installed
#   --mirror URL  the Debian mirror of that root (default http://deb.debian.org/debian)
# Prints the wall time, the CPU time (user+sys of every process it started), the machine (cores,
# load average before and after: on a shared machine the load inflates the wall time, the CPU
# time is the steadier number), the Debian packages bootstrap.sh had to install, and where the
# time went: packages and configure, the build (its steps, those of the tests, the slowest from
# ninja's log), the link of the binary, and then the doctor's report (command 1) or the test
# suite (command 2: ctest's total, its counts and its slowest tests). The last line is the
# summary that docs/records/performance.md quotes. Packages are installed as bootstrap.sh
# installs them (root or sudo); on a machine that has them, the number is the build's (and the
# tests') alone (--fresh-root includes them anyway). CCACHE_DISABLE=1 also makes the build
# configure as on a machine without ccache (CMakeLists.txt), which compiles the libraries and the
# test executables as unity batches. Command 2 fails (exit 1) when a test fails, after the report.
set -euo pipefail
cd "$(dirname "$0")/.."
keep=0 ref=HEAD fresh_root=0 mirror=http://deb.debian.org/debian which=1
while (($#)); do
  case "$1" in
    --command) which=${2:?--command needs 1 or 2}; shift
               [[ $which == [12] ]] || { echo "time-first-run: --command takes 1 or 2, not '$which'" >&2; exit 2; } ;;
    --keep) keep=1 ;;
    --ref) ref=${2:?--ref needs a REF}; shift ;;
    --fresh-root) fresh_root=1 ;;
    --mirror) mirror=${2:?--mirror needs a URL}; shift ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "time-first-run: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
commit=$(git rev-parse --short "$ref")
clone=$(mktemp -d /tmp/nvte-first-run.XXXXXX)
((keep)) || trap 'rm -rf "$clone"' EXIT
# in_place CMD...: runs CMD in the clone, inside the fresh root when there is one (its own mount
# namespace with /proc and this machine's /dev, the host's resolv.conf for the mirror).
checkout=$clone/nvte-doctor inside=""
if ((fresh_root)); then
  [[ $(id -u) == 0 ]] || { echo "time-first-run: --fresh-root needs root (mmdebstrap, chroot)" >&2; exit 2; }
  command -v mmdebstrap >/dev/null || { echo "time-first-run: mmdebstrap is missing (apt-get install mmdebstrap)" >&2; exit 2; }
  start=$SECONDS
  mmdebstrap --quiet --variant=minbase --include=ca-certificates bookworm "$clone/root" "$mirror" >&2
  cp /etc/resolv.conf "$clone/root/etc/resolv.conf"
  echo "time-first-run: fresh Debian 12 root made in $((SECONDS - start)) s (not timed)" >&2
  inside=/root/nvte-doctor checkout=$clone/root$inside
fi
git clone --quiet --no-hardlinks "$PWD" "$checkout"
git -C "$checkout" checkout --quiet "$commit"
cd "$checkout"
in_place() {
  if ((fresh_root)); then
    unshare --mount --fork sh "$clone/enter.sh" "$clone/root" "$inside" "$@"
  else
    "$@"
  fi
}
cat > "$clone/enter.sh" <<'SH'
root=$1 dir=$2
shift 2
# The root bound onto itself first, so that its / is a mount point as a machine's or a
# container's is: `unshare --mount-proc` (PackagingImage runs the image that way) fails in a
# chroot whose / is not one ("cannot change root filesystem propagation").
mount --bind "$root" "$root" && mount -t proc proc "$root/proc" && mount --rbind /dev "$root/dev" && mount --rbind /sys "$root/sys" || exit 125
exec chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root CCACHE_DISABLE=1 sh -c 'cd "$0" && exec "$@"' "$dir" "$@"
SH

# The packages of the command, read from the clone's bootstrap.sh so that the count follows the
# script it times: command 1 installs its first list (--doctor), command 2 the whole list (the
# kubectl check asked where the command runs).
if ((which == 1)); then
  eval "$(sed -n '/^packages=(/,/)/p' scripts/bootstrap.sh)"
else
  mode=all
  eval "$(sed -n '/^packages=(/,/^fi$/p' scripts/bootstrap.sh | sed "s/command -v kubectl/in_place sh -c 'command -v kubectl'/")"
  # README command 2, as written there: the second line of its first sh block.
  readme_command=$(awk '/^```sh$/ { inside = 1; next } inside && /^```/ { exit } inside { if (++n == 2) print }' README.md)
  [[ $readme_command == scripts/bootstrap.sh* ]] || { echo "time-first-run: README.md's command 2 is not a bootstrap.sh line: '$readme_command'" >&2; exit 2; }
fi
missing=0
for p in "${packages[@]}"; do
  in_place dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing=$((missing + 1))
done
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
export CCACHE_DISABLE=1
now() { date +%s.%N; }
# The children's user + system time, from bash's `times` run in this shell: inside $(...) it would
# run in a subshell, which has no children yet (it printed 0 s there).
cpu_of_children() { awk 'NR == 2 { split($1, u, "m"); split($2, s, "m"); printf "%.0f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$1"; }
status=0
t0=$(now)
if ((which == 1)); then
  # README command 1, as written there; the doctor's exit status (0-3) is its verdict, not a failure.
  in_place scripts/bootstrap.sh --doctor > bootstrap.log 2>&1 || { tail -n 30 bootstrap.log; echo "time-first-run: bootstrap.sh failed" >&2; exit 1; }
  t1=$(now)
  in_place build/nvte-doctor > doctor.log 2>&1 || true
else
  # README command 2, run as one line; a failed test is reported after the times (exit 1).
  in_place bash -c "$readme_command" > command2.log 2>&1 || status=$?
  t1=$(now)
fi
t2=$(now)
times >"$clone/times"
cpu_s=$(cpu_of_children "$clone/times")
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
[[ -f build/.ninja_log ]] || { tail -n 30 ./*.log; echo "time-first-run: no build (build/.ninja_log is missing)" >&2; exit 1; }

# ninja's log: start and end (ms since the build started) of each step; the first line is a header.
# Compile steps of the tests are those whose object is under tests/.
read -r steps compile_ms span_ms link_ms test_steps test_ms < <(awk -F'\t' 'NR > 1 {
    d = $2 - $1; if ($2 > end) end = $2
    if ($4 ~ /\.o$/) { n++; c += d; if ($4 ~ /^tests\//) { tn++; tc += d } }
    else if ($4 ~ /(^|\/)nvte-doctor$/) l = d
  } END { print n + 0, c + 0, end + 0, l + 0, tn + 0, tc + 0 }' build/.ninja_log)
total=$(awk -v a="$t0" -v b="$t2" 'BEGIN { printf "%.0f", b - a }')
boot=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
doctor=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.1f", b - a }')
seconds() { awk -v s="$1" 'BEGIN { printf "%.1f", s / 1000 }'; }
mmss() { printf '%d min %02d s' $(($1 / 60)) $(($1 % 60)); }
if ((which == 2)); then
  # ctest's own account: its total ("Total Test time (real) = 402.35 sec"), its counts, and each
  # test's line ("12/2064 Test #5: name ....   Passed    0.02 sec").
  ctest_s=$(awk '/^Total Test time \(real\) =/ { print $(NF - 1) }' command2.log)
  ctest_s=${ctest_s:-0}
  ctest_counts=$(grep -E '^[0-9]+% tests passed' command2.log || echo "ctest did not report (the build failed?)")
  rest=$(awk -v b="$boot" -v s="$span_ms" -v c="$ctest_s" 'BEGIN { printf "%.1f", b - s / 1000 - c }')
else
  rest=$(awk -v b="$boot" -v s="$span_ms" 'BEGIN { printf "%.1f", b - s / 1000 }')
fi

echo "commit $commit, $(nproc) cores, load average before $load_before, after $load_after"
echo "README command $which: ${readme_command:-scripts/bootstrap.sh --doctor && build/nvte-doctor}"
echo "Debian packages bootstrap.sh installed: $missing of ${#packages[@]}"
printf '  %-48s %8.1f s\n' "packages + configure (all but ninja$( ((which == 2)) && echo " and ctest"))" "$rest"
printf '  %-48s %8.1f s  (%d compile steps, %.1f s summed)\n' "build (ninja, -j$(nproc))" "$(seconds "$span_ms")" "$steps" "$(seconds "$compile_ms")"
if ((which == 2)); then
  printf '  %-48s %8s    (%d compile steps, %.1f s summed)\n' "  of it the tests' compile steps (tests/)" "" "$test_steps" "$(seconds "$test_ms")"
fi
printf '  %-48s %8.1f s\n' "  of it the link of nvte-doctor" "$(seconds "$link_ms")"
if ((which == 1)); then
  printf '  %-48s %8.1f s\n' "build/nvte-doctor (the report)" "$doctor"
else
  printf '  %-48s %8.1f s  (%s)\n' "tests (ctest's total)" "$ctest_s" "$ctest_counts"
fi
# (awk 'NR <= N', not head: head's early exit would kill sort by SIGPIPE, and pipefail the script.)
echo "  slowest compile steps:"
awk -F'\t' 'NR > 1 && $4 ~ /\.o$/ { printf "    %6.1f s  %s\n", ($2 - $1) / 1000, $4 }' build/.ninja_log | sort -rn | awk 'NR <= 5'
if ((which == 2)); then
  echo "  slowest tests:"
  awk '/ Test +#[0-9]+: / && $NF == "sec" { for (i = 1; i < NF; i++) if ($i ~ /^#[0-9]+:$/) break
         printf "    %6.1f s  %s\n", $(NF - 1), $(i + 1) }' command2.log | sort -rn | awk 'NR <= 8'
  if ((status)); then
    sed -n '/^The following tests FAILED:/,$p' command2.log | awk 'NR <= 20'
    tail -n 5 command2.log
  fi
fi
((keep)) && echo "clone kept: $checkout"
label=$( ((which == 1)) && echo "first run" || echo "command 2")
echo "$label: $(mmss "$total") wall, ${cpu_s} s CPU, $(nproc) cores, load $load_before -> $load_after, $missing packages installed$( ((fresh_root)) && echo " (fresh root)"), ccache off$( ((which == 2)) && echo ", tests ${ctest_s} s"), commit $commit"
if ((status)); then
  echo "time-first-run: README command 2 failed (exit $status; command2.log$( ((keep)) || echo ", rerun with --keep to read it"))" >&2
  exit 1
fi
