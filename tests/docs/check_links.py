#!/usr/bin/env python3
"""Checks the project's Markdown: every relative link points at a file that exists, and the
README opens with the two set-up commands (the second is the test command .ci/run runs).

Usage: check_links.py REPO_ROOT. Exit 1 with one line per problem.
"""
import pathlib
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
SETUP = ["scripts/bootstrap.sh --doctor && build/nvte-doctor",
         "scripts/bootstrap.sh && ctest --test-dir build --output-on-failure -j2"]


def markdown_files(root):
    files = [root / name for name in ("README.md", "ARCHITECTURE.md", "CONTRIBUTING.md", "CHANGELOG.md")]
    for folder in ("docs", "rules", "tests", "tools"):
        files += sorted((root / folder).rglob("*.md"))
    # tests/docs/bad-tree is this checker's own failing example
    return [f for f in files if f.is_file() and "bad-tree" not in f.relative_to(root).parts]


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    problems = []
    for path in markdown_files(root):
        text = path.read_text(encoding="utf-8")
        # links in code blocks are examples; blanked line for line, so line numbers stay true
        text = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
        for match in LINK.finditer(text):
            target = match.group(1)
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            file_part = target.split("#", 1)[0]
            if not (path.parent / file_part).exists():
                line = text.count("\n", 0, match.start()) + 1
                problems.append(f"{path.relative_to(root)}:{line}: link to {target}: no such file")
    readme = (root / "README.md").read_text(encoding="utf-8")
    first = re.search(r"```sh\n(.*?)```", readme, re.S)
    if not first or first.group(1).splitlines() != SETUP:
        problems.append("README.md: the first code block must be the two set-up commands:\n  " + "\n  ".join(SETUP))
    ci = (root / ".ci" / "run").read_text(encoding="utf-8")
    if SETUP[1] not in ci:
        problems.append(".ci/run: does not run the README's test command")
    for problem in problems:
        print(problem)
    if not problems:
        print("links and set-up commands: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
