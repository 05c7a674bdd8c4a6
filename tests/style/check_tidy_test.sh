#!/usr/bin/env bash
# The clang-tidy check must be able to fail: in a scratch repository with the project's
# .clang-tidy and a compile_commands.json, a finding planted on a branch fails it — in a changed
# source file, and in a changed header reached through the source that includes it — while the
# findings main already had, in a file the branch did not touch and in an unchanged header the
# changed file includes, do not count; the fixed branch passes.
#
#   tests/style/check_tidy_test.sh REPO_ROOT
set -euo pipefail
root=$(cd "$1" && pwd)
command -v clang-tidy-14 >/dev/null || command -v clang-tidy >/dev/null || { echo "clang-tidy not installed: skipped"; exit 77; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
git init -q -b main .
git config user.email test@example.invalid
git config user.name test
cp "$root/.clang-tidy" .
mkdir -p src build
# main: an old finding (0 as a null pointer) in a file and in a header nobody will touch.
printf 'int* old_null() { return 0; }\n' >src/old.cpp
printf '#pragma once\ninline int* header_null() { return 0; }\n' >src/old.hpp
printf '#pragma once\nint added();\n' >src/added.hpp
printf '#include "old.hpp"\n#include "added.hpp"\nint added() { return 1; }\n' >src/added.cpp
printf '#include "added.hpp"\nint user() { return added(); }\n' >src/user.cpp
printf '[\n' >build/compile_commands.json
for f in old added user; do
  printf '{"directory": "%s", "command": "c++ -std=c++20 -c src/%s.cpp", "file": "src/%s.cpp"},\n' "$scratch" "$f" "$f" >>build/compile_commands.json
done
sed -i '$ s/,$//' build/compile_commands.json && printf ']\n' >>build/compile_commands.json
printf 'build/\n' >.gitignore
git add . && git commit -qm base
check() { "$root/tests/style/check_tidy.sh" "$scratch" "$scratch/build" >out.txt 2>&1; }
git checkout -qb change
check || { echo "FAIL: a branch without changes failed"; cat out.txt; exit 1; }

# A finding in a changed source file (a null pointer written as 0) fails the check.
printf '#include "old.hpp"\n#include "added.hpp"\nint* added_null() { return 0; }\nint added() { return 1; }\n' >src/added.cpp
git commit -qam "src: a finding in a source file"
if check; then echo "FAIL: a finding in a changed source file passed"; cat out.txt; exit 1; fi
grep -q 'src/added.cpp:3:.*modernize-use-nullptr' out.txt || { echo "FAIL: the report does not name added.cpp:3"; cat out.txt; exit 1; }
if grep -qE 'old\.(c|h)pp:' out.txt; then echo "FAIL: a finding outside the change was reported"; cat out.txt; exit 1; fi

# Fixed, the branch passes although added.cpp includes old.hpp and its finding.
printf '#include "old.hpp"\n#include "added.hpp"\nint* added_null() { return nullptr; }\nint added() { return 1; }\n' >src/added.cpp
git commit -qam "src: fixed"
check || { echo "FAIL: the fixed branch failed"; cat out.txt; exit 1; }

# A finding in a changed header with no sibling source is found through a source including it.
printf '#pragma once\nint added();\ninline int* header_added() { return 0; }\n' >src/added.hpp
git mv src/added.cpp src/added_impl.cpp
sed -i 's|src/added.cpp|src/added_impl.cpp|g' build/compile_commands.json
git commit -qam "src: a finding in a header"
if check; then echo "FAIL: a finding in a changed header passed"; cat out.txt; exit 1; fi
grep -q 'src/added.hpp:3:.*modernize-use-nullptr' out.txt || { echo "FAIL: the report does not name added.hpp:3"; cat out.txt; exit 1; }
echo "tidy check: fails on a finding in a changed source or header, ignores code the change did not touch"
