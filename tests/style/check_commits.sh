#!/usr/bin/env bash
# Commit subjects of the change (tests/style/change_base.sh: every commit since the merge base
# with main; merges are git's own wording and are left out): each is `area: summary`, at most 72
# characters (CONTRIBUTING.md). The area is a directory or topic: it starts with a letter, digit
# or `{`, has no `:` and at most 32 characters; the summary starts right after ": ".
# Exits 77 (skipped) where there is no git history or no main branch; 1 naming each bad subject.
#
#   tests/style/check_commits.sh REPO_ROOT
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$1" || exit 2
base=$("$here/change_base.sh" 2>&1) || { echo "$base"; exit 77; }
short=$(git rev-parse --short "$base")
bad=0
count=0
while IFS=' ' read -r hash subject; do
  count=$((count + 1))
  why=""
  if ((${#subject} > 72)); then
    why="${#subject} characters, more than 72"
  elif ! [[ $subject =~ ^[A-Za-z0-9{][^:]{0,31}:\ [^[:space:]] ]]; then
    why="not 'area: summary'"
  fi
  if [[ -n $why ]]; then
    echo "$hash: $why: $subject"
    bad=$((bad + 1))
  fi
done < <(git log --no-merges --format='%h %s' "$base..HEAD")
if ((bad > 0)); then
  echo "commits: $bad of $count subject(s) since $short do not follow 'area: summary' (at most 72 characters);"
  echo "         reword them with: git rebase -i $short"
  exit 1
fi
echo "commits: $count subject(s) since $short follow 'area: summary', at most 72 characters"
