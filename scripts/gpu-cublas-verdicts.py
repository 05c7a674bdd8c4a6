#!/usr/bin/env python3
"""Holds the doctor's cuBLAS facts against what a process that ran a cuBLAS GEMM maps, from the
logs `gpu-validate.sh cublas` wrote, and prints one PASS/FAIL line per claim (exit 1 on any FAIL):

  python3 scripts/gpu-cublas-verdicts.py LOGDIR

- the libcublas / libcublasLt that torch maps (/proc/self/maps after a GEMM on the GPU) is the
  file the probe names as torch's copy, and it is among the copies the probe lists;
- the version the probe gives torch's cuBLASLt (read without loading it) is the one
  cublasLtGetVersion() returns in that process;
- the ratio of probe to `nvidia-smi --query-gpu` medians from bench/ (reported, not judged)."""
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
    start, end = text.find("{"), text.rfind("}")
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


facts = flatten(json_of("cublas-probe-json").get("facts", {}))
truth = body("cublas-truth")
# Only the lines the script printed (the log's first line is the command, script included).
mapped = {m.group(1): m.group(2) for m in re.finditer(r"^mapped (libcublas(?:Lt)?)\S* (\S+)$", truth, re.M)}
lt_version = re.search(r"^cublasLtGetVersion (\d+)$", truth, re.M)
copies = {v for k, v in facts.items() if re.fullmatch(r"cublaslt\.copies\[\d+\]\.path", k)}

for lib, key in (("libcublasLt", "cublaslt"), ("libcublas", "cublas")):
    real = mapped.get(lib)
    verdict(real is not None and facts.get(f"torch.{key}.path") == real,
            f"torch's {lib}: doctor {facts.get(f'torch.{key}.path')}, process maps {real}")
verdict(mapped.get("libcublasLt") in copies, f"the mapped libcublasLt is among the doctor's {len(copies)} cuBLASLt copies")
if lt_version:
    n = int(lt_version.group(1))
    want = f"{n // 10000}.{n % 10000 // 100}.{n % 100}"
    got = str(facts.get("torch.cublaslt.version") or "")
    verdict(got == want or got.startswith(want + "."),
            f"torch's cuBLASLt version: doctor {got} ({facts.get('torch.cublaslt.reason', '')[:60]}...), cublasLtGetVersion {n}")
else:
    verdict(False, "the truth script printed no cublasLtGetVersion")

bench = body("cublas-bench")
ratio = re.search(r"^probe / nvidia-smi --query-gpu\s+(\S+)x", bench, re.M)
probe = re.search(r"^probe\s+(\S+)", bench, re.M)
smi = re.search(r"^nvidia_smi_query\s+(\S+)", bench, re.M)
print(f"INFO probe median {probe.group(1) if probe else '?'} ms, nvidia-smi --query-gpu "
      f"{smi.group(1) if smi else '?'} ms: ratio {ratio.group(1) if ratio else '?'}x (goal <= 0.5x, budget <= 1.0x)")
sys.exit(1 if failures else 0)
