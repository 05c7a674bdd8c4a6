#!/usr/bin/python3
"""Writes COUNT synthetic node reports for `nvte-doctor fleet`, made from real ones.

Usage: fleet-reports.py COUNT OUT_DIR TEMPLATE.json...

Each TEMPLATE is a report the doctor wrote (`check --format json`, e.g. on the A100 and H100
snapshots with the shipped workloads); every synthetic report is a copy of one of them, as
`run` would write it on another node of a mixed fleet: its own host name (gpu00001... for the
first template, dgx-a100-0001... for the second, node0001... for more; about 1 in 50 numbers
skipped, so host lists have gaps), a generation time in the last two days (about 5% older than a
day: stale by default), driver / cuDNN / NCCL / torch / TE versions drawn from a few releases each
(a few dozen configurations in all), a subset of the template's findings plus some of 40
synthetic rule ids, some workloads without a backend, and the status that follows from the
findings. Deterministic: the same arguments give the same files (seed 20000; times relative to
the newest template's generated_at).
"""
import copy
import datetime
import json
import os
import random
import sys


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    count, out = int(sys.argv[1]), sys.argv[2]
    templates = [json.load(open(p)) for p in sys.argv[3:]]
    rng = random.Random(20000)
    now = max(datetime.datetime.fromisoformat(t["generated_at"].replace("Z", "+00:00")) for t in templates)
    prefixes = ["gpu%05d", "dgx-a100-%04d", "node%04d"]
    versions = {
        ("driver", "version"): ["535.230.02", "550.144.03", "570.124.06", "580.95.05"],
        ("cudnn", "version"): ["9.1.0", "9.8.0", "9.19.0"],
        ("nccl", "version"): ["2.21.5", "2.27.3", "2.28.9"],
        ("torch", "version"): ["2.6.0+cu124", "2.11.0+cu130"],
        ("te", "version"): ["2.3.0", "2.12.0"],
    }
    siblings = {"NVIDIA H100 80GB HBM3": ["NVIDIA H100 PCIe", "NVIDIA H200"],
                "NVIDIA A100-SXM4-40GB": ["NVIDIA A100-SXM4-80GB"],
                "NVIDIA A100-SXM4-80GB": ["NVIDIA A100-SXM4-40GB"]}
    synthetic = [("synthetic-rule-%02d" % i, "warning" if i % 3 else "error") for i in range(40)]
    os.makedirs(out, exist_ok=True)
    numbers = [0] * len(templates)
    for i in range(count):
        which = 0 if len(templates) == 1 or rng.random() < 0.7 else 1 + rng.randrange(len(templates) - 1)
        numbers[which] += 1 + (rng.random() < 0.02)
        doc = copy.deepcopy(templates[which])
        host = prefixes[min(which, len(prefixes) - 1)] % numbers[which]
        doc["host"] = host
        facts = doc.setdefault("facts", {})
        facts.setdefault("system", {})["hostname"] = host
        # Most nodes of a group run the same stack; a few lag behind or run ahead.
        for (component, field), choices in versions.items():
            if component in facts and rng.random() < 0.3:
                facts[component][field] = rng.choice(choices)
        age = rng.uniform(86400, 2 * 86400) if rng.random() < 0.05 else rng.uniform(0, 3 * 3600)
        doc["generated_at"] = (now - datetime.timedelta(seconds=age)).strftime("%Y-%m-%dT%H:%M:%SZ")
        findings = [f for f in doc.get("findings", []) if rng.random() < 0.8]
        for rule, severity in rng.sample(synthetic, rng.choice([0, 0, 1, 2])):
            findings.append({"id": rule, "severity": severity, "title": "Synthetic finding " + rule,
                             "message": "A finding the generator made up.", "evidence": {}, "fixes": [], "references": []})
        doc["findings"] = findings
        # Another model of the template GPU's architecture on some nodes.
        gpus = facts.get("gpu") or []
        if gpus and gpus[0].get("name") in siblings and rng.random() < 0.4:
            name = rng.choice(siblings[gpus[0]["name"]])
            for g in gpus:
                g["name"] = name
        for w in doc.get("workloads", []):
            if rng.random() < 0.1:
                w["selected"] = None
                if "verdict" in w:
                    w.update({"verdict": "no_backend", "runnable": False, "backend": None})
        errors = sum(f.get("severity") == "error" for f in findings)
        warnings = sum(f.get("severity") == "warning" for f in findings)
        doc["summary"] = {"errors": errors, "warnings": warnings, "infos": len(findings) - errors - warnings,
                          "status": "CRITICAL" if errors else "WARNING" if warnings else "OK"}
        with open(os.path.join(out, host + ".json"), "w") as f:
            json.dump(doc, f, indent=2)
    print("wrote %d reports to %s" % (count, out))


main()
