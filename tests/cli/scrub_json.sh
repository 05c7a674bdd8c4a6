# Sourced by the CLI shell tests that compare two reports: scrub (stdin JSON -> stdout) drops what
# differs between two runs of the same answer (generated_at, the phases' seconds) and prints the
# rest with sorted keys, so `diff` compares answers only.
scrub() { python3 -c '
import json, sys
def scrub(x):
    if isinstance(x, dict):
        return {k: scrub(v) for k, v in x.items() if k not in ("generated_at", "seconds")}
    if isinstance(x, list):
        return [scrub(v) for v in x]
    return x
print(json.dumps(scrub(json.load(sys.stdin)), indent=1, sort_keys=True))'; }
