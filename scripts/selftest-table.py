#!/usr/bin/env python3
"""Renders `nvte-doctor selftest --format json` outputs (files, or the step logs that
scripts/gpu-validate.sh writes) as one Markdown table of the cuDNN checks, for docs/records/validation.md.
Usage: scripts/selftest-table.py FILE..."""
import json
import sys


def load(path):
    text = open(path, encoding="utf-8").read()
    return json.loads(text[text.index("{"):text.rindex("}") + 1])


def main(paths):
    print("| check | workload | status | max abs err | max rel err | tolerance | plan s | execute ms |")
    print("|---|---|---|---|---|---|---|---|")
    counts = {}
    for path in paths:
        for check in load(path)["selftest"]["checks"]:
            if not check["check"].startswith("cudnn_sdpa"):
                continue
            r = check.get("result", {})
            status = check["status"]
            counts[status] = counts.get(status, 0) + 1
            err = r.get("error", "")
            print(f"| {check['check']} | {check['label']} | {status}{': ' + err[:120] if err else ''} "
                  f"| {r.get('max_abs_err', float('nan')):.4g} | {r.get('max_rel_err', float('nan')):.4g} "
                  f"| {r.get('tolerance', '')} | {r.get('plan_seconds', float('nan')):.2f} | {r.get('execute_ms', float('nan')):.3f} |")
    print()
    print("Totals: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))


if __name__ == "__main__":
    main(sys.argv[1:])
