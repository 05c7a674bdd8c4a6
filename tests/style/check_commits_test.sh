#!/usr/bin/env bash
# The commit-subject check must be able to fail: in a scratch repository, a branch with a good
# subject and a merge passes; a subject of 73 characters fails, and so does one without an area;
# the bad subject of main's own history (before the base) is not checked.
#
#   tests/style/check_commits_test.sh REPO_ROOT
set -euo pipefail
root=$(cd "$1" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
git init -q -b main .
git config user.email test@example.invalid
git config user.name test
n=0
commit() { n=$((n + 1)) && echo "$1" >"f$n.txt" && git add "f$n.txt" && git commit -qm "$1"; }
commit "an old subject on main, long before any check existed, and far too long for it"
git checkout -qb change
commit "fix search: one session for all node findings"
git checkout -q main && commit "docs: a change on main meanwhile" && git checkout -q change
git merge -q --no-edit main
check() { "$root/tests/style/check_commits.sh" "$scratch" >out.txt 2>&1; }
check || { echo "FAIL: good subjects and a merge failed"; cat out.txt; exit 1; }
long="rules: $(printf 'x%.0s' {1..65})" # 72 characters pass, 73 do not
commit "$long"
check || { echo "FAIL: a subject of 72 characters failed"; cat out.txt; exit 1; }
commit "${long}y"
if check; then echo "FAIL: a subject of 73 characters passed"; cat out.txt; exit 1; fi
grep -q '73 characters, more than 72' out.txt || { echo "FAIL: the report does not say why"; cat out.txt; exit 1; }
if grep -q 'an old subject' out.txt; then echo "FAIL: main's history was checked"; cat out.txt; exit 1; fi
git reset -q --hard HEAD~1
commit "Fixed the thing"
if check; then echo "FAIL: a subject without an area passed"; cat out.txt; exit 1; fi
grep -q "not 'area: summary': Fixed the thing" out.txt || { echo "FAIL: the report does not name the subject"; cat out.txt; exit 1; }
echo "commit check: fails on a subject over 72 characters or without an area, ignores merges and main"
