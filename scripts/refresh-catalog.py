#!/usr/bin/env python3
"""Refresh the release lists of the catalog (rules/catalog/*.yaml) from PyPI's JSON API.

Usage:
  scripts/refresh-catalog.py --pypi-json DIR [--catalog rules/catalog] [--check]
  scripts/refresh-catalog.py --fetch DIR [--catalog rules/catalog]   (a maintainer's machine with network)
  scripts/refresh-catalog.py --wheel-urls FILE [--catalog rules/catalog] [--check]

DIR holds one saved `https://pypi.org/pypi/<name>/json` document per package, named
`<name>.json` (the package names of the catalog's `- name:` lines). For each package with such a
file, every final release (digits and dots only, not every file yanked) newer than the newest
release listed is appended to the package's `releases:` with `source:` its PyPI page
(https://pypi.org/project/<name>/<version>/) and the other fields (cuda, python) of the newest
entry before it. Packages whose entries carry per-release build facts (flash-attn's prebuilt
wheels, torch ranges) are not refreshed: the script says so and leaves them to a person. Older
releases that are missing are not added: the catalog lists what the fix search may propose,
each entry with the page it was checked against.

--wheel-urls FILE takes the files themselves instead: one https://files.pythonhosted.org/packages/
URL of a wheel per line (`#` starts a comment), as public manifests record them with their
SHA-256. The wheel's file name (PEP 427) gives the distribution and the release. A release the
catalog does not list is inserted in version order, at any position (a person named it), with
the other fields of the entry before it and the wheel's URL as `source:`; a listed release whose
source is not on pypi.org or files.pythonhosted.org gets the wheel's URL instead, PyPI's own
file being the stronger citation. Where a release has several files, a manylinux one is cited.
Distributions the catalog does not hold are reported and skipped. docs/records/ keeps the
lists each refresh used, so the refresh can be replayed.

The result depends only on the catalog and DIR (or FILE): releases are sorted by version, the files are
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
COPYABLE = re.compile(r"^(, (cuda: \[[0-9, ]*\]|python: \"[^\"]*\"|glibc: [0-9.]+|requires: \[[^\]]*\]))*$")
PACKAGE_GLIBC = re.compile(r"^    glibc: ([0-9.]+)\s*$")
# The glibc a manylinux tag promises (PEP 600 and its legacy aliases).
LEGACY_TAGS = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}


def tag_glibc(platform):
    """The lowest glibc of a wheel's platform tags (manylinux_2_27_x86_64.manylinux_2_28_x86_64), or None."""
    found = []
    for tag in platform.split("."):
        m = re.match(r"^manylinux_(\d+)_(\d+)_", tag)
        if m:
            found.append((int(m.group(1)), int(m.group(2))))
        for legacy, glibc in LEGACY_TAGS.items():
            if tag.startswith(legacy + "_"):
                found.append(tuple(int(x) for x in glibc.split(".")))
    if not found:
        return None
    major, minor = min(found)
    return f"{major}.{minor}"


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


PYPI_FILES = "https://files.pythonhosted.org/packages/"
WHEEL = re.compile(r"^([A-Za-z0-9_.]+)-([0-9][0-9A-Za-z.!+]*)(-\d[^-]*)?-[^-]+-[^-]+-([^-]+)\.whl$")
ON_PYPI = re.compile(r"^https://(pypi\.org/|files\.pythonhosted\.org/)")


def normalize(name):
    """PEP 503: lowercase, runs of -_. become '-'."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_wheel_urls(path):
    """{(normalized distribution, version): url} from a list of PyPI wheel URLs; ValueError on a bad line."""
    wheels = {}
    for number, raw in enumerate(path.read_text().split("\n"), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if not line.startswith(PYPI_FILES):
            raise ValueError(f"line {number}: not a {PYPI_FILES} URL: {line}")
        m = WHEEL.match(line.rsplit("/", 1)[1])
        if not m:
            raise ValueError(f"line {number}: not a wheel file name (PEP 427): {line}")
        version = m.group(2)
        if not FINAL.match(version):
            raise ValueError(f"line {number}: {version} is not a final release")
        key_ = (normalize(m.group(1)), version)
        # Several files of one release: cite a manylinux one, the kind pip installs on the nodes.
        if key_ not in wheels or ("manylinux" in m.group(4) and "manylinux" not in wheels[key_]):
            wheels[key_] = line
    return wheels


def wheel_refresh_file(path, wheels, used, report):
    """Insert the named releases a package lacks and cite PyPI's file where a listed one cites another page."""
    lines = path.read_text().split("\n")
    changed = False
    name, block = None, []  # block: (line index, match) of the current package's release lines

    def apply(name, block):
        nonlocal changed
        if not name or not block:
            return []
        inserts = []
        listed = {m.group(2): (i, m) for i, m in block}
        for (dist, version), url in sorted(wheels.items(), key=lambda kv: key(kv[0][1])):
            if dist != normalize(name):
                continue
            used.add((dist, version))
            if version in listed:
                i, m = listed[version]
                if ON_PYPI.match(re.search(r'source: "([^"]*)"', lines[i]).group(1)):
                    continue
                lines[i] = f'{m.group(1)}version: {version}{m.group(3)}, source: "{url}"}}'
                report.append(f"{path.name}: {name}: {version} now cites {url}")
                changed = True
                continue
            before = [(i, m) for i, m in block if FINAL.match(m.group(2)) and key(m.group(2)) < key(version)]
            i, m = before[-1] if before else block[0]
            extra = m.group(3)
            if not COPYABLE.match(extra):
                report.append(f"{path.name}: {name}: entries carry per-release build facts; {version} not added (edit by hand)")
                continue
            # The file's own manylinux tag says which glibc it needs: written on the entry where it
            # differs from the package's default (packages that declare one).
            glibc = tag_glibc(WHEEL.match(url.rsplit("/", 1)[1]).group(4))
            if package_glibc.get(name) and glibc:
                extra = re.sub(r", glibc: [0-9.]+", "", extra)
                if glibc != package_glibc[name]:
                    extra += f", glibc: {glibc}"
            at = i + 1 if before else i
            inserts.append((at, f'{m.group(1)}version: {version}{extra}, source: "{url}"}}'))
            report.append(f"{path.name}: {name}: + {version}")
        return inserts

    pending = []
    package_glibc = {}  # the package-level glibc: of each package that declares one
    for i, line in enumerate(lines):
        m = NAME.match(line)
        if m:
            pending += apply(name, block)
            name, block = m.group(1), []
            continue
        g = PACKAGE_GLIBC.match(line)
        if g and name:
            package_glibc[name] = g.group(1)
        r = RELEASE.match(line)
        if r and name:
            block.append((i, r))
    pending += apply(name, block)
    # Insert from the bottom so the indices above stay valid; of several entries for one slot the
    # newest goes in first, so the older ones land before it and the block stays in version order.
    for _, (at, text) in sorted(enumerate(pending), key=lambda p: (p[1][0], p[0]), reverse=True):
        lines[at:at] = [text]
    if pending:
        changed = True
    return "\n".join(lines), changed


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
    source.add_argument("--wheel-urls", type=pathlib.Path, help="file listing PyPI wheel URLs, one a line")
    parser.add_argument("--catalog", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent.parent / "rules" / "catalog")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when entries would be added")
    args = parser.parse_args()
    files = sorted(args.catalog.glob("*.yaml"))
    if not files:
        print(f"refresh-catalog: no catalog files in {args.catalog}", file=sys.stderr)
        return 3
    report, updates = [], []
    if args.wheel_urls:
        try:
            wheels = read_wheel_urls(args.wheel_urls)
        except (OSError, ValueError) as error:
            print(f"refresh-catalog: {args.wheel_urls}: {error}", file=sys.stderr)
            return 3
        used = set()
        for path in files:
            text, changed = wheel_refresh_file(path, wheels, used, report)
            if changed:
                updates.append((path, text))
        for dist, version in sorted(set(wheels) - used):
            report.append(f"{args.wheel_urls.name}: {dist} {version}: no such package in the catalog; skipped")
    else:
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
        for path in files:
            try:
                text, added = refresh_file(path, pypi_dir, report)
            except (ValueError, json.JSONDecodeError) as error:
                print(f"refresh-catalog: {path}: {error}", file=sys.stderr)
                return 3
            if added:
                updates.append((path, text))
    # Every file is read and checked before any is written: a bad input changes nothing.
    if not args.check:
        for path, text in updates:
            tmp = path.with_suffix(".yaml.tmp")
            tmp.write_text(text)
            tmp.replace(path)
    for line in report:
        print(line)
    if not updates:
        print("refresh-catalog: the catalog is current")
    return 1 if (args.check and updates) else 0


if __name__ == "__main__":
    sys.exit(main())
