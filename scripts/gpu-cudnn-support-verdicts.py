#!/usr/bin/env python3
"""One PASS/FAIL line per shape and pass: cuDNN's support answer against the plan build.

Usage: scripts/gpu-cudnn-support-verdicts.py SELFTEST.json...

Each file is `nvte-doctor selftest --format json` for one model (scripts/gpu-validate.sh
cudnn-support). For every cudnn_support check in it, and each of its passes (forward, backward),
the line says whether cuDNN's support answer (asked before the plan, as TE 2.20 asks it) agrees
with the self-test's plan build from heuristics mode A, the mode TE uses: PASS when cuDNN said
supported and the plan was built, or said unsupported and no plan was built; FAIL otherwise, and
when a shape has no answer (no GPU, or the child ended before cuDNN was asked); SKIP for a shape
the self-test cannot express (thd, fp8, bias) and for a model the doctor refuses for having no
attention (its stderr, SELFTEST.err beside the report, says so). Exits 1 when any line fails.
"""
import json
import pathlib
import sys


def verdicts(path):
    model = pathlib.Path(path).stem
    err = pathlib.Path(path).with_suffix(".err")
    refusal = err.read_text().strip() if err.exists() else ""
    if "has no attention layers" in refusal:
        # The doctor refuses a model without attention (exit 3): nothing for cuDNN to answer.
        return [f"SKIP {model}: {refusal.splitlines()[-1]}"]
    doc = json.loads(pathlib.Path(path).read_text())
    checks = doc.get("checks", doc.get("selftest", {}).get("checks", []))
    lines = []
    for check in checks:
        if check.get("check") != "cudnn_support":
            continue
        label = check.get("label", "?")
        if check.get("status") == "skipped":
            error = check.get("error", "")
            # A shape the self-test cannot express (thd, fp8, bias: sdpa_args) has no graph to ask
            # about; anything else (no GPU, a child that ended early) is a missing answer.
            word = "FAIL" if error.startswith("no GPU") or "ended before" in error else "SKIP"
            lines.append(f"{word} {model} [{label}] no support answer: {error}")
            continue
        result = check.get("result", {})
        for name in ("forward", "backward"):
            answer = result.get(name)
            if answer is None:
                continue
            supported = answer.get("supported")
            plan = answer.get("plan", "not reached")
            ok = answer.get("agrees")
            word = "PASS" if ok else "FAIL"
            reason = f" ({answer['reason']})" if answer.get("reason") else ""
            lines.append(f"{word} {model} [{label}] {name}: supported={supported} plan={plan}{reason}")
    if not lines:
        # Every shape of the model was one the self-test cannot express: cudnn_sdpa says why.
        for check in checks:
            if check.get("check") == "cudnn_sdpa" and check.get("status") == "skipped":
                lines.append(f"SKIP {model} [{check.get('label', '?')}] {check.get('error', '')}")
    if not lines:
        lines.append(f"FAIL {model}: no cudnn_support check in {path}")
    return lines


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    failed = False
    for path in sys.argv[1:]:
        try:
            lines = verdicts(path)
        except (OSError, ValueError) as error:
            lines = [f"FAIL {path}: {error}"]
        for line in lines:
            print(line)
            failed = failed or line.startswith("FAIL")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
