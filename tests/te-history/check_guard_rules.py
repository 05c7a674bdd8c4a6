#!/usr/bin/env python3
"""Checks that the list of TE's guards (tools/te-history/guards.json) and the known-bad rules
cannot drift apart: every guard whose verdict is failure-fixing names a rule that the rules
loader finds (through `nvte-doctor rules show`), and that rule

- is an error (a workload that matches it is one whose run fails),
- fires only before the guard: its condition reads `te.version < R`, with R the newest release
  among the guards that name the rule,
- names the guard's release (in its condition or message) and cites the guard's commit
  (`.../commit/<full hash>`) among its references;

and every rule tagged te-history is named by at least one failure-fixing guard.

Usage: check_guard_rules.py NVTE_DOCTOR GUARDS_JSON RULES_DIR. Exit 1 with one line per problem.
"""
import json
import re
import subprocess
import sys


def version_key(text):
    parts = [int(x) for x in re.findall(r"\d+", text)[:3]]
    return tuple(parts + [0] * (3 - len(parts)))


def short_release(release):
    """2.17.0 -> 2.17, 2.14.1 -> 2.14.1, 2.20.0.dev0 -> 2.20"""
    major, minor, patch = version_key(release)
    return f"{major}.{minor}" if patch == 0 else f"{major}.{minor}.{patch}"


def show(doctor, rules, rule_id):
    r = subprocess.run([doctor, "rules", "show", rule_id, "--rules", rules], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    rule = {"header": r.stdout.splitlines()[0] if r.stdout else "", "when": "", "message": "", "references": []}
    for line in r.stdout.splitlines():
        for field in ("when", "message"):
            if line.startswith(field + ":"):
                rule[field] = line.split(":", 1)[1].strip()
        if line.startswith("reference:"):
            rule["references"].append(line.split(":", 1)[1].strip())
    return rule


def history_rules(doctor, rules):
    r = subprocess.run([doctor, "rules", "list", "--rules", rules], capture_output=True, text=True)
    return sorted(set(re.findall(r"\bte-history-[a-z0-9-]+", r.stdout)))


def main():
    doctor, guards_path, rules = sys.argv[1:4]
    guards = json.load(open(guards_path))["guards"]
    problems = []
    by_rule = {}
    for g in guards:
        if g.get("verdict") != "failure-fixing":
            continue
        if not g.get("rule"):
            problems.append(f"{g['id']}: failure-fixing guard ({g['introduced']['release']}) names no rule")
            continue
        by_rule.setdefault(g["rule"], []).append(g)
    for rule_id, named in sorted(by_rule.items()):
        rule = show(doctor, rules, rule_id)
        if rule is None:
            problems.append(f"{rule_id}: no such rule in {rules} (named by {', '.join(g['id'] for g in named)})")
            continue
        if "(error," not in rule["header"]:
            problems.append(f"{rule_id}: not an error rule: {rule['header']}")
        newest = max((g["introduced"]["release"] for g in named), key=version_key)
        bounds = re.findall(r"te\.version < ([\d.]+)", rule["when"])
        if not bounds or version_key(bounds[0]) != version_key(newest):
            problems.append(f"{rule_id}: condition should read te.version < {short_release(newest)} "
                            f"(its newest guard's release), reads {bounds or 'no te.version bound'}")
        for g in named:
            release = short_release(g["introduced"]["release"])
            if not re.search(r"(?<![\d.])" + re.escape(release) + r"(?![\d])", rule["when"] + " " + rule["message"]):
                problems.append(f"{rule_id}: does not name TE {release}, the release of guard {g['id']}")
            sha = (g.get("commit") or {}).get("sha", "")
            if not any(ref.endswith("/commit/" + sha) for ref in rule["references"]):
                problems.append(f"{rule_id}: no reference to commit {sha[:9]} of guard {g['id']}")
    for rule_id in history_rules(doctor, rules):
        if rule_id not in by_rule:
            problems.append(f"{rule_id}: no failure-fixing guard in {guards_path} names this rule")
    for p in problems:
        print(p)
    print(f"{sum(len(v) for v in by_rule.values())} failure-fixing guards, {len(by_rule)} rules: "
          + ("ok" if not problems else f"{len(problems)} problems"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
