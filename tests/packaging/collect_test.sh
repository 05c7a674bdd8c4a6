#!/bin/bash
# Collection with existing engines, end to end: Debian's nginx with its WebDAV module on a
# loopback port is the collector; five "nodes" (`nvte-doctor run` on the A100 and H100 snapshots
# under their own host names and state directories) push their reports there with
# push.method PUT and push.url .../reports/{host}.json, and write node_exporter textfiles; then
#   - every pushed file is byte for byte the node's own report, one file per host, and a second
#     run replaces the file rather than adding one;
#   - `nvte-doctor fleet` over the collected directory groups the nodes into the two
#     configurations with Slurm host lists (JSON valid against fleet.schema.json);
#   - the textfiles, as Prometheus would scrape them, give the same grouping through the shipped
#     recording rules (promtool test rules), when promtool is installed.
# Skipped (77) when nginx is not installed (apt-get install nginx; scripts/bootstrap.sh does).
# Usage: collect_test.sh NVTE_DOCTOR SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
step() { echo "--- $*"; }

nginx=$(command -v nginx || ls /usr/sbin/nginx 2>/dev/null)
[[ -x "$nginx" ]] || { echo "nginx not installed (apt-get install nginx): skipped"; exit 77; }
work=$(mktemp -d)
nginx_pid=""
cleanup() {
  [[ -z "$nginx_pid" ]] || { kill "$nginx_pid" 2>/dev/null; wait "$nginx_pid" 2>/dev/null; }
  rm -rf "$work"
}
trap cleanup EXIT
chmod 755 "$work"

step "nginx with WebDAV PUT on 127.0.0.1"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/collected/reports" "$work/nginx/tmp"
# nginx's workers run as nobody when started by root: they write the collected files.
[[ $(id -u) != 0 ]] || chown -R nobody "$work/collected" "$work/nginx/tmp"
cat > "$work/nginx/nginx.conf" <<EOF
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 64; }
http {
  access_log $work/nginx/access.log;
  client_body_temp_path $work/nginx/tmp/body;
  proxy_temp_path $work/nginx/tmp/proxy;
  fastcgi_temp_path $work/nginx/tmp/fastcgi;
  uwsgi_temp_path $work/nginx/tmp/uwsgi;
  scgi_temp_path $work/nginx/tmp/scgi;
  server {
    listen 127.0.0.1:$port;
    root $work/collected;
    location /reports/ {
      dav_methods PUT;
      create_full_put_path on;
      dav_access user:rw group:r all:r;
      client_max_body_size 16m;
      limit_except GET PUT { deny all; }
    }
  }
}
EOF
"$nginx" -p "$work/nginx" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf" -g 'daemon off;' &
nginx_pid=$!
for _ in $(seq 50); do
  curl -s -o /dev/null "http://127.0.0.1:$port/" && break
  sleep 0.1
done
curl -s -o /dev/null "http://127.0.0.1:$port/" || { cat "$work/nginx/error.log"; echo "FAIL nginx did not start"; exit 1; }

step "five nodes run and push (PUT .../reports/{host}.json)"
run_node() { # HOST SNAPSHOT
  local host=$1 snapshot=$2 dir="$work/node-$1"
  mkdir -p "$dir"
  cat > "$dir/config.yaml" <<EOF
state_dir: $dir/state
outputs:
  prometheus: $work/textfile/$host.prom
selftest:
  policy: never
push:
  url: http://127.0.0.1:$port/reports/{host}.json
  method: PUT
  retries: 0
EOF
  mkdir -p "$work/textfile"
  "$bin" run --force --config "$dir/config.yaml" --rules "$src/rules" --facts "$src/tests/fixtures/snapshots/$snapshot" \
    --set "system.hostname=$host" > "$dir/run.log" 2>&1
  local rc=$?
  ((rc != 3)) || { cat "$dir/run.log"; fail "run on $host exited 3"; }
  [[ -s "$work/collected/reports/$host.json" ]] || { cat "$dir/run.log"; fail "$host's report did not arrive"; return; }
  cmp -s "$dir/state/report.json" "$work/collected/reports/$host.json" || fail "$host: the pushed report differs from the node's"
}
for host in gpu0001 gpu0002 gpu0003 gpu0007; do run_node "$host" h100-node.json; done
run_node a100-01 a100-node.json
run_node gpu0002 h100-node.json # a second run replaces the node's file
ls "$work/collected/reports"
n=$(ls "$work/collected/reports" | wc -l)
((n == 5)) || fail "the collector holds $n files, not 5"
grep -c '"PUT /reports/' "$work/nginx/access.log" | grep -qx 6 || fail "nginx did not log 6 PUTs: $(cat "$work/nginx/access.log")"

step "fleet over the collected directory"
"$bin" fleet "$work/collected/reports" > "$work/fleet.txt"
echo "fleet exited $?"
cat "$work/fleet.txt"
"$bin" fleet "$work/collected/reports" --format json > "$work/fleet.json"
python3 - "$work/fleet.json" <<'EOF' || fail "fleet's configurations"
import json, sys
d = json.load(open(sys.argv[1]))
configs = {(c["driver"], c["count"], c["hostlist"]) for c in d["configurations"]}
print("configurations:", configs)
assert d["summary"]["nodes"] == 5
assert len(d["configurations"]) == 2
assert any(count == 4 and hosts == "gpu[0001-0003,0007]" for _, count, hosts in configs)
assert any(count == 1 and hosts == "a100-01" for _, count, hosts in configs)
EOF
grep -q 'gpu\[0001-0003,0007\]' "$work/fleet.txt" || fail "the text has no host list gpu[0001-0003,0007]"
python3 "$src/tests/validate_report.py" "$src/packaging/schema/fleet.schema.json" "$work/fleet.json"
[[ $? == 1 ]] && fail "fleet's JSON does not match fleet.schema.json"

step "the textfiles through the recording rules"
if ! command -v promtool >/dev/null; then
  echo "promtool not installed: the recording rules are not checked here"
else
  # Each textfile sample as node_exporter would export it: the scrape adds instance="HOST".
  python3 - "$work/textfile" "$src/packaging/integrations/prometheus/nvte-doctor.rules.yml" "$work/fleet.json" > "$work/promtest.yml" <<'EOF'
import glob, json, os, re, sys
textdir, rules, fleet = sys.argv[1:]
series = []
for path in sorted(glob.glob(os.path.join(textdir, "*.prom"))):
    host = os.path.basename(path)[:-5]
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        metric, value = line.rsplit(" ", 1)
        name, _, labels = metric.partition("{")
        labels = labels.rstrip("}")
        labels = f'instance="{host}"' + ("," + labels if labels else "")
        series.append({"series": f"{name}{{{labels}}}", "values": f"{value.strip()}x5"})
# The expected samples are fleet's configurations: nodes and worst status per GPU model and stack.
rank = {"OK": 0, "WARNING": 1, "CRITICAL": 2}
nodes, worst = [], []
for c in json.load(open(fleet))["configurations"]:
    labels = ",".join(f'{k}="{c[k]}"' for k in ("gpu", "driver", "cuda", "cudnn", "nccl", "torch", "te") if c[k])
    nodes.append({"labels": f"nvte_doctor:configuration:nodes{{{labels}}}", "value": c["count"]})
    worst.append({"labels": f"nvte_doctor:configuration:worst_status{{{labels}}}", "value": rank.get(c["worst_status"], 3)})
print(json.dumps({"rule_files": [rules], "evaluation_interval": "1m", "tests": [{"interval": "1m", "input_series": series,
      "promql_expr_test": [{"expr": "nvte_doctor:configuration:nodes", "eval_time": "2m", "exp_samples": nodes},
                           {"expr": "nvte_doctor:configuration:worst_status", "eval_time": "2m", "exp_samples": worst}]}]}))
EOF
  promtool test rules "$work/promtest.yml" || fail "the recording rules do not group the nodes as fleet does"
fi

((failures == 0)) && echo "collect test passed"
((failures == 0))
