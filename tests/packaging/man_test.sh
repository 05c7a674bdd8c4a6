#!/bin/bash
# Man pages: every man/*.scd builds with scdoc (and the build produced a page for each one), and
# every subcommand and option that `nvte-doctor [SUBCOMMAND...] --help` lists (CLI11's Options
# and Subcommands sections, walked recursively) is documented in nvte-doctor(1).
# Usage: man_test.sh BINARY SOURCE_DIR BUILD_MAN_DIR. Exit 77 (skipped) without scdoc.
set -uo pipefail
binary=$1 source_dir=$2 build_man=$3
command -v scdoc >/dev/null || { echo "scdoc not installed: skipped"; exit 77; }

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

for scd in "$source_dir"/man/*.scd; do
  page=$(basename "$scd" .scd)
  if ! out=$(scdoc < "$scd" 2>&1 >/dev/null); then fail "scdoc $scd: $out"; continue; fi
  [[ -s "$build_man/$page.gz" ]] || fail "$page.gz was not built (add $page.scd to man/CMakeLists.txt)"
done

man1="$source_dir/man/nvte-doctor.1.scd"
# A name counts as documented where it stands alone: "--set" must not match inside "--workload-set".
documented() {
  grep -qE -- "(^|[^A-Za-z0-9_-])$(sed 's/[.[\*^$]/\\&/g' <<< "$1")([^A-Za-z0-9_-]|$)" "$man1"
}

# walk PATH...: check the subcommands and options of `binary PATH... --help`, then recurse.
checked=0
walk() {
  local help line section="" head names name sub
  local -a subs=()
  help=$("$binary" "$@" --help 2>&1) || { fail "'nvte-doctor $* --help' failed: $help"; return; }
  while IFS= read -r line; do
    case "$line" in
      Options:*) section=opt; continue ;;
      Subcommands:*) section=sub; continue ;;
      Positionals:*) section=pos; continue ;;
      "" | [^\ ]*) section=""; continue ;;
    esac
    line="${line#"${line%%[! ]*}"}"
    head="${line%%  *}"
    names="${head%% *}"
    case "$section" in
      opt)
        [[ "$names" == -* ]] || continue
        IFS=, read -ra opts <<< "$names"
        for name in "${opts[@]}"; do
          [[ "$name" == -h || "$name" == --help ]] && continue
          checked=$((checked + 1))
          documented "$name" || fail "option $name of 'nvte-doctor $*' is not in man/nvte-doctor.1.scd"
        done ;;
      sub) subs+=("$names") ;;
    esac
  done <<< "$help"
  for sub in "${subs[@]}"; do
    checked=$((checked + 1))
    documented "$sub" || fail "subcommand '$* $sub' is not in man/nvte-doctor.1.scd"
    # Nested commands are written out in full ("rules show").
    if (($#)); then documented "$* $sub" || fail "subcommand '$* $sub' is not in man/nvte-doctor.1.scd"; fi
    walk "$@" "$sub"
  done
}
walk
echo "checked $checked subcommands and options against man/nvte-doctor.1.scd"
((checked >= 20)) || fail "only $checked names parsed from --help: has CLI11's help format changed?"
((failures == 0))
