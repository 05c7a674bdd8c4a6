#!/usr/bin/python3
"""The fleet benchmark: `nvte-doctor fleet` over N synthetic reports (bench/fleet-reports.py).

Usage: fleet-bench.py --bin NVTE_DOCTOR [--reports 20000] [--runs 3] [--out DIR]
                      [--max-seconds S] [--max-cpu-seconds S] [--max-mb M] [--max-lines L]
                      [--time-factor F] [--memory-factor F]

Writes two real reports (`check --format json` on the A100 and H100 snapshots with the shipped
workloads) as templates, generates N reports from them into DIR/reports, then runs `fleet DIR`
(text, the default) RUNS times, `fleet --by gpu,te` (the workload x configuration matrix, text
and JSON; the reports have at least 3 GPU models) once and `fleet --format json` once, each as its own process measured
with wait4(): wall time, CPU time (user + system) and peak RSS. Prints one line per measurement
and a JSON summary line; the median of the text runs is compared with the --max-* limits (exit 1
when one is exceeded, 2 when the harness broke). Without limits a timing fails nothing.
--time-factor multiplies the time limits and --memory-factor the memory limit: the test suite
passes its build's factors (cmake/Settings.cmake; more than 1 in the ASan + UBSan build, whose
binary does the same work several times slower and in several times the memory).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(here)


def measure(argv, stdout_path):
    with open(stdout_path, "w") as out:
        start = time.monotonic()
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024, "exit": code}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True)
    p.add_argument("--reports", type=int, default=20000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out", default=os.path.join(os.getcwd(), "fleet-bench-out"))
    p.add_argument("--max-seconds", type=float)
    p.add_argument("--max-cpu-seconds", type=float)
    p.add_argument("--max-mb", type=float)
    p.add_argument("--max-lines", type=int)
    p.add_argument("--time-factor", type=float, default=1.0)
    p.add_argument("--memory-factor", type=float, default=1.0)
    a = p.parse_args()
    scaled = {"wall_s": a.time_factor, "cpu_s": a.time_factor, "rss_mb": a.memory_factor}

    templates = os.path.join(a.out, "templates")
    reports = os.path.join(a.out, "reports")
    os.makedirs(templates, exist_ok=True)
    subprocess.run(["rm", "-rf", reports], check=True)
    paths = []
    for node in ("h100-node", "a100-node"):
        path = os.path.join(templates, node + ".json")
        with open(path, "w") as f:
            argv = [a.bin, "check", "--facts", os.path.join(repo, "tests/fixtures/snapshots", node + ".json"),
                    "--rules", os.path.join(repo, "rules"), "--format", "json",
                    # The snapshots have no TE; without an assumed release every verdict is unknown.
                    "--set", "te.version=2.18.0"]
            for w in sorted(os.listdir(os.path.join(repo, "packaging/workloads"))):
                argv += ["--workload", os.path.join(repo, "packaging/workloads", w)]
            if node == "h100-node":
                # The snapshot has no TE: without a release the verdicts are unknown (exit 3).
                argv += ["--set", "te.version=2.12.0"]
            if subprocess.run(argv, stdout=f).returncode not in (0, 1, 2):
                print("fleet-bench: the template check failed: " + " ".join(argv), file=sys.stderr)
                return 2
        paths.append(path)
    start = time.monotonic()
    subprocess.run([sys.executable, os.path.join(here, "fleet-reports.py"), str(a.reports), reports] + paths, check=True)
    generated = time.monotonic() - start
    size_mb = sum(os.path.getsize(os.path.join(reports, n)) for n in os.listdir(reports)) / 2**20
    print("generated %d reports (%.0f MB, %.0f KB each) in %.1f s" % (a.reports, size_mb, 1024 * size_mb / a.reports, generated))

    text_runs = []
    for i in range(a.runs):
        m = measure([a.bin, "fleet", reports], os.path.join(a.out, "fleet.txt"))
        text_runs.append(m)
        print("fleet (text) run %d: %.2f s wall, %.2f s CPU, %.0f MB peak RSS, exit %d" % (i + 1, m["wall_s"], m["cpu_s"], m["rss_mb"], m["exit"]))
    m = measure([a.bin, "fleet", reports, "--by", "gpu,te"], os.path.join(a.out, "fleet-matrix.txt"))
    print("fleet --by gpu,te (the matrix): %.2f s wall, %.2f s CPU, %.0f MB peak RSS, exit %d" % (m["wall_s"], m["cpu_s"], m["rss_mb"], m["exit"]))
    mj = measure([a.bin, "fleet", reports, "--by", "gpu,te", "--format", "json"], os.path.join(a.out, "fleet-matrix.json"))
    j = measure([a.bin, "fleet", reports, "--format", "json"], os.path.join(a.out, "fleet.json"))
    print("fleet --format json: %.2f s wall, %.2f s CPU, %.0f MB peak RSS, exit %d" % (j["wall_s"], j["cpu_s"], j["rss_mb"], j["exit"]))
    if any(r["exit"] not in (0, 1, 2) for r in text_runs + [j, m, mj]):
        print("fleet-bench: fleet exited 3 or died", file=sys.stderr)
        return 2
    with open(os.path.join(a.out, "fleet.txt")) as f:
        lines = f.read().count("\n")
    with open(os.path.join(a.out, "fleet-matrix.txt")) as f:
        matrix_lines = f.read().count("\n")
    matrix = json.load(open(os.path.join(a.out, "fleet-matrix.json")))["matrix"]
    gpu_models = len({g["key"]["gpu"] for g in matrix["groups"]})
    print("matrix: %d lines, %d workloads x %d configurations, %d GPU models" % (matrix_lines, len(matrix["workloads"]), len(matrix["groups"]), gpu_models))
    if gpu_models < 3:
        print("fleet-bench: the reports have %d GPU models, not >= 3" % gpu_models, file=sys.stderr)
        return 2
    nodes = json.load(open(os.path.join(a.out, "fleet.json")))["summary"]["nodes"]
    if nodes != a.reports:
        print("fleet-bench: fleet counted %d nodes, not %d" % (nodes, a.reports), file=sys.stderr)
        return 2
    summary = {"reports": a.reports, "report_mb": round(size_mb, 1), "runs": a.runs, "lines": lines,
               "wall_s": round(statistics.median(m["wall_s"] for m in text_runs), 3),
               "cpu_s": round(statistics.median(m["cpu_s"] for m in text_runs), 3),
               "rss_mb": round(max(m["rss_mb"] for m in text_runs), 1),
               "json_wall_s": round(j["wall_s"], 3), "json_rss_mb": round(j["rss_mb"], 1),
               "matrix_lines": matrix_lines, "matrix_cpu_s": round(m["cpu_s"], 3), "gpu_models": gpu_models}
    print(json.dumps(summary))
    over = []
    for key, limit in (("wall_s", a.max_seconds), ("cpu_s", a.max_cpu_seconds), ("rss_mb", a.max_mb), ("lines", a.max_lines),
                       ("matrix_lines", a.max_lines), ("matrix_cpu_s", a.max_cpu_seconds)):
        if limit is None:
            continue
        factor = scaled.get(key, scaled["cpu_s"] if key == "matrix_cpu_s" else 1.0)
        if factor != 1.0:
            print("limit %s: %g x %g = %g (this build's factor)" % (key, limit, factor, limit * factor))
        if summary[key] > limit * factor:
            over.append("%s %s > %s" % (key, summary[key], limit * factor))
    if over:
        print("fleet-bench: over the limits: " + ", ".join(over), file=sys.stderr)
        return 1
    return 0


sys.exit(main())
