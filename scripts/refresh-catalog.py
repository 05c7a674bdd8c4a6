#!/usr/bin/env python3
"""Refresh the release lists of the catalog (rules/catalog/*.yaml) from PyPI's JSON API.

Usage:
  scripts/refresh-catalog.py --pypi-json DIR [--catalog rules/catalog] [--check]
  scripts/refresh-catalog.py --fetch DIR [--catalog rules/catalog]   (a maintainer's machine with network)

DIR holds one saved `https://pypi.org/pypi/<name>/json` document per package, named
`<name>.json` (the package names of the catalog's `- name:` lines). For each package with such a
file, every final release (digits and dots only, not every file yanked) newer than the newest
release listed is appended to the package's `releases:` with `source:` its PyPI page
(https://pypi.org/project/<name>/<version>/) and the other fields (cuda, python) of the newest
entry before it. Packages whose entries carry per-release build facts (flash-attn's prebuilt
wheels, torch ranges) are not refreshed: the script says so and leaves them to a person. Older
releases that are missing are not added: the catalog lists what the fix search may propose,
each entry with the page it was checked against.

The result depends only on the catalog and DIR: releases are sorted by version, the files are
rewritten only where entries are added, and a second run adds nothing. --check changes nothing
and exits 1 when a refresh would add entries (CI's "is the catalog current" question).
--fetch downloads the JSON documents into DIR first (urllib; the only use of the network).
"""
import argparse
import json
import pathlib
import re
import sys
import urllib.request

NAME = re.compile(r"^  - name: (\S+)\s*$")
RELEASE = re.compile(r"^(      - \{)version: ([^,}]+)(.*?)(, )?source: \"[^\"]*\"\}\s*$")
FINAL = re.compile(r"^\d+(\.\d+)*$")
COPYABLE = re.compile(r"^(, (cuda: \[[0-9, ]*\]|python: \"[^\"]*\"))*$")


def key(version):
    return tuple(int(part) for part in version.split("."))


def published(document):
    """Final releases of a PyPI JSON document that have at least one file not yanked."""
    out = []
    for version, files in document.get("releases", {}).items():
        if FINAL.match(version) and files and any(not f.get("yanked", False) for f in files):
            out.append(version)
    return sorted(out, key=key)


def packages(lines):
    """(name, index of its last release line, that line's match) per package block."""
    blocks, name, last = [], None, None
    for i, line in enumerate(lines):
        m = NAME.match(line)
        if m:
            if name and last:
                blocks.append((name, last[0], last[1]))
            name, last = m.group(1), None
            continue
        r = RELEASE.match(line)
        if r and name:
            last = (i, r)
    if name and last:
        blocks.append((name, last[0], last[1]))
    return blocks


def refresh_file(path, pypi_dir, report):
    lines = path.read_text().split("\n")
    insertions = []
    for name, index, match in packages(lines):
        document = pypi_dir / f"{name}.json"
        if not document.exists():
            continue
        extra = match.group(3)
        if not COPYABLE.match(extra):
            report.append(f"{path.name}: {name}: entries carry per-release build facts; not refreshed (edit by hand)")
            continue
        block_versions = []
        for l in lines[: index + 1][::-1]:
            if NAME.match(l):
                break
            r = RELEASE.match(l)
            if r:
                block_versions.append(r.group(2))
        newest = max((v for v in block_versions if FINAL.match(v)), key=key)
        new = [v for v in published(json.loads(document.read_text())) if key(v) > key(newest)]
        for version in new:
            report.append(f"{path.name}: {name}: + {version}")
        added = [f'{match.group(1)}version: {v}{extra}, source: "https://pypi.org/project/{name}/{v}/"}}' for v in new]
        if added:
            insertions.append((index + 1, added))
    for at, added in sorted(insertions, reverse=True):
        lines[at:at] = added
    return "\n".join(lines), bool(insertions)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--pypi-json", type=pathlib.Path, help="directory of saved PyPI JSON documents")
    source.add_argument("--fetch", type=pathlib.Path, help="download the documents into this directory first")
    parser.add_argument("--catalog", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent.parent / "rules" / "catalog")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when entries would be added")
    args = parser.parse_args()
    files = sorted(args.catalog.glob("*.yaml"))
    if not files:
        print(f"refresh-catalog: no catalog files in {args.catalog}", file=sys.stderr)
        return 3
    pypi_dir = args.pypi_json or args.fetch
    if args.fetch:
        pypi_dir.mkdir(parents=True, exist_ok=True)
        for path in files:
            for name, _, _ in packages(path.read_text().split("\n")):
                with urllib.request.urlopen(f"https://pypi.org/pypi/{name}/json", timeout=60) as response:
                    (pypi_dir / f"{name}.json").write_bytes(response.read())
    if not pypi_dir.is_dir():
        print(f"refresh-catalog: {pypi_dir}: not a directory", file=sys.stderr)
        return 3
    report, changed = [], False
    for path in files:
        try:
            text, added = refresh_file(path, pypi_dir, report)
        except (ValueError, json.JSONDecodeError) as error:
            print(f"refresh-catalog: {path}: {error}", file=sys.stderr)
            return 3
        if added:
            changed = True
            if not args.check:
                tmp = path.with_suffix(".yaml.tmp")
                tmp.write_text(text)
                tmp.replace(path)
    for line in report:
        print(line)
    if not changed:
        print("refresh-catalog: the catalog is current")
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
