#!/usr/bin/env bash
# clang-format (.clang-format) on the C++ lines a change touches: every line added or changed
# since the change's base (tests/style/change_base.sh: the merge base with main), committed or
# not. Renames are followed, so a moved file is checked only where it was edited. Exits 77
# (skipped) where there is no git history, no main branch or no clang-format 14; 1 with the diff
# that would fix it.
#
#   tests/style/check_format.sh REPO_ROOT
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$1" || exit 2
format=$(command -v clang-format-14 || command -v clang-format) || { echo "clang-format not installed: skipped"; exit 77; }
format_diff=$(command -v clang-format-diff-14 || command -v clang-format-diff) || { echo "clang-format-diff not installed: skipped"; exit 77; }
base=$("$here/change_base.sh" 2>&1) || { echo "$base"; exit 77; }
fixes=$(git diff -M --diff-filter=AMR -U0 "$base" -- '*.cpp' '*.hpp' '*.c' '*.h' | "$format_diff" -p1 -binary "$format")
if [[ -n $fixes ]]; then
  printf '%s\n' "$fixes"
  echo "format: the lines above, changed since $(git rev-parse --short "$base"), do not follow .clang-format;"
  echo "        fix them with: git diff -M -U0 $(git rev-parse --short "$base") | $format_diff -p1 -binary $format -i"
  exit 1
fi
echo "format: every C++ line changed since $(git rev-parse --short "$base") follows .clang-format"
