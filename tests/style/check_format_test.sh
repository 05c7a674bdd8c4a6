#!/usr/bin/env bash
# The format check must be able to fail: in a scratch repository with the project's
# .clang-format, a badly formatted line added on a branch fails it, the untouched badly formatted
# line from main does not, and the fixed line passes.
#
#   tests/style/check_format_test.sh REPO_ROOT
set -euo pipefail
root=$(cd "$1" && pwd)
command -v clang-format-14 >/dev/null || command -v clang-format >/dev/null || { echo "clang-format not installed: skipped"; exit 77; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
git init -q -b main .
git config user.email test@example.invalid
git config user.name test
cp "$root/.clang-format" .
printf 'int   old_style( int x ){return x;}\n' >old.cpp
git add . && git commit -qm base
git checkout -qb change
printf 'int   added( int x ){return x;}\n' >new.cpp
git add new.cpp && git commit -qm change
if "$root/tests/style/check_format.sh" "$scratch" >out.txt; then
  echo "FAIL: a badly formatted new line passed"; cat out.txt; exit 1
fi
grep -q 'new.cpp' out.txt || { echo "FAIL: the report does not name new.cpp"; cat out.txt; exit 1; }
if grep -q 'old.cpp' out.txt; then echo "FAIL: an untouched line of main was checked"; exit 1; fi
printf 'int added(int x) { return x; }\n' >new.cpp
"$root/tests/style/check_format.sh" "$scratch" >out.txt || { echo "FAIL: the fixed line failed"; cat out.txt; exit 1; }
echo "format check: fails on a changed line, passes once it is fixed, ignores untouched code"
