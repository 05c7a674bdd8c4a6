#!/usr/bin/python3
"""Every command's --help ends with two examples of that command, and offers only the --format
values the command takes.

Usage: help_examples_test.py NVTE_DOCTOR

The commands are read from the help itself (Subcommands: sections, recursively), so a new
command without examples fails here. An example is a line "  nvte-doctor WORDS" under
"Examples:"; it must start with the command's own path (nvte-doctor rules show ...).
"""
import re
import subprocess
import sys

binary = sys.argv[1]
failures = []


def help_of(path):
    run = subprocess.run([binary] + path + ["--help"], capture_output=True, text=True)
    if run.returncode != 0:
        failures.append("%s --help exits %d" % (" ".join(path), run.returncode))
    return run.stdout


def subcommands(text):
    names, section = [], False
    for line in text.splitlines():
        if line.startswith("Subcommands:"):
            section = True
        elif not line.startswith(" "):
            section = False
        elif section and line.strip():
            names.append(line.split()[0])
    return names


def check(path):
    text = help_of(path)
    where = "nvte-doctor " + " ".join(path) if path else "nvte-doctor"
    lines = text.splitlines()
    if "Examples:" not in lines:
        failures.append("%s --help has no Examples:" % where)
    else:
        examples = [l.strip() for l in lines[lines.index("Examples:") + 1:] if l.startswith("  nvte-doctor")]
        if len(examples) < 2:
            failures.append("%s --help has %d examples, not 2" % (where, len(examples)))
        for e in examples:
            if path and not e.startswith(where):
                failures.append("%s --help: example '%s' is another command's" % (where, e))
    offered = re.search(r"--format TEXT:\{([^}]*)\}", text)
    if offered:
        values = offered.group(1).split(",")
        for value in ("text", "json", "prometheus", "nfd"):
            if value in values:
                continue
            run = subprocess.run([binary] + path + ["--format", value], capture_output=True, text=True)
            if run.returncode != 3:
                failures.append("%s --format %s: not offered, yet not refused (exit %d)" % (where, value, run.returncode))
    for name in subcommands(text):
        check(path + [name])
    return text


check([])
for f in failures:
    print("FAIL: " + f)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
