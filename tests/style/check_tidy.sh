#!/usr/bin/env bash
# clang-tidy (.clang-tidy) on the C++ files a change touches (tests/style/change_base.sh: since
# the merge base with main, committed or not), with the compile flags of the build's
# compile_commands.json. A changed source file is checked as its own translation unit; a changed
# header through its sibling .cpp or, failing that, the first source that includes it. Findings
# are reported only in the changed files (-line-filter), so a change answers for what it touched,
# not for the headers it happens to include; any finding fails the check.
#
# Exits 77 (skipped) where there is no git history, no main branch, no clang-tidy or no
# compile_commands.json in BUILD_DIR; 1 with the findings; 0 when the changed files are clean.
# JOBS (default: the number of cores) clang-tidy processes run at once.
#
#   tests/style/check_tidy.sh REPO_ROOT BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "$2" 2>/dev/null && pwd) || { echo "no build directory $2: skipped"; exit 77; }
cd "$1" || exit 2
root=$PWD
tidy=$(command -v clang-tidy-14 || command -v clang-tidy) || { echo "clang-tidy not installed: skipped"; exit 77; }
[[ -f $build/compile_commands.json ]] || { echo "no $build/compile_commands.json: skipped"; exit 77; }
base=$("$here/change_base.sh" 2>&1) || { echo "$base"; exit 77; }
mapfile -t changed < <("$here/change_base.sh" --files)

# The translation units of the compile database, as paths relative to the repository.
mapfile -t units < <(python3 - "$build/compile_commands.json" "$root" <<'EOF'
import json, os, sys
root = sys.argv[2]
for entry in json.load(open(sys.argv[1])):
    path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
    if path.startswith(root + "/"):
        print(os.path.relpath(path, root))
EOF
)
declare -A in_db=()
for u in "${units[@]}"; do in_db[$u]=1; done

declare -A todo=()
checked=()
for f in "${changed[@]}"; do
  [[ -f $f ]] || continue
  case $f in
    *.cpp | *.c)
      if [[ -n ${in_db[$f]:-} ]]; then todo[$f]=1; checked+=("$f"); fi ;;
    *.hpp | *.h)
      unit=${f%.*}.cpp
      if [[ -z ${in_db[$unit]:-} ]]; then
        # The include is spelled relative to src/ or tests/ (the include roots), or by name.
        name=${f#src/}
        name=${name#tests/}
        unit=""
        for u in "${units[@]}"; do
          if grep -qsF -e "#include \"$name\"" -e "#include \"$(basename "$f")\"" "$u"; then unit=$u; break; fi
        done
      fi
      if [[ -n $unit ]]; then todo[$unit]=1; checked+=("$f"); fi ;;
  esac
done

short=$(git rev-parse --short "$base")
if ((${#todo[@]} == 0)); then
  echo "tidy: no C++ file of the build changed since $short"
  exit 0
fi
# -line-filter lists the changed files without line ranges: every finding in them counts, none
# elsewhere (clang-tidy matches the names as suffixes of the paths it reports).
filter=$(printf '{"name":"%s"},' "${checked[@]}")
filter="[${filter%,}]"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# -Wno-error: the build's own warnings are the compiler's business (-Werror there); here only the
# checks of .clang-tidy count, and each of them is an error (--warnings-as-errors).
printf '%s\n' "${!todo[@]}" | sort |
  xargs -P "${JOBS:-$(nproc)}" -n 1 "$tidy" -p "$build" --quiet --warnings-as-errors='*' \
    --extra-arg=-Wno-error --extra-arg=-Wno-unknown-warning-option -line-filter="$filter" >"$out" 2>&1
rc=$?
findings=$(grep -cE '^[^ ]+:[0-9]+:[0-9]+: (warning|error):' "$out")
if ((rc != 0 || findings > 0)); then
  grep -vE '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^Error while processing' "$out"
  echo "tidy: $findings finding(s) in the C++ files changed since $short (.clang-tidy; $tidy exit $rc)"
  echo "      reproduce with: $tidy -p $build FILE.cpp"
  exit 1
fi
echo "tidy: ${#checked[@]} changed file(s) since $short, through ${#todo[@]} translation unit(s): clean"
