#!/usr/bin/env python3
"""Holds the doctor's claims about an installed TE against the truth `gpu-validate.sh te` recorded
on the node, and prints one PASS/FAIL line per claim (exit 1 on any FAIL):

  python3 scripts/gpu-te-verdicts.py LOGDIR

- the probe's import-order facts against /proc/self/maps and what torch/TE said in each order;
- TE's missing requirement (pydantic) against Python's own ImportError;
- the self-test: te_selector loads TE (no "undefined symbol"), the Python tier never counts a
  backend TE did not run, and its verdict matches the truth (FusedAttention fails with two cuDNN
  copies, runs with CUDNN_PATH)."""
import json
import re
import sys
from pathlib import Path

logs = Path(sys.argv[1])
failures = 0


def verdict(ok, what):
    global failures
    failures += not ok
    print(("PASS " if ok else "FAIL ") + what)


def body(name):
    path = logs / f"{name}.log"
    return path.read_text() if path.exists() else ""


def json_of(name):
    text = body(name)
    start = text.find("{")
    end = text.rfind("}")
    return json.loads(text[start:end + 1]) if start >= 0 else {}


def flatten(node, prefix=""):
    out = {}
    if isinstance(node, dict):
        for k, v in node.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.update(flatten(v, f"{prefix}[{i}]"))
    else:
        out[prefix] = node
    return out


def truth(name):
    text = body(name)
    te = re.search(r"TE cudnn \((\d+), (\d+), (\d+)\)", text)
    return {"te_cudnn": ".".join(te.groups()) if te else None,
            "torch_fails": "torch cudnn FAILED" in text,
            "cudnn_mapped": len(re.findall(r"^mapped .*/libcudnn\.so", text, re.M)),
            "import_failed": re.findall(r"IMPORT FAILED \S+ (\S+ .*)", text)}


probe = flatten(json_of("te-probe-json").get("facts", {}))
fact = lambda name: probe.get(name)  # noqa: E731
torch_first, te_first = truth("te-truth-torch-first"), truth("te-truth-te-first")
verdict(fact("te.version") is not None, f"probe sees TE {fact('te.version')} on PYTHONPATH")
verdict(str(fact("te.cudnn.torch_first.version") or "").startswith(torch_first["te_cudnn"] or "?"),
        f"TE's cuDNN after `import torch`: doctor {fact('te.cudnn.torch_first.version')}, process {torch_first['te_cudnn']}")
verdict(fact("cudnn.mapped_copies.torch_first") == torch_first["cudnn_mapped"],
        f"cuDNN copies mapped, torch first: doctor {fact('cudnn.mapped_copies.torch_first')}, process {torch_first['cudnn_mapped']}")
verdict(bool(fact("torch.cudnn.te_first.fails")) == te_first["torch_fails"],
        f"torch's cuDNN check with TE imported first: doctor fails={fact('torch.cudnn.te_first.fails')}, process fails={te_first['torch_fails']}")
with_path = flatten(json_of("te-probe-json-cudnn-path").get("facts", {}))
truth_path = truth("te-truth-torch-first-cudnn-path")
verdict(with_path.get("cudnn.mapped_copies.torch_first") == truth_path["cudnn_mapped"] and
        not with_path.get("torch.cudnn.te_first.fails") and not truth("te-truth-te-first-cudnn-path")["torch_fails"],
        f"with CUDNN_PATH: doctor maps {with_path.get('cudnn.mapped_copies.torch_first')} copies, process {truth_path['cudnn_mapped']}; torch fine in both orders")
no_pydantic = truth("te-truth-no-pydantic")["import_failed"]
missing = [v for k, v in flatten(json_of("te-probe-json-no-pydantic").get("facts", {})).items()
           if k.startswith("te.requirements.missing") and k.endswith(".name")]
verdict(bool(no_pydantic) and "pydantic" in no_pydantic[0] and "pydantic" in missing,
        f"TE without pydantic: Python says {no_pydantic[:1]}, doctor lists missing {missing}")

for name, fused_runs in (("te-selftest-json", False), ("te-selftest-cudnn-path-json", True)):
    checks = json_of(name).get("selftest", {}).get("checks", [])
    te = [c for c in checks if c.get("check") == "te_selector"]
    verdict(bool(te) and all("undefined symbol" not in c.get("error", "") and c.get("status") in ("ok", "failed") for c in te),
            f"{name}: te_selector loads TE's core library ({[c.get('status') for c in te]}, {[c.get('error', '')[:80] for c in te]})")
    py = [c for c in checks if c.get("check") == "python"]
    cases = py[0].get("result", {}).get("cases", []) if py else []
    honest = all(c["status"] != "ok" or c["backend"] == "default" or c.get("ran", "").startswith(c["backend"]) for c in cases)
    verdict(bool(cases) and honest, f"{name}: no backend counted as verified that TE did not run")
    fused = [c for c in cases if c.get("ran", "").startswith("FusedAttention")]
    ran_ok = bool(fused) and all(c["status"] == "ok" for c in fused)
    verdict(ran_ok == fused_runs, f"{name}: FusedAttention {'runs' if ran_ok else 'fails'} (truth: {'runs' if fused_runs else 'fails with two cuDNN copies mapped'})")
print(f"{failures} failed")
sys.exit(1 if failures else 0)
