#!/usr/bin/env python3
"""Writes TE debug logs (NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2) as users paste them, for the tests of
`nvte-doctor --te-log`: each case of the conformance grid is run through the tag's real
get_attention_backend (runner.run_case), and TE's own log records are formatted with the
formatter TE's attention module defines at that tag. Variants wrap them as Ray, torchrun and a
pasted traceback do.

    tools/te-conformance/te_logs.py --te ~/src/TransformerEngine [--out tests/fixtures/te-logs]

Writes <out>/*.log and <out>/expected.json (per log: each workload's facts and keys in the
grid's vocabulary and TE's verdict), which the ctest te_log_fixtures compares with the parser
and with explain. See README.md beside the logs.
"""

import argparse
import json
import logging
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from runner import fa_versions_for_import, import_key, run_case  # noqa: E402
from tegit import TeCheckout  # noqa: E402

# file -> (tag, [case names], variant). A log of several cases is one run with several layers;
# "repeat" logs the first case again at the end (a later step: the parser keeps the last block).
LOGS = {
    "v1.12-ampere-base.log": ("v1.12", ["sweep/ampere/base"], "plain"),
    "v1.12-sm80-thd-no-backend.log": ("v1.12", ["sweep/blackwell/sm80"], "plain"),
    "v1.13-hopper-dropout.log": ("v1.13", ["sweep/hopper/dropout"], "plain"),
    "v2.1-blackwell-thd-ray.log": ("v2.1", ["sweep/blackwell/base"], "ray"),
    "v2.1-hopper-thd-padding-causal.log": ("v2.1", ["sweep/hopper/layout-thd_thd_thd"], "plain"),
    "v2.4-hopper-gqa-window.log": ("v2.4", ["sweep/hopper/gqa-4", "sweep/hopper/window-128,0-causal"], "repeat"),
    "v2.8-hopper-fp8-current.log": ("v2.8", ["sweep/hopper/fp8-current-mha0"], "plain"),
    "v2.8-ampere-hd256-torchrun.log": ("v2.8", ["sweep/ampere/hd-256x256"], "torchrun"),
    "v2.12-incident1-nvte-flash-attn.log": ("v2.12", ["incident-1/d128x128/NVTE_FLASH_ATTN"], "plain"),
    "v2.12-hopper-post-scale-bias.log": ("v2.12", ["sweep/hopper/bias-post_scale_bias-1hss-causal"], "plain"),
    "v2.18-hopper-cp-a2a.log": ("v2.18", ["sweep/hopper/cp-2-a2a"], "plain"),
    "v2.18-ampere-thd-padding-causal.log": ("v2.18", ["sweep/ampere/layout-thd_thd_thd"], "torchrun"),
    "v2.18-blackwell-fp8-no-backend-traceback.log": ("v2.18", ["sweep/blackwell/fp8-delayed-mha0"], "traceback"),
    "v2.18-incident2-sm90-cudnn-9.3.log": ("v2.18", ["incident-2/sm90/cudnn-9.3.0/causal"], "plain"),
    "HEAD-hopper-softmax-off-by-one.log": ("HEAD", ["sweep/hopper/softmax-off-by-one"], "plain"),
    "HEAD-blackwell-mla-thd-ray.log": ("HEAD", ["sweep/blackwell/base", "sweep/blackwell/deterministic"], "ray"),
}

FALLBACK_FORMAT = "[%(levelname)-8s | %(name)-19s]: %(message)s"


def te_formatter(module):
    """The logging.Formatter TE's attention module sets up at this tag."""
    for owner in (module, getattr(module, "AttentionLogging", None)):
        formatter = getattr(owner, "_formatter", None) if owner is not None else None
        if isinstance(formatter, logging.Formatter):
            return formatter
    return logging.Formatter(FALLBACK_FORMAT)


def load_cases(conformance_dir):
    lines = (conformance_dir / "cases.jsonl").read_text().splitlines()
    defaults = json.loads(lines[0])["workload_defaults"]
    cases = {}
    for line in lines[1:]:
        case = json.loads(line)
        workload = dict(defaults)
        workload.update(case["workload"])
        cases[case["name"]] = {"name": case["name"], "facts": case["facts"], "workload": workload}
    return cases


def wrap(variant, lines, pid):
    if variant == "ray":
        return [f"(WorkerDict pid={pid}, ip=10.0.0.7) {line}" for line in lines]
    if variant == "torchrun":
        return [f"[rank0]:{line}" for line in lines]
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--te", required=True, type=Path, help="a TransformerEngine git checkout (any branch)")
    parser.add_argument("--out", type=Path, default=HERE.parent.parent / "tests" / "fixtures" / "te-logs")
    parser.add_argument("--conformance", type=Path, default=HERE.parent.parent / "tests" / "conformance")
    parser.add_argument("--build-dir", type=Path, default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "nvte-te-conformance")
    args = parser.parse_args()

    from teimport import TagImporter  # imports torch

    checkout = TeCheckout(args.te)
    cases = load_cases(args.conformance)
    args.out.mkdir(parents=True, exist_ok=True)
    expected = {}
    importers = {}
    for file, (tag, names, variant) in LOGS.items():
        importer = importers.setdefault(tag, TagImporter(checkout, tag, args.build_dir, None))
        lines, workloads = [], []
        order = names + ([names[0]] if variant == "repeat" else [])
        for name in order:
            case = cases[name]
            key = import_key(case)
            loaded = importer.load(key[0], fa_versions_for_import(case), dict(key[2]))
            for logger in [logging.getLogger()] + [l for l in logging.root.manager.loggerDict.values()
                                                  if isinstance(l, logging.Logger)]:
                for handler in list(logger.handlers):
                    if type(handler) is logging.StreamHandler:
                        logger.removeHandler(handler)
            records = []
            answer = run_case(loaded, case, records)
            formatter = te_formatter(loaded.module)
            lines += [formatter.format(r) for r in records]
            if name not in [w["case"] for w in workloads]:
                workloads.append({"case": name, "facts": case["facts"], "workload": case["workload"],
                                  "te": {k: answer[k] for k in ("selected", "flash", "fused", "unfused")}})
        if variant == "traceback":
            # What a user pastes from a crashed job: the config line, then the ValueError that
            # DotProductAttention raises when no backend is left (the Disabling lines scrolled away).
            config = [line for line in lines if "Running with config=" in line]
            lines = config + [
                "Traceback (most recent call last):",
                '  File "/workspace/train.py", line 212, in <module>',
                "    loss = model(batch).loss",
                "ValueError: No dot product attention backend is available for the provided inputs. Please run with"
                " NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2 to find out the reasons for disabling all backends.",
            ]
        lines = wrap(variant, lines, 48213)
        (args.out / file).write_text("\n".join(lines) + "\n")
        expected[file] = {"tag": tag, "te_version": checkout.version(tag), "variant": variant, "workloads": workloads}
        print(f"{file}: {len(lines)} lines, {len(workloads)} workload(s)", flush=True)
    (args.out / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
