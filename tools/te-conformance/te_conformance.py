#!/usr/bin/env python3
"""Asks TransformerEngine's own backend selector, tag by tag, what it does with each case of
the grid, and writes the answers as tests/conformance/te-<tag>.jsonl.

    tools/te-conformance/te_conformance.py --te ~/src/TransformerEngine \\
        --flash-attention ~/src/flash-attention [--tags v2.12,HEAD | --all] [--out tests/conformance]

See README.md beside this file for what is real, what is stubbed, and the record format.
"""

import argparse
import json
import logging
import multiprocessing
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import grid  # noqa: E402
import model_configs  # noqa: E402
from runner import Unrepresentable, fa_versions_for_import, import_key, run_case  # noqa: E402
from tegit import TeCheckout  # noqa: E402

SCHEMA = 1
# Every minor release from 1.12 on (patch tags repeat their minor's selector) and the source HEAD.
# release_v2.19 is a branch (2.19.0 has no tag yet): asked like a tag, its file is
# te-release_v2.19.jsonl.
ALL_TAGS = ["v1.12", "v1.13"] + [f"v2.{i}" for i in range(0, 19)] + ["release_v2.19", "HEAD"]


def tag_features(checkout, tag):
    """What the tag has that targeted parts of the grid depend on (targeted.py)."""
    features = set()
    if checkout.grep(tag, "NVTE_DPA_FP8_RECIPE", "transformer_engine/pytorch/attention"):
        features.add("dpa_fp8_recipe")
    if checkout.grep(tag, "flash-attn-4", "transformer_engine/pytorch/attention"):
        features.add("fa4")
    return frozenset(features)


def _silence_te_handlers():
    """TE attaches its own stream handlers at import; the harness collects records itself."""
    loggers = [logging.getLogger()] + [l for l in logging.root.manager.loggerDict.values()
                                       if isinstance(l, logging.Logger)]
    for logger in loggers:
        for handler in list(logger.handlers):
            if type(handler) is logging.StreamHandler:
                logger.removeHandler(handler)


def _compact(workload, defaults):
    return {k: v for k, v in workload.items() if defaults.get(k, object()) != v}


def _write_atomically(target, lines):
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_suffix(target.suffix + ".tmp")
    with open(temporary, "w") as out:
        for line in lines:
            out.write(json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n")
    os.replace(temporary, target)


def generate(tag, te_path, fa_path, out_dir, build_dir, random_count, combo_count):
    """Asks one tag every case; writes te-<tag>.jsonl; returns the cases it asked."""
    from teimport import TagImporter  # imports torch: only in the worker

    started = time.time()
    checkout = TeCheckout(te_path)
    importer = TagImporter(checkout, tag, build_dir, fa_path)
    all_cases = list(grid.cases(model_configs.cases(checkout, tag, grid.workload, grid.node), random_count, combo_count,
                                tag_features(checkout, tag)))
    groups = defaultdict(list)
    for case in all_cases:
        groups[import_key(case)].append(case)

    answers, skipped = {}, defaultdict(int)
    for key, group in groups.items():
        loaded = importer.load(key[0], fa_versions_for_import(group[0]), dict(key[2]))
        _silence_te_handlers()
        for case in group:
            try:
                answers[case["name"]] = run_case(loaded, case)
            except Unrepresentable as why:
                skipped[str(why).split(" ")[0]] += 1
    asked = [case for case in all_cases if case["name"] in answers]
    # TE's debug lines repeat across cases: the header lists each once, records refer by index.
    reasons = sorted({line for a in answers.values() for line in a["reasons"]})
    index = {line: i for i, line in enumerate(reasons)}
    records = []
    for case in asked:
        answer = answers[case["name"]]
        answer["reasons"] = [index[line] for line in answer["reasons"]]
        records.append({"case": case["name"], "te": answer})
    header = {"schema": SCHEMA, "tag": tag, "te_version": checkout.version(tag), "te_commit": checkout.commit(tag),
              "flash_attention_commit": importer.fa4_source, "generator": "tools/te-conformance/te_conformance.py",
              "cases": "cases.jsonl", "reasons": reasons, "records": len(records),
              "skipped": dict(sorted(skipped.items()))}
    _write_atomically(out_dir / f"te-{tag}.jsonl", [header] + records)
    return tag, asked, sum(skipped.values()), time.time() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--te", required=True, type=Path, help="a TransformerEngine git checkout (any branch)")
    parser.add_argument("--flash-attention", type=Path,
                        help="a flash-attention checkout: FA4's head-dim check (flash_attn/cute/interface.py)")
    parser.add_argument("--tags", help="comma-separated tags (HEAD for the checkout's HEAD)")
    parser.add_argument("--all", action="store_true", help="every tag from v1.12, release_v2.19 and HEAD")
    parser.add_argument("--out", type=Path, default=HERE.parent.parent / "tests" / "conformance")
    parser.add_argument("--build-dir", type=Path, default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "nvte-te-conformance")
    parser.add_argument("--random", type=int, default=260, help="random cases per tag (default 260)")
    parser.add_argument("--combinations", type=int, default=3000,
                        help="deployment-weighted combinations per tag (default 3000; combinations.py)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    tags = ALL_TAGS if args.all else (args.tags.split(",") if args.tags else None)
    if not tags:
        parser.error("give --tags or --all")
    TeCheckout(args.te)  # fails early with a clear message
    jobs = [(t, args.te, args.flash_attention, args.out, args.build_dir, args.random, args.combinations) for t in tags]
    cases_file = args.out / "cases.jsonl"
    known = {}
    if cases_file.exists() and not args.all:
        known = {c["name"]: c for c in map(json.loads, cases_file.read_text().splitlines()[1:])}
    with multiprocessing.get_context("spawn").Pool(max(1, min(args.jobs, len(tags)))) as pool:
        for tag, asked, skipped, seconds in pool.starmap(generate, jobs):
            print(f"{tag}: {len(asked)} records, {skipped} cases the tag cannot express, {seconds:.1f} s", flush=True)
            for case in asked:
                known[case["name"]] = case
    # The inputs, once for all tags: names -> facts and workload (only keys that differ from
    # workload_defaults). A te-<tag>.jsonl record names its case.
    defaults = grid.workload()
    header = {"schema": SCHEMA, "generator": "tools/te-conformance/te_conformance.py", "workload_defaults": defaults,
              "cases": len(known)}
    _write_atomically(cases_file, [header] + [{"name": n, "facts": c["facts"], "workload": _compact(c["workload"], defaults)}
                                              for n, c in sorted(known.items())])


if __name__ == "__main__":
    main()
