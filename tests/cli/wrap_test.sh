#!/bin/bash
# Text output is wrapped at the terminal's width only on a terminal: `script` gives the doctor a
# pseudo-terminal, COLUMNS its width. Through a pipe, with -o, or as JSON nothing is wrapped.
# Usage: wrap_test.sh NVTE_DOCTOR SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
command -v script >/dev/null || { echo "script (util-linux) not installed: skipped"; exit 77; }
args="check --no-color --facts $src/tests/fixtures/snapshots/a100-node.json --rules $src/rules -v"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
longest() { tr -d '\r' | awk '{ n = length($0); if (n > m) m = n } END { print m + 0 }'; }

piped=$(COLUMNS=60 "$bin" $args 2>/dev/null | longest)
((piped > 60)) || fail "the piped text has no line over 60 columns ($piped): the test proves nothing"
tty_text=$(COLUMNS=60 script -qec "$bin $args 2>/dev/null" /dev/null | tr -d '\r')
tty=$(longest <<< "$tty_text")
# Only a line with nothing to break at (a long path alone on its line) may stay longer.
over=$(awk 'length($0) > 60 { sub(/^ +/, ""); if (index($0, " ")) print }' <<< "$tty_text")
[[ -z "$over" ]] || fail "on a 60-column terminal these lines are longer than 60 columns: $over"
((tty < piped)) || fail "on a 60-column terminal nothing was wrapped (longest $tty, piped $piped)"
wide=$(COLUMNS=200 script -qec "$bin $args 2>/dev/null" /dev/null | longest)
((wide == piped)) || fail "on a 200-column terminal the longest line is $wide columns, piped $piped"
json=$(COLUMNS=60 script -qec "$bin $args --format json 2>/dev/null" /dev/null | longest)
((json > 60)) || fail "JSON on a terminal was wrapped (longest line $json)"
out=$(mktemp); trap 'rm -f "$out"' EXIT
COLUMNS=60 script -qec "$bin $args -o $out 2>/dev/null" /dev/null >/dev/null
(( $(longest < "$out") > 60 )) || fail "-o FILE on a terminal was wrapped"
echo "piped $piped, tty(60) $tty, tty(200) $wide, json $json columns"
((failures == 0))
