#!/usr/bin/env python3
"""Walks TE's two attention selectors across its releases and lists every guard with the release,
commit and PR that introduced it (README.md says what a guard is and how the list is used).

Usage: te_history.py --te ~/src/TransformerEngine [--out tools/te-history/guards.json] [--check]

Python 3 standard library only; TE's source is read with `git show`, never checked out or
copied. The output is written atomically; `--check` compares instead and exits 1 when the
committed file is stale.
"""

import argparse
import difflib
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cppguards  # noqa: E402
import pyguards  # noqa: E402

PY_PATHS = (
    "transformer_engine/pytorch/attention/dot_product_attention/utils.py",  # 2.3+
    "transformer_engine/pytorch/dot_product_attention/utils.py",            # 2.2
    "transformer_engine/pytorch/attention.py",                              # <= 2.1
)
CPP_PATH = "transformer_engine/common/fused_attn/fused_attn.cpp"
BASELINE = "v1.11"          # guards already here are "before 1.12", the first modelled release
BRANCHES = ("release_v2.19", "HEAD")
REPO_URL = "https://github.com/NVIDIA/TransformerEngine"
HERE = Path(__file__).resolve().parent


class Git:
    def __init__(self, path):
        self.path = str(path)

    def run(self, *args, check=True):
        r = subprocess.run(["git", "-C", self.path, *args], capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout if r.returncode == 0 else None

    @lru_cache(maxsize=None)
    def blob(self, commit, path):
        out = self.run("rev-parse", "--verify", "-q", f"{commit}:{path}", check=False)
        return out.strip() if out else None

    @lru_cache(maxsize=None)
    def text(self, blob):
        return self.run("cat-file", "blob", blob)

    @lru_cache(maxsize=None)
    def commit_of(self, ref):
        return self.run("rev-parse", f"{ref}^{{commit}}").strip()


def release_refs(git):
    """v1.11 (baseline), every v* tag from v1.12 in version order, release_v2.19 and HEAD."""
    tags = [t for t in git.run("tag").split() if re.fullmatch(r"v\d+\.\d+(\.\d+)?", t)]
    key = lambda t: tuple(int(x) for x in t[1:].split("."))
    tags = sorted((t for t in tags if key(t) >= (1, 12)), key=key)
    return [BASELINE] + tags + [b for b in BRANCHES if git.run("rev-parse", "--verify", "-q", b, check=False)]


def version_of(git, ref):
    """A tag's release (v2.14 -> 2.14.0; the VERSION file of v2.2.1 still says 2.2.0), else the
    VERSION file of the branch."""
    m = re.fullmatch(r"v(\d+)\.(\d+)(?:\.(\d+))?", ref)
    if m:
        return f"{m.group(1)}.{m.group(2)}.{m.group(3) or 0}"
    for path in ("build_tools/VERSION.txt", "VERSION.txt", "VERSION"):
        out = git.run("show", f"{ref}:{path}", check=False)
        if out:
            return out.strip()
    raise RuntimeError(f"{ref}: no VERSION file")


def py_path(git, commit):
    for path in PY_PATHS:
        blob = git.blob(commit, path)
        if blob and "def get_attention_backend" in git.text(blob):
            return path, blob
    return None, None


@lru_cache(maxsize=None)
def _py_guards(git, blob):
    return {g.key(): g for g in pyguards.guards(git.text(blob))}


@lru_cache(maxsize=None)
def _cpp_guards(git, blob):
    return {g.key(): g for g in cppguards.guards(git.text(blob))}


def guards_at(git, commit):
    """{(source, key): (path, guard)} for both selectors at a commit."""
    out = {}
    path, blob = py_path(git, commit)
    if blob:
        for k, g in _py_guards(git, blob).items():
            out[("python", k)] = (path, g)
    blob = git.blob(commit, CPP_PATH)
    if blob:
        try:
            for k, g in _cpp_guards(git, blob).items():
                out[("cpp", k)] = (CPP_PATH, g)
        except LookupError:
            pass
    return out


def keys_at(git, commit, source):
    if source == "python":
        _, blob = py_path(git, commit)
        return set(_py_guards(git, blob)) if blob else set()
    blob = git.blob(commit, CPP_PATH)
    if not blob:
        return set()
    try:
        return set(_cpp_guards(git, blob))
    except LookupError:
        return set()


def introducing_commit(git, since, until, source, key):
    """The first commit in since..until whose tree has the guard and whose first parent has not."""
    paths = PY_PATHS if source == "python" else (CPP_PATH,)
    commits = git.run("rev-list", "--topo-order", "--reverse", f"{since}..{until}", "--", *paths).split()
    for c in commits:
        if key in keys_at(git, c, source):
            parent = git.run("rev-parse", "--verify", "-q", f"{c}^1", check=False)
            if not parent or key not in keys_at(git, parent.strip(), source):
                return c
    return None


@lru_cache(maxsize=None)
def commit_info(git, commit):
    subject, body = git.run("show", "-s", "--format=%s%x00%b", commit).split("\x00", 1)
    date = git.run("show", "-s", "--format=%cs", commit).strip()
    pr = re.findall(r"\(#(\d+)\)", subject)
    picked = re.search(r"cherry picked from commit ([0-9a-f]{40})", body)
    if not pr and picked:
        pr = re.findall(r"\(#(\d+)\)", git.run("show", "-s", "--format=%s", picked.group(1)) or "")
    return {"sha": commit, "subject": subject.strip(), "date": date, "pr": int(pr[-1]) if pr else None}


def guard_id(source, key):
    return ("py-" if source == "python" else "cpp-") + hashlib.sha1(key.encode()).hexdigest()[:10]


def describe(source, guard):
    if source == "python":
        parts = [f"({c})" if " or " in c and len(guard.path) > 1 else c for c in guard.path]
        return {"kind": "filter", "backend": guard.backend, "condition": " and ".join(parts),
                "message": guard.message}
    return {"kind": guard.kind, "backend": guard.backend, "condition": guard.condition,
            "message": guard.label}


def pair_changed(new, gone):
    """The guard of the previous release a new one replaces: same source, backend and message
    (when it has one), else the most similar condition; None when nothing is close."""
    best, best_ratio = None, 0.0
    for old in gone:
        if old["source"] != new["source"] or old["backend"] != new["backend"] or old["kind"] != new["kind"]:
            continue
        ratio = difflib.SequenceMatcher(None, old["condition"], new["condition"]).ratio()
        if new["message"] and old["message"]:
            if old["message"] == new["message"]:
                ratio += 1.0
            elif difflib.SequenceMatcher(None, old["message"], new["message"]).ratio() < 0.6:
                continue
        if ratio > best_ratio:
            best, best_ratio = old, ratio
    return best if best_ratio >= 0.6 else None


def change_kind(new, old, git_guards):
    """'new' (no predecessor), 'widens' (a requirement that only gained alternatives), 'changed'."""
    if old is None:
        return "new"
    if new["source"] == "cpp" and new["kind"] == "requirement":
        before, after = set(git_guards[old["id"]].disjuncts), set(git_guards[new["id"]].disjuncts)
        if before < after:
            return "widens"
    return "changed"


def blob_url(ref, commit, path, line):
    at = ref if ref.startswith("v") else commit
    return f"{REPO_URL}/blob/{at}/{path}#L{line}"


def build(git):
    refs = release_refs(git)
    per_ref = {ref: guards_at(git, git.commit_of(ref)) for ref in refs}
    versions = {ref: version_of(git, ref) for ref in refs}
    first_seen, last_seen, objects = {}, {}, {}
    for i, ref in enumerate(refs):
        for k, (path, g) in per_ref[ref].items():
            first_seen.setdefault(k, i)
            last_seen[k] = i
            objects.setdefault(k, (path, g))
    records, guard_obj = [], {}
    for k, i in first_seen.items():
        source, key = k
        path, g = per_ref[refs[i]][k]
        gid = guard_id(source, key)
        guard_obj[gid] = g
        rec = {"id": gid, "source": source, "function": "get_attention_backend" if source == "python"
               else "nvte_get_fused_attn_backend", "file": path, **describe(source, g)}
        ref = refs[i]
        line = min(getattr(g, "own", None) or [g.line])  # a Python guard's innermost `if`
        rec["introduced"] = {"release": versions[ref] if i else f"<={versions[ref]}", "ref": ref,
                             "line": line, "url": blob_url(ref, git.commit_of(ref), path, line)}
        if i and not set(range(i, last_seen[k] + 1)) <= {j for j in range(len(refs)) if k in per_ref[refs[j]]}:
            rec["introduced"]["gaps"] = [refs[j] for j in range(i, last_seen[k] + 1) if k not in per_ref[refs[j]]]
        if last_seen[k] < len(refs) - 1:
            gone = refs[last_seen[k] + 1]
            rec["removed"] = {"release": versions[gone], "ref": gone}
        if i:
            commit = introducing_commit(git, refs[i - 1], ref, source, key)
            rec["commit"] = commit_info(git, commit) if commit else None
        records.append(rec)
    by_id = {r["id"]: r for r in records}
    for rec in records:
        i = refs.index(rec["introduced"]["ref"])
        if not i:
            rec["change"] = "baseline"
            continue
        gone = [by_id[guard_id(s, k)] for (s, k) in per_ref[refs[i - 1]] if (s, k) not in per_ref[refs[i]]]
        old = pair_changed(rec, gone)
        rec["change"] = change_kind(rec, old, guard_obj)
        if old is not None:
            rec["replaces"] = old["id"]
    order = {ref: n for n, ref in enumerate(refs)}
    records.sort(key=lambda r: (order[r["introduced"]["ref"]], r["source"], r["introduced"]["line"]))
    return refs, versions, records


def classify(records, verdicts):
    """Adds each guard's verdict: its own entry in verdicts.json, else its commit's, else the
    automatic one for baseline guards and pure widenings; unclassified otherwise."""
    by_guard, by_commit = verdicts.get("guards", {}), verdicts.get("commits", {})
    missing = []
    for rec in records:
        v = by_guard.get(rec["id"])
        rec["verdict_source"] = "guard"
        sha = (rec.get("commit") or {}).get("sha", "")
        if v is None and sha:
            v = next((by_commit[c] for c in by_commit if sha.startswith(c)), None)
            rec["verdict_source"] = "commit"
        if v is None:
            rec["verdict_source"] = "automatic"
        if v is None and rec["change"] == "baseline":
            v = {"verdict": "before-1.12", "why": "present in TE 1.11, before the first release the doctor models"}
        if v is None and rec["change"] == "widens":
            v = {"verdict": "widening", "why": "the requirement only gained alternatives: more workloads pass"}
        if v is None:
            v = {"verdict": "unclassified", "why": ""}
            missing.append(rec)
        rec["verdict"] = v["verdict"]
        rec["why"] = v.get("why", "")
        for field in ("evidence", "rule", "rules"):
            if field in v:
                rec[field] = v[field]
    return missing


# --- applies_to against TE's code -----------------------------------------------------------------

_REF = re.compile(r"https://github\.com/NVIDIA/TransformerEngine/blob/(v[\d.]+)/([\w/.]+)#L(\d+)")


def read_rules(root):
    """(file, id, te range or None, [(tag, path, line)]) for every rule under root; a line-based
    reader for the shipped style (`- id:` items, flow `applies_to: {te: ...}`), enough for this
    dev-time check (the real loader is src/rules)."""
    out = []
    for path in sorted(Path(root).rglob("*.yaml")):
        current = None
        for line in path.read_text().splitlines():
            m = re.match(r"\s*- id:\s*(\S+)", line)
            if m:
                current = {"file": str(path), "id": m.group(1), "te": None, "refs": []}
                out.append(current)
                continue
            if current is None:
                continue
            m = re.match(r"\s*backend:\s*(\S+)", line)
            if m:
                current["backend"] = m.group(1)
            m = re.search(r"applies_to:\s*\{[^}]*\bte:\s*\"([^\"]+)\"", line)
            if m:
                current["te"] = m.group(1)
            for tag, ref_path, n in _REF.findall(line):
                current["refs"].append((tag, ref_path, int(n)))
    return out


def _vkey(text):
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3]) + (0,) * (3 - len(re.findall(r"\d+", text)[:3]))


def lower_bound(te_range):
    for part in (te_range or "").split(","):
        part = part.strip()
        if part.startswith(">="):
            return part[2:]
    return None


def _same_backend(rule_backend, source, guard):
    if rule_backend is None:
        return True
    family = rule_backend.split(".")[0]
    if source == "cpp":
        return family == "fused_attention"
    return {"fused_attention": "FusedAttention", "flash_attention": "FlashAttention",
            "unfused_attention": "UnfusedDotProductAttention"}[family] in guard.backend


def check_references(git, root):
    """Backend-filter rules citing a selector line that belongs to no guard of their backend."""
    findings = []
    for rule in read_rules(root):
        for tag, path, n in rule["refs"]:
            if "backend" not in rule or (path not in PY_PATHS and path != CPP_PATH):
                continue
            try:
                at = guards_at(git, git.commit_of(tag))
            except RuntimeError:
                continue
            near = [(s, g) for (s, k), (p, g) in at.items() if p == path
                    and any(abs(n - x) <= 2 for x in (getattr(g, "own", None) or g.lines))]
            if not any(_same_backend(rule["backend"], s, g) for s, g in near):
                findings.append((rule["file"], rule["id"], rule["backend"], tag, path, n))
    return findings


def check_rules(git, records, root):
    """Rules whose applies_to starts later than the guard their reference line belongs to."""
    by_key = {}
    for rec in records:
        by_key.setdefault(rec["id"], rec)
    findings = []
    for rule in read_rules(root):
        low = lower_bound(rule["te"])
        if low is None:
            continue
        for tag, path, n in rule["refs"]:
            if path not in PY_PATHS and path != CPP_PATH:
                continue
            try:
                at = guards_at(git, git.commit_of(tag))
            except RuntimeError:
                continue
            own = [(s, k) for (s, k), (p, g) in at.items() if p == path and n in (getattr(g, "own", None) or g.lines)]
            spans = [(len(g.lines), (s, k)) for (s, k), (p, g) in at.items() if p == path and n in g.lines]
            hits = own if own else ([min(spans)[1]] if spans else [])
            for s, k in hits:
                rec = by_key.get(guard_id(s, k))
                if rec is None:
                    continue
                origin = rec
                while origin.get("replaces") in by_key:
                    origin = by_key[origin["replaces"]]
                intro = origin["introduced"]["release"].lstrip("<=")
                if _vkey(low) > _vkey(intro):
                    findings.append((rule["file"], rule["id"], rule["te"], tag, n,
                                     rec["introduced"]["release"], origin["introduced"]["release"], rec["id"]))
    return findings


# --- the table in docs/knowledge.md ----------------------------------------------------------------

BEGIN, END = "<!-- te-history:begin -->", "<!-- te-history:end -->"


def _what(rec):
    text = rec["message"] or rec["condition"]
    text = re.sub(r"^(Disabling|Warning:)\s*", "", text).replace("|", "/")
    return text if len(text) <= 90 else text[:87] + "..."


def knowledge_table(records):
    """Markdown: one row per guard after TE 1.11 (release, id, backend, what, commit, verdict)."""
    rows = ["| release | guard | backend | what it refuses (TE's message or clause) | commit (PR) | verdict |",
            "|---|---|---|---|---|---|"]
    for rec in records:
        if rec["change"] == "baseline":
            continue
        c = rec.get("commit") or {}
        commit = f"{c.get('sha', '')[:9]}" + (f" (#{c['pr']})" if c.get("pr") else "")
        verdict = rec["verdict"] + (f": `{rec['rule']}`" if rec.get("rule") else "")
        if rec.get("verdict_source") == "guard" and not rec.get("rule"):
            verdict += f": {rec['why']}"
        rows.append(f"| {short_release(rec['introduced']['release'])} | [{rec['id']}]({rec['introduced']['url']}) | "
                    f"{rec['backend']} | {_what(rec)} | {commit} | {verdict} |")
    return "\n".join(rows)


def why_table(records, verdicts):
    """Markdown: one row per commit with the reason of its verdict."""
    rows = ["| commit (PR) | release | verdict | why |", "|---|---|---|---|"]
    seen = set()
    for rec in records:
        c = rec.get("commit") or {}
        sha = c.get("sha", "")
        key = next((k for k in verdicts.get("commits", {}) if sha.startswith(k)), None)
        if not key or key in seen:
            continue
        seen.add(key)
        v = verdicts["commits"][key]
        pr = f" (#{c['pr']})" if c.get("pr") else ""
        rows.append(f"| {sha[:9]}{pr} | {short_release(rec['introduced']['release'])} | {v['verdict']} | {v['why']} |")
    return "\n".join(rows)


def short_release(release):
    parts = [int(x) for x in re.findall(r"\d+", release)[:3]] + [0, 0]
    return f"{parts[0]}.{parts[1]}" if parts[2] == 0 else f"{parts[0]}.{parts[1]}.{parts[2]}"


def write_knowledge(path, records, verdicts):
    text = Path(path).read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path}: no {BEGIN} ... {END} block")
    counts = {}
    for r in records:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    body = (f"{BEGIN}\n<!-- written by tools/te-history/te_history.py --knowledge; edit verdicts.json, not this table -->\n\n"
            f"{sum(counts.values())} guards: " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items())) +
            ".\n\nWhy, per commit:\n\n" + why_table(records, verdicts) +
            "\n\nEvery guard after TE 1.11 (the link is the guard's line at the release that introduced it):\n\n" +
            knowledge_table(records) + f"\n{END}")
    before, rest = text.split(BEGIN, 1)
    after = rest.split(END, 1)[1]
    fd, tmp = tempfile.mkstemp(dir=str(Path(path).parent), prefix=".knowledge.")
    with os.fdopen(fd, "w") as f:
        f.write(before + body + after)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--te", required=True, help="a TransformerEngine git checkout or bare mirror")
    ap.add_argument("--out", default=str(HERE / "guards.json"))
    ap.add_argument("--verdicts", default=str(HERE / "verdicts.json"))
    ap.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    ap.add_argument("--knowledge", metavar="MD",
                    help="rewrite the guard tables between the te-history markers of this Markdown file")
    ap.add_argument("--check-rules", metavar="DIR",
                    help="list rules under DIR whose applies_to starts later than the TE guard they cite")
    args = ap.parse_args()
    git = Git(args.te)
    refs, versions, records = build(git)
    verdicts = json.loads(Path(args.verdicts).read_text()) if Path(args.verdicts).exists() else {}
    missing = classify(records, verdicts)
    if args.check_rules:
        found = check_rules(git, records, args.check_rules)
        for f, rid, te, tag, n, intro, origin, gid in found:
            print(f"{f}: {rid}: applies_to te {te!r}, but {tag} line {n} is guard {gid}, this form "
                  f"since {intro}, first form since {origin}")
        refs = check_references(git, args.check_rules)
        for f, rid, backend, tag, path, n in refs:
            print(f"{f}: {rid} ({backend}): {tag} {path.rsplit('/', 1)[-1]}#L{n} is no guard of that backend")
        return 1 if found or refs else 0
    doc = {"schema": 1,
           "te_head": git.commit_of("HEAD"),
           "refs": [{"ref": r, "version": versions[r], "commit": git.commit_of(r)} for r in refs],
           "guards": records}
    if args.knowledge:
        write_knowledge(args.knowledge, records, verdicts)
    text = json.dumps(doc, indent=1, sort_keys=False) + "\n"
    if args.check:
        same = Path(args.out).exists() and Path(args.out).read_text() == text
        print("up to date" if same else f"{args.out} is stale: rerun without --check")
        return 0 if same else 1
    fd, tmp = tempfile.mkstemp(dir=str(Path(args.out).parent), prefix=".guards.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, args.out)
    counts = {}
    for r in records:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    print(f"{len(records)} guards over {len(refs)} refs -> {args.out}: " +
          ", ".join(f"{n} {v}" for v, n in sorted(counts.items())))
    for r in missing:
        c = r.get("commit") or {}
        print(f"unclassified: {r['id']} {r['introduced']['release']} {c.get('sha', '')[:9]} "
              f"#{c.get('pr')} {r['backend']}: {r['message'][:70]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
