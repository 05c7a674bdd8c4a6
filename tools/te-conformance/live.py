#!/usr/bin/env python3
"""Live conformance: the grid's workloads through an INSTALLED TransformerEngine on a real GPU.

te_conformance.py asks each tag's selector with the machine stubbed (CPU, any SM, any cuDNN).
This asks the real thing on the node it runs on: TE's own get_attention_backend, imported
normally (its compiled extension, the cuDNN it really loaded, the GPU's real compute
capability, the flash-attn it really finds), for every distinct workload and NVTE_* setting of
tests/conformance/cases.jsonl re-homed onto this node. The facts of each record are the node's
as TE saw them, so the conformance ctest replays them through `explain` unchanged.

    python3 tools/te-conformance/live.py --label h100 [--out tests/conformance] [--limit N]

Run it once per cuDNN copy TE can be made to load (e.g. again with CUDNN_PATH=<venv>/nvidia/cudnn):
each run writes live-<label>-<tag>-cudnn<version>.jsonl. Import order is torch first, then TE,
as TE's own modules do it.

Record format: a header {"schema", "tag", "te_version", "te_commit", "generator", "live": {the
node as TE saw it}, "reasons", "records", "skipped", "errors"}, then {"case", "facts",
"workload" (keys differing from cases.jsonl's workload_defaults), "te"} with "te" as in
te-<tag>.jsonl (selected, flash, fused, unfused, reasons as indices into the header's list).
"""

import argparse
import json
import logging
import os
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import torch  # noqa: E402  (torch first, as TE's own modules import it)

import runner  # noqa: E402
from te_conformance import SCHEMA, _compact, _silence_te_handlers, _write_atomically  # noqa: E402
from teimport import LoadedSelector  # noqa: E402



class InstalledSource:
    """The installed TE's Python files, read as the harness reads a tag of the checkout: the
    pre-selection step (preselect.py) takes DotProductAttention's code from what is installed."""

    def __init__(self, root):
        self.root = Path(root)

    def show(self, tag, path):
        try:
            return (self.root / path).read_text(encoding="utf-8")
        except OSError as e:
            raise FileNotFoundError(f"{path}: {e}") from None

    def exists(self, tag, path):
        return (self.root / path).is_file()

    def grep(self, tag, pattern, under):
        base = self.root / under
        return sorted(str(p.relative_to(self.root)) for p in base.rglob("*.py")
                      if pattern in p.read_text(encoding="utf-8", errors="replace"))


def real_recipe_factory():
    """run_case's fp8 recipe stand-in replaced by TE's own recipe classes: the live selector
    calls the recipe's methods and get_fp8_te_dtype on it."""
    from transformer_engine.common import recipe as te_recipe

    classes = {"delayed": "DelayedScaling", "current": "Float8CurrentScaling", "mxfp8": "MXFP8BlockScaling",
               "block": "Float8BlockScaling", "nvfp4": "NVFP4BlockScaling"}

    def make(kind, fp8_dpa, fp8_mha):
        cls = getattr(te_recipe, classes[kind], None)
        if cls is None:
            raise runner.Unrepresentable(f"fp8_recipe {kind}")
        try:
            return cls(fp8_dpa=fp8_dpa, fp8_mha=fp8_mha)
        except TypeError:  # a recipe without the fp8_dpa/fp8_mha fields
            obj = cls()
            if fp8_dpa or fp8_mha:
                raise runner.Unrepresentable(f"fp8_dpa/fp8_mha on {kind}")
            return obj

    return make


def selector_modules():
    import transformer_engine.pytorch  # noqa: F401
    for name in ("transformer_engine.pytorch.attention.dot_product_attention.utils",
                 "transformer_engine.pytorch.dot_product_attention.utils", "transformer_engine.pytorch.attention"):
        try:
            module = __import__(name, fromlist=["get_attention_backend"])
        except ImportError:
            continue
        if hasattr(module, "get_attention_backend"):
            backends = sys.modules.get(name.rsplit(".", 1)[0] + ".backends", module)
            return module, backends
    raise SystemExit("live.py: this TE has no get_attention_backend")


def te_cudnn_version(module):
    for owner in (module, sys.modules.get("transformer_engine.pytorch.utils")):
        fn = getattr(owner, "get_cudnn_version", None)
        if fn is not None:
            return ".".join(str(x) for x in tuple(fn())[:3])
    raise SystemExit("live.py: cannot ask TE for its cuDNN version")


def mapped(prefix):
    with open("/proc/self/maps") as maps:
        return sorted({l.split()[-1] for l in maps if os.path.basename(l.split()[-1]).startswith(prefix)})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", required=True, help="the node's name in the file name, e.g. h100")
    parser.add_argument("--out", type=Path, default=HERE.parent.parent / "tests" / "conformance")
    parser.add_argument("--cases", type=Path, default=HERE.parent.parent / "tests" / "conformance" / "cases.jsonl")
    parser.add_argument("--tag", help="TE's release tag (default: v + TE's version without +hash)")
    parser.add_argument("--commit", default=os.environ.get("TE_COMMIT", ""), help="TE's commit")
    parser.add_argument("--limit", type=int, default=0, help="ask at most N workloads (0: all)")
    args = parser.parse_args()

    import transformer_engine
    module, backends = selector_modules()
    loaded = LoadedSelector(module, backends, getattr(module, "FlashAttentionUtils", None))
    # What the harness's import of a tag sets beside the selector (teimport.TeImport.load).
    loaded.checkout = InstalledSource(Path(transformer_engine.__file__).parent.parent)
    loaded.tag = "installed"
    loaded.mask_types = getattr(sys.modules.get("transformer_engine.pytorch.constants"), "AttnMaskTypes", None)
    runner._Recipe = real_recipe_factory()
    _silence_te_handlers()

    te_version = transformer_engine.__version__.split("+")[0]
    tag = args.tag or "v" + te_version
    major, minor = torch.cuda.get_device_capability(0)
    sm = major * 10 + minor
    cudnn = te_cudnn_version(module)
    try:
        torch_cudnn = torch.backends.cudnn.version()
    except RuntimeError as e:  # torch's own check of the cuDNN it finds, after TE loaded another copy
        torch_cudnn = "%s: %s" % (type(e).__name__, str(e).splitlines()[0])
    node = {"gpu": torch.cuda.get_device_name(0), "sm": sm, "cudnn": cudnn, "torch": torch.__version__,
            "torch_cudnn": torch_cudnn, "cudnn_files": mapped("libcudnn.so"),
            "te_path": os.path.dirname(transformer_engine.__file__), "CUDNN_PATH": os.environ.get("CUDNN_PATH", "")}

    lines = [json.loads(l) for l in open(args.cases)]
    defaults = lines[0]["workload_defaults"]
    seen, cases = set(), []
    for case in lines[1:]:
        env = {k: v for k, v in case["facts"].items() if k.startswith("env.")}
        workload = dict(defaults)
        workload.update(case["workload"])
        key = json.dumps([workload, env], sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        facts = {"gpu.sm": sm, "cudnn.version": cudnn}
        facts.update(env)
        cases.append({"name": case["name"], "facts": facts, "workload": workload})
    if args.limit:
        cases = cases[:args.limit]

    started = time.time()
    answers, skipped, errors = {}, Counter(), Counter()
    for case in cases:
        try:
            answers[case["name"]] = runner.run_case(loaded, case)
        except runner.Unrepresentable as why:
            skipped[str(why).split(" ")[0]] += 1
        except Exception as e:  # the real TE refusing an input: counted, never recorded as an answer
            errors["%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:160])] += 1
    for key in [k for k in os.environ if k.startswith("NVTE_")]:
        del os.environ[key]
    logging.disable(logging.NOTSET)

    reasons = sorted({line for a in answers.values() for line in a["reasons"]})
    index = {line: i for i, line in enumerate(reasons)}
    records = []
    for case in cases:
        if case["name"] not in answers:
            continue
        answer = answers[case["name"]]
        answer["reasons"] = [index[line] for line in answer["reasons"]]
        records.append({"case": case["name"], "facts": case["facts"], "workload": _compact(case["workload"], defaults),
                        "te": answer})
    label = f"live-{args.label}-{tag}-cudnn{cudnn}"
    header = {"schema": SCHEMA, "tag": label, "te_version": te_version, "te_commit": args.commit,
              "generator": "tools/te-conformance/live.py", "cases": "inline", "live": node, "reasons": reasons,
              "records": len(records), "skipped": dict(sorted(skipped.items())), "errors": dict(errors.most_common())}
    _write_atomically(args.out / f"{label}.jsonl", [header] + records)
    selected = Counter(a["selected"] for a in answers.values())
    print(f"{label}: {len(records)} records, {sum(skipped.values())} skipped, {sum(errors.values())} errors "
          f"in {time.time() - started:.1f} s; selected {dict(selected)}; TE on cuDNN {cudnn} "
          f"({', '.join(node['cudnn_files'])}), torch on {node['torch_cudnn']}")
    for message, count in errors.most_common(5):
        print(f"  error x{count}: {message}")


if __name__ == "__main__":
    main()
