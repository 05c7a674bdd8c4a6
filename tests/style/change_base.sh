#!/usr/bin/env bash
# What "the change" is, for every style check of tests/style (format, clang-tidy, commit
# subjects): everything since the merge base of HEAD with main (origin/main where there is no
# local main), or since NVTE_CHANGE_BASE where it is set (any commit-ish; NVTE_FORMAT_BASE, its
# older name, still works). On main itself the merge base is HEAD, so the change is what is not
# committed yet. One definition, so that the checks never disagree about what changed.
#
#   tests/style/change_base.sh            prints the base commit (full hash) on stdout
#   tests/style/change_base.sh --files    prints the C/C++ files added, modified or renamed
#                                         since the base, committed or not, one per line
#
# Run from inside the repository. Exits 77 (the checks' "skipped") with the reason on stderr where
# there is no git history or no base.
set -uo pipefail
git rev-parse --git-dir >/dev/null 2>&1 || { echo "not a git checkout: skipped" >&2; exit 77; }
base=${NVTE_CHANGE_BASE:-${NVTE_FORMAT_BASE:-}}
if [[ -n $base ]]; then
  base=$(git rev-parse --verify --quiet "$base^{commit}") || { echo "NVTE_CHANGE_BASE is not a commit: skipped" >&2; exit 77; }
else
  for ref in main origin/main; do
    base=$(git merge-base HEAD "$ref" 2>/dev/null) && break
  done
fi
[[ -n $base ]] || { echo "no merge base with main: skipped" >&2; exit 77; }
if [[ ${1:-} == --files ]]; then
  # Renames are followed (-M): a moved file counts as changed, its new name is listed.
  git diff -M --diff-filter=AMR --name-only "$base" -- '*.cpp' '*.hpp' '*.c' '*.h'
else
  echo "$base"
fi
