#!/usr/bin/env python3
"""PASS/FAIL lines for the `ext` stage of scripts/gpu-validate.sh: the doctor's link-time
verdicts against the truth, from the stage's logs (usage: gpu-ext-verdicts.py LOG_DIR)."""
import glob
import json
import os
import re
import sys


def read(logs, name):
    path = os.path.join(logs, name + ".log")
    return open(path, encoding="utf-8", errors="replace").read() if os.path.exists(path) else ""


def facts(text):
    """The facts object of a `probe --format json` log (between the log's header and trailer)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return {}
    try:
        doc = json.loads(text[start:end + 1])
    except ValueError:
        return {}
    return doc.get("facts", doc)


def native(f):
    return f.get("native", {}) if isinstance(f, dict) else {}


def main():
    logs = sys.argv[1]
    out = []

    def claim(ok, what):
        out.append(("PASS " if ok else "FAIL ") + what)

    claim(read(logs, "ext-truth-good").find("EXT LOADS") >= 0, "good extension loads after import torch (truth)")
    bad_truth = read(logs, "ext-truth-bad")
    claim(re.search(r"EXT FAILS.*undefined symbol: _ZN3c1030nvte_doctor_symbol_torch_lacksEi", bad_truth) is not None,
          "bad extension fails after import torch with undefined symbol _ZN3c1030nvte_doctor_symbol_torch_lacksEi (truth)")
    for variant in ("good", "bad"):
        n = native(facts(read(logs, "ext-probe-json-" + variant)))
        exts = [e for e in n.get("extensions", []) if e.get("file", "").startswith("flash_attn_2_cuda")]
        torch_broken = [e.get("file") + ": " + e.get("unresolved", e.get("missing_libraries", ""))
                        for e in n.get("extensions", []) if e.get("package") == "torch" and not e.get("links", True)]
        claim(bool(exts), f"{variant}: the probe linked flash_attn_2_cuda ({n.get('extension_count')} objects checked, "
                          f"{n.get('object_count')} in the process)")
        claim(not torch_broken, f"{variant}: torch's own libraries link" + (": " + "; ".join(torch_broken[:3]) if torch_broken else ""))
        if exts:
            e = exts[0]
            if variant == "good":
                claim(e.get("links") is True, "good: flash_attn_2_cuda links (doctor) " + e.get("unresolved", ""))
            else:
                claim(e.get("links") is False and e.get("torch_symbol") == "c10::nvte_doctor_symbol_torch_lacks(int)",
                      "bad: the doctor names c10::nvte_doctor_symbol_torch_lacks(int), lacking in " + str(e.get("torch_library")))
    good_check, bad_check = read(logs, "ext-check-good"), read(logs, "ext-check-bad")
    claim("flash-attn-built-for-other-torch" not in good_check, "good: no flash-attn link finding in check")
    claim("[flash-attn-built-for-other-torch]" in bad_check and "c10::nvte_doctor_symbol_torch_lacks(int)" in bad_check,
          "bad: check reports flash-attn-built-for-other-torch with the symbol")
    claim("pip install --no-build-isolation --force-reinstall --no-deps flash_attn==2.8.3" in bad_check,
          "bad: check gives the reinstall command")
    if os.path.exists(os.path.join(logs, "ext-te-probe-json.log")):
        # The log opens with the command, whose source holds the words too: only an output line counts.
        truth = "fails" if re.search(r"^IMPORT FAILED", read(logs, "ext-te-truth"), re.M) else "imports"
        n = native(facts(read(logs, "ext-te-probe-json")))
        te = [e for e in n.get("extensions", []) if e.get("package") == "te"]
        broken = [e.get("file") + ": " + e.get("unresolved", e.get("missing_libraries", "")) for e in te if not e.get("links", True)]
        doctor = "broken" if broken else "links"
        claim((truth == "imports") == (doctor == "links") and bool(te),
              f"real TE: truth {truth}, doctor {doctor} ({len(te)} TE objects)" + (": " + "; ".join(broken[:3]) if broken else ""))
    for path in sorted(glob.glob(os.path.join(logs, "ext-probe-time-*.log"))):
        f = facts(open(path, encoding="utf-8", errors="replace").read())
        probes = f.get("probe", {})
        total = sum(v.get("seconds", 0) for v in probes.values() if isinstance(v, dict))
        out.append(f"time {os.path.basename(path)[:-4]}: native {probes.get('native', {}).get('seconds', 0) * 1000:.2f} ms "
                   f"({probes.get('native', {}).get('status')}), all probes {total * 1000:.2f} ms")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
