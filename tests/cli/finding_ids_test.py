#!/usr/bin/env python3
"""Every finding id the doctor writes in C++ has a home `nvte-doctor rules show ID` answers
(a rule in rules/**.yaml, or rules/builtin_findings.cpp), with a title, a message and a
reference. The ids are read from the sources (`f.id = "..."`, `..._finding_id = "..."`), so a
new one without a home fails here.

    finding_ids_test.py NVTE_DOCTOR SOURCE_DIR"""
import pathlib
import re
import subprocess
import sys

doctor, root = sys.argv[1], pathlib.Path(sys.argv[2])
pattern = re.compile(r'(?:\.id\s*=\s*|_finding_id\s*=\s*)"([a-z][a-z0-9]*(?:-[a-z0-9]+)+)"')
ids = {}
for path in sorted((root / "src").rglob("*.[ch]pp")):
    for match in pattern.finditer(path.read_text()):
        ids.setdefault(match.group(1), str(path.relative_to(root)))
problems = []
if len(ids) < 5:
    problems.append("found only %d finding ids in src/ (%s): the pattern no longer matches the sources" % (len(ids), sorted(ids)))


def show(finding_id):
    return subprocess.run([doctor, "rules", "show", finding_id, "--rules", str(root / "rules")], capture_output=True, text=True,
                          timeout=60)


for finding_id, where in sorted(ids.items()):
    ran = show(finding_id)
    if ran.returncode != 0:
        problems.append("%s (written in %s): `rules show` exit %d: %s" % (finding_id, where, ran.returncode, ran.stderr.strip()))
        continue
    for field in ("title:", "message:", "reference:"):
        if "\n" + field not in "\n" + ran.stdout:
            problems.append("%s (written in %s): `rules show` has no %s line" % (finding_id, where, field.rstrip(":")))
# The check itself can fail: an unknown id is not answered.
if show("no-such-finding-id").returncode != 3:
    problems.append("`rules show no-such-finding-id` did not exit 3")
for p in problems:
    print("FAIL", p)
print("%d finding ids written in C++, %d problems" % (len(ids), len(problems)))
sys.exit(1 if problems else 0)
