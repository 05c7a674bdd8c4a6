#!/usr/bin/python3
"""The Grafana dashboard (packaging/integrations/grafana) without a Grafana: Debian has none.

Usage: grafana_dashboard_test.py SOURCE_DIR WORK_DIR

1. Structure: the dashboard validates against grafana-dashboard.schema.json (written from
   Grafana's documented dashboard JSON model), and the checks a schema cannot say: panel ids
   unique, panels inside the 24-column grid without overlapping, refIds unique per panel, every
   $variable of a query defined, the provisioning file points at the installed dashboard.
2. Queries: every panel query reads only the shipped recording rules (nvte_doctor:...), or a
   doctor metric inside an aggregation that drops `instance`, and no variable is a node. Each is
   rendered with promtool on the recording rules' test data (prometheus_recording_test.yml):
   `count by (instance) (QUERY) > bool 0` must give exactly one series without labels, i.e. the
   query returns series and none of them is per node. promtool missing: step 2 is skipped (77)
   after step 1 passed.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import jsonschema
import yaml

source, work = sys.argv[1], sys.argv[2]
here = os.path.join(source, "tests", "packaging")
grafana = os.path.join(source, "packaging", "integrations", "grafana")
rules = os.path.join(source, "packaging", "integrations", "prometheus", "nvte-doctor.rules.yml")
failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message)


dashboard = json.load(open(os.path.join(grafana, "nvte-doctor-dashboard.json")))
schema = json.load(open(os.path.join(here, "grafana-dashboard.schema.json")))
for error in jsonschema.Draft202012Validator(schema).iter_errors(dashboard):
    fail("schema: %s at %s" % (error.message, "/".join(map(str, error.absolute_path))))
if "${DS_" in json.dumps(dashboard):
    fail("a ${DS_...} placeholder: only the import UI fills those in, file provisioning does not")

variables = {v.get("name") for v in dashboard.get("templating", {}).get("list", [])}
builtin = {"__range", "__interval", "__rate_interval", "__range_s", "__interval_ms"}
recorded = set()
for group in yaml.safe_load(open(rules))["groups"]:
    recorded |= {r["record"] for r in group["rules"] if "record" in r}

ids, cells, queries = set(), {}, []
for panel in dashboard.get("panels", []):
    title = panel.get("title", "?")
    if panel.get("id") in ids:
        fail("panel id %s used twice" % panel.get("id"))
    ids.add(panel.get("id"))
    g = panel.get("gridPos", {})
    if g.get("x", 0) + g.get("w", 0) > 24:
        fail("%s: beyond the 24 grid columns" % title)
    for x in range(g.get("x", 0), g.get("x", 0) + g.get("w", 0)):
        for y in range(g.get("y", 0), g.get("y", 0) + g.get("h", 0)):
            if (x, y) in cells:
                fail("%s overlaps %s" % (title, cells[(x, y)]))
                break
            cells[(x, y)] = title
    refs = [t.get("refId") for t in panel.get("targets", [])]
    if len(refs) != len(set(refs)):
        fail("%s: a refId used twice" % title)
    for target in panel.get("targets", []):
        expr = target.get("expr", "")
        for name in re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", expr):
            if name not in variables and name not in builtin:
                fail("%s: $%s is not a dashboard variable" % (title, name))
        if "instance" in expr:
            fail("%s: a per-node query (instance) in %s" % (title, expr))
        for name in re.findall(r"nvte_doctor:[a-z_:]+", expr):
            if name not in recorded:
                fail("%s: %s is not a recording rule of nvte-doctor.rules.yml" % (title, name))
        queries.append((title, expr))
for v in dashboard.get("templating", {}).get("list", []):
    if v.get("type") == "query" and ("instance" in v.get("definition", "") or "host" in v.get("definition", "")):
        fail("variable %s lists nodes: the dashboard is per workload and GPU model, not per node" % v["name"])
titles = " ".join(p.get("title", "").lower() for p in dashboard.get("panels", []))
for needed in ("extrapolated", "wrong results", "workload × gpu model"):
    if needed not in titles:
        fail("no panel about %s" % needed)

provisioning = yaml.safe_load(open(os.path.join(grafana, "provisioning.yaml")))
provider = provisioning["providers"][0]
if provider.get("type") != "file" or provider["options"]["path"] != "/usr/share/nvte-doctor/integrations/grafana":
    fail("provisioning.yaml does not point at the installed dashboard directory")
print("structure: %d panels, %d queries, %d failures" % (len(ids), len(queries), len(failures)))

if failures:
    sys.exit(1)
if not shutil.which("promtool"):
    print("promtool not installed: the queries are not rendered (skipped)")
    sys.exit(77)

# Render every query on the recording rules' test data.
data = yaml.safe_load(open(os.path.join(here, "prometheus_recording_test.yml")))
series = data["tests"][0]["input_series"]
values = {"workload": ".*", "gpu": ".*", "__range": "1d", "__interval": "1m", "__rate_interval": "5m", "__range_s": "86400"}
tests = []
for title, expr in queries:
    rendered = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: values.get(m.group(1), m.group(0)), expr)
    tests.append({"expr": "count by (instance) (%s) > bool 0" % rendered, "eval_time": "5m",
                  "exp_samples": [{"labels": "{}", "value": 1}]})
os.makedirs(work, exist_ok=True)
path = os.path.join(work, "grafana_queries_test.yml")
with open(path, "w") as f:
    yaml.safe_dump({"rule_files": [os.path.abspath(rules)], "evaluation_interval": "1m",
                    "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": tests}]}, f, sort_keys=False)
run = subprocess.run(["promtool", "test", "rules", path], capture_output=True, text=True)
if run.returncode != 0:
    print(run.stdout + run.stderr)
    print("FAIL: a dashboard query returns no series, or per-node series, on the recording rules' test data")
    sys.exit(1)
print("queries: all %d return series, none per node (promtool test rules %s)" % (len(tests), path))
