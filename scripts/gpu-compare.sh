#!/usr/bin/env bash
# Compares two nvte-doctor binaries on the GPU node with TE and the flash-attn-like extension on
# PYTHONPATH (as `scripts/gpu-validate.sh bench-native` leaves them: TE in $TE_PREFIX, the
# extension in $EXT_DIR/good): `check -vv` with three HF workloads and `probe -vv` laps from each,
# the node's facts as JSON, then nvte-bench-measure interleaved, three rounds of 20 runs (2
# warm-up) of `probe` and `check + 3 workloads` per binary. Issue 40 round 9 ran it as
# .gpu-carry/diag.sh (docs/records/validation.md).
#   scripts/gpu-compare.sh [NEW [OLD]]   default .gpu-carry/nvte-doctor and .gpu-carry/compare/nvte-doctor
# Writes $OUT/compare.tar.gz (the logs and facts) and $OUT/measure.jsonl; prints the medians.
set -u
cd "$(dirname "$0")/.." || exit 3
new=${1:-.gpu-carry/nvte-doctor}
old=${2:-.gpu-carry/compare/nvte-doctor}
measure=${NVTE_BENCH_MEASURE:-.gpu-carry/nvte-bench-measure}
out=${OUT:?OUT names the directory for the results}
pp=${TE_PREFIX:-/tmp/te-prefix}:$PWD/.gpu-te/py:${EXT_DIR:-/tmp/nvte-ext}/good
H=tests/fixtures/hf
check=(check --rules rules --set te.version=2.18.0 --hf-config "$H/llama-3-8b/config.json" --hf-config "$H/mixtral-8x7b/config.json"
       --hf-config "$H/deepseek-v3/config.json")
d=$out/compare
mkdir -p "$d"
for b in old new; do
  bin=$new; [[ $b == old ]] && bin=$old
  for i in 1 2 3 4 5 6; do PYTHONPATH=$pp "$bin" "${check[@]}" -vv >/dev/null 2>"$d/$b-check-$i.log"; done
  for i in 1 2 3; do PYTHONPATH=$pp "$bin" probe -vv >/dev/null 2>"$d/$b-probe-$i.log"; done
done
PYTHONPATH=$pp "$new" probe --format json >"$d/facts-te.json" 2>/dev/null
for round in 1 2 3; do
  for b in old new; do
    bin=$new; [[ $b == old ]] && bin=$old
    "$measure" measure --name "$b-probe-$round" --runs 20 --warmup 2 --env "PYTHONPATH=$pp" -- "$bin" probe
    "$measure" measure --name "$b-check3-$round" --runs 20 --warmup 2 --env "PYTHONPATH=$pp" -- "$bin" "${check[@]}"
  done
done >"$out/measure.jsonl"
python3 - "$out/measure.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    print(d.get("name"), round(d.get("median_ms", 0), 2), round(d.get("min_ms", 0), 2), d.get("outcomes", ""))
PY
tar czf "$out/compare.tar.gz" -C "$out" compare && rm -rf "$d"
