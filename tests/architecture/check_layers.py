#!/usr/bin/env python3
"""Checks src/ against the layer arrows written down in ARCHITECTURE.md.

Fails (exit 1, one line per problem) when
  - a file includes a project header from a directory its own directory may not use,
  - a directory is missing from the arrows (a new library must be placed on the map),
  - the arrows themselves, or the includes between files, form a cycle,
  - a source file is longer than --max-lines (1,000).
The arrows are the ```layers block of ARCHITECTURE.md: "dir -> dep dep ...".
"""
import argparse
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCES = {".cpp", ".hpp", ".h", ".c", ".cc"}


def read_arrows(architecture):
    text = architecture.read_text(encoding="utf-8")
    block = re.search(r"^```layers\n(.*?)^```", text, re.S | re.M)
    if not block:
        raise SystemExit(f"{architecture}: no ```layers block")
    arrows = {}
    for number, line in enumerate(block.group(1).splitlines(), 1):
        if not line.strip():
            continue
        name, _, deps = line.partition("->")
        arrows[name.strip()] = set(deps.split())
    return arrows


def find_cycle(graph):
    """A cycle in graph (node -> iterable of nodes) as a list of nodes, or None."""
    state = {}
    stack = []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--src", required=True, type=pathlib.Path)
    parser.add_argument("--architecture", required=True, type=pathlib.Path)
    parser.add_argument("--max-lines", type=int, default=1000)
    args = parser.parse_args()

    arrows = read_arrows(args.architecture)
    problems = []
    for name, deps in sorted(arrows.items()):
        for dep in sorted(deps - set(arrows)):
            problems.append(f"{args.architecture}: {name} -> {dep}: {dep} is not a layer")
    cycle = find_cycle(arrows)
    if cycle:
        problems.append(f"{args.architecture}: the arrows form a cycle: {' -> '.join(cycle)}")

    files = sorted(p for p in args.src.rglob("*") if p.suffix in SOURCES and p.is_file())
    includes = {}
    for path in files:
        rel = path.relative_to(args.src)
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if lines > args.max_lines:
            problems.append(f"{args.src.name}/{rel}: {lines} lines, more than {args.max_lines}: split it along what it does")
        if len(rel.parts) < 2:
            continue
        layer = rel.parts[0]
        if layer not in arrows:
            problems.append(f"{args.src.name}/{rel}: directory {layer}/ is not in the layers of {args.architecture.name}")
            continue
        includes[str(rel)] = set()
        for number, target in ((text.count("\n", 0, m.start()) + 1, m.group(1)) for m in INCLUDE.finditer(text)):
            target_layer = target.split("/")[0]
            if "/" not in target or not (args.src / target).exists():
                continue  # a header of a library outside src/, or generated
            includes[str(rel)].add(target)
            if target_layer != layer and target_layer not in arrows[layer]:
                problems.append(f"{args.src.name}/{rel}:{number}: includes \"{target}\", but {layer} may use only "
                                f"{' '.join(sorted(arrows[layer])) or 'nothing'}")
    cycle = find_cycle(includes)
    if cycle:
        problems.append("include cycle: " + " -> ".join(cycle))

    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"{len(files)} files in {len(arrows)} layers: every include follows the arrows, no cycle, none over {args.max_lines} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
