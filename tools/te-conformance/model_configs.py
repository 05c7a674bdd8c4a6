"""The ModelConfigs of TE's own attention tests at a tag, as grid cases.

TE's tests (tests/pytorch/fused_attn/test_fused_attn.py before 2.5-ish,
tests/pytorch/attention/test_attention*.py after) declare their shapes as dict literals of
ModelConfig(...) calls. We read them with `ast` (nothing of the tests runs), bind each call to
the ModelConfig constructor of the same tag, and ask the tag about each shape on the GPUs TE's
CI runs: sm90 (bshd) and sm100 (thd where the mask pads, else sbhd), with the cuDNN and
flash-attn of the tag's time.
"""

import ast
import hashlib

TEST_FILES = [
    "tests/pytorch/fused_attn/test_fused_attn.py",
    "tests/pytorch/fused_attn/test_fused_attn_with_cp.py",
    "tests/pytorch/fused_attn/test_kv_cache.py",
    "tests/pytorch/attention/test_attention.py",
    "tests/pytorch/attention/test_attention_with_cp.py",
    "tests/pytorch/attention/test_kv_cache.py",
]
CONFIG_CLASS_FILES = ["tests/pytorch/utils.py", *TEST_FILES]


def _constructor_params(checkout, tag):
    """ModelConfig.__init__'s parameter names (after self) and defaults, from the tag's tests."""
    for path in CONFIG_CLASS_FILES:
        if not checkout.exists(tag, path):
            continue
        tree = ast.parse(checkout.show(tag, path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == "ModelConfig":
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                        names = [a.arg for a in item.args.args[1:]]
                        defaults = [ast.literal_eval(d) for d in item.args.defaults]
                        return names, dict(zip(names[len(names) - len(defaults):], defaults))
    return None, None


def _literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None  # a name or call (e.g. a variable): not a shape we can read


def read_configs(checkout, tag):
    """[(test file stem, config name, {parameter: value})] for every ModelConfig literal."""
    names, defaults = _constructor_params(checkout, tag)
    if names is None:
        return []
    out = []
    for path in TEST_FILES:
        if not checkout.exists(tag, path):
            continue
        tree = ast.parse(checkout.show(tag, path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Dict):
                continue
            for key, value in zip(node.keys, node.values):
                if not (isinstance(value, ast.Call) and getattr(value.func, "id", None) == "ModelConfig"):
                    continue
                label = _literal(key)
                args = [_literal(a) for a in value.args]
                kwargs = {k.arg: _literal(k.value) for k in value.keywords}
                if label is None or any(a is None and not isinstance(n, ast.Constant) for a, n in zip(args, value.args)):
                    continue
                bound = dict(defaults)
                bound.update(zip(names, args))
                bound.update(kwargs)
                out.append((path.rsplit("/", 1)[-1][:-3], str(label), bound))
    return out


def _era(checkout, tag):
    """cuDNN and flash-attn of the tag's time, as TE's CI would have run it."""
    version = tuple(int(x) for x in checkout.version(tag).split(".")[:2])
    if version < (2, 1):
        return "9.5.1", "2.6.3"
    if version < (2, 6):
        return "9.8.0", "2.7.3"
    if version < (2, 11):
        return "9.13.1", "2.8.3"
    return "9.19.0", "2.8.3"


def cases(checkout, tag, workload_fn, node_fn):
    """Grid cases for every ModelConfig of the tag's tests (see module doc)."""
    cudnn, fa2 = _era(checkout, tag)
    for test, label, c in read_configs(checkout, tag):
        try:
            heads = int(c["num_heads"])
            groups = int(c.get("num_gqa_groups") or heads)
            dqk = int(c.get("head_dim_qk") or c.get("head_dim") or c.get("kv_channels"))
            dv = int(c.get("head_dim_v") or dqk)
            sq = int(c["max_seqlen_q"])
            skv = int(c.get("max_seqlen_kv") or sq)
            mask = c.get("attn_mask_type", "no_mask")
            bias_type = c.get("attn_bias_type", "no_bias")
            window = c.get("window_size") or (-1, -1)
        except (KeyError, TypeError, ValueError):
            continue
        if "causal" in mask and tuple(window) == (-1, -1):
            window = (-1, 0)
        if "causal" in mask and window[1] not in (0, -1):
            window = (window[0], 0)
        bias = (bias_type, c.get("bias_shape", "1hss") if bias_type in ("pre_scale_bias", "post_scale_bias") else
                ("nh" if c.get("alibi_type") == "custom" else None))
        cp = (2, c.get("cp_comm_type", "p2p")) if c.get("context_parallel") else (1, "p2p")
        common = dict(heads=heads, groups=groups, sq=sq, skv=skv, dqk=dqk, dv=dv, mask=mask,
                      window=f"{window[0]},{window[1]}", bias=bias, dropout=float(c.get("dropout_p") or 0.0),
                      cp=cp, softmax=c.get("softmax_type", "vanilla"),
                      max_logit=bool(c.get("return_max_logit", False)), batch=int(c.get("batch_size", 2)))
        layouts = ["bshd_bshd_bshd", "sbhd_sbhd_sbhd"]  # sm90 takes the first, sm100 the last
        if "padding" in mask:
            layouts.append("thd_thd_thd")
        for sm, layout in ((90, layouts[0]), (100, layouts[-1])):
            facts, workload = node_fn(sm, cudnn, fa2=fa2), workload_fn(layout=layout, **common)
            # A label names different shapes at different tags; the digest keeps cases.jsonl,
            # shared by every tag, from mixing them up.
            digest = hashlib.sha1(repr((sorted(facts.items()), sorted(workload.items()))).encode()).hexdigest()[:6]
            yield {"name": f"te-tests/{test}/{label}/sm{sm}/{layout.split('_')[0]}/{digest}",
                   "facts": facts, "workload": workload}
