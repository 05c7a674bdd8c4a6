"""The case grid: which nodes and workloads every tag is asked about.

Cases are in nvte-doctor's vocabulary (facts as for `--set`, workload keys as for
`--workload-set`). The same generated list is asked of every tag, so that a change between
releases shows up as a change in TE's answers; a tag that lacks an input (bhsd layouts before
2.15, softmax_type before 2.8, ...) answers Unrepresentable and the case is left out there.

Parts, in order:
  sweeps     four base cases, each varied along one axis at a time (every value of the axis)
  versions   every cuDNN release against the masks, layouts and head dims whose support
             changed with a cuDNN version, on every GPU class: both sides of each threshold
  random     seeded random combinations of every axis
  combos     seeded combinations weighted to real deployments (combinations.py): several
             non-default values each, KV-cache inference, CP, FP8, determinism from the env
  incidents  the five seed incidents of ARCHITECTURE.md with variants
  te-tests   the ModelConfigs of TE's own attention tests at the tag (model_configs.py)
  targeted   FP8 recipes against NVTE_DPA_FP8_RECIPE, top-left windows in cross-attention with
             flash-attn 2 out, flash-attn 4's head-dim check per release (targeted.py)
"""

import itertools
import random

SMS = [80, 86, 89, 90, 100, 103, 120]

# Every cuDNN release from 8.9 on: each threshold in TE's selectors is a release, so both of
# its sides are in this list.
CUDNN = ["8.9.0", "8.9.2", "8.9.3", "8.9.5", "8.9.6", "8.9.7", "9.0.0", "9.1.0", "9.1.1", "9.2.0", "9.2.1",
         "9.3.0", "9.4.0", "9.5.0", "9.5.1", "9.6.0", "9.7.0", "9.7.1", "9.8.0", "9.9.0", "9.10.0", "9.10.1",
         "9.10.2", "9.11.0", "9.11.1", "9.12.0", "9.13.0", "9.13.1", "9.14.0", "9.15.0", "9.15.1", "9.16.0",
         "9.17.0", "9.17.1", "9.18.0", "9.18.1", "9.19.0", "9.20.0", "9.21.0", "9.22.0", "9.23.0", "9.24.0",
         "9.25.0", "9.26.0", "9.27.0"]

FLASH_ATTN = [None, "2.0.9", "2.1.1", "2.3.6", "2.4.1", "2.4.2", "2.5.7", "2.5.8", "2.5.9.post1", "2.6.3",
              "2.7.0.post2", "2.7.2.post1", "2.7.3", "2.7.4.post1", "2.8.0.post2", "2.8.3", "2.8.4"]
FLASH_ATTN_3 = [None, "3.0.0b1"]
FLASH_ATTN_4 = [None, "4.0.0b11", "4.0.0b24"]

LAYOUTS = ["bshd_bshd_bshd", "sbhd_sbhd_sbhd", "thd_thd_thd", "bs3hd", "bsh3d", "sb3hd", "sbh3d",
           "bshd_bs2hd", "bshd_bsh2d", "sbhd_sb2hd", "sbhd_sbh2d", "thd_t2hd", "thd_th2d", "t3hd", "th3d",
           "bhsd_bhsd_bhsd", "sbhd_bshd_bshd", "bshd_sbhd_sbhd", "thd_bshd_bshd", "thd_sbhd_sbhd"]
MASKS = ["no_mask", "padding", "causal", "padding_causal", "causal_bottom_right",
         "padding_causal_bottom_right", "arbitrary"]
HEAD_DIMS = [(64, 64), (128, 128), (96, 96), (80, 80), (72, 72), (100, 100), (160, 160), (192, 192),
             (256, 256), (192, 128), (128, 64), (64, 512), (512, 512), (576, 512), (32, 32)]
SEQLENS = [(128, 128), (512, 512), (2048, 2048), (1, 2048), (128, 256), (256, 128), (1000, 1000),
           (4096, 4096), (8192, 8192), (2048, 4096), (1, 1)]
GQA = [16, 4, 1]
WINDOWS = [None, "128,0", "128,128", "-1,-1", "4096,0", "0,0"]
BIASES = [("no_bias", None), ("post_scale_bias", "1hss"), ("post_scale_bias", "bhss"), ("pre_scale_bias", "1hss"),
          ("alibi", None), ("alibi", "nh")]
CP = [(1, "p2p"), (2, "p2p"), (2, "all_gather"), (2, "a2a"), (4, "a2a+p2p")]
FP8 = [None, ("delayed", False), ("delayed", True), ("current", False), ("mxfp8", False), ("mxfp8", True),
       ("block", False), ("nvfp4", False)]
SOFTMAX = ["vanilla", "off-by-one", "learnable"]
ENVS = [{}, {"NVTE_FLASH_ATTN": "0"}, {"NVTE_FUSED_ATTN": "0"}, {"NVTE_UNFUSED_ATTN": "0"},
        {"NVTE_FLASH_ATTN": "0", "NVTE_UNFUSED_ATTN": "0"}, {"NVTE_FLASH_ATTN_V2": "0"},
        {"NVTE_FLASH_ATTN_V3": "0"}, {"NVTE_FLASH_ATTN_V4": "0"}, {"NVTE_FUSED_ATTN_BACKEND": "0"},
        {"NVTE_UnfusedDPA_Emulate_FP8": "1"}]


def node(sm, cudnn, fa2=None, fa3=None, fa4=None, env=None, cutlass_dsl="4.3.0"):
    facts = {"gpu.sm": sm, "cudnn.version": cudnn}
    if fa2:
        facts["flash_attn.version"] = fa2
    if fa3:
        facts["flash_attn_3.version"] = fa3
    if fa4:
        facts["flash_attn_4.version"] = fa4
        if cutlass_dsl:  # flash-attn-4's CuTe DSL, which pip installs with it
            facts["package.nvidia_cutlass_dsl.version"] = cutlass_dsl
    for key, value in (env or {}).items():
        facts["env." + key] = value
    return facts


def workload(layout="bshd_bshd_bshd", dtype="bf16", heads=16, groups=16, sq=2048, skv=2048, dqk=128, dv=128,
             mask="causal", window=None, bias=("no_bias", None), dropout=0.0, cp=(1, "p2p"), deterministic=False,
             training=True, fp8=None, softmax="vanilla", max_logit=False, cuda_graph=False, num_splits=1,
             pad_between_seqs=False, inference=None, bottom_right_diagonal=True, batch=2, score_mod=False):
    if window is None:
        window = "-1,0" if "causal" in mask else "-1,-1"
    w = {"qkv_layout": layout, "qkv_dtype": dtype, "batch_size": batch, "num_heads": heads,
         "num_gqa_groups": groups, "max_seqlen_q": sq, "max_seqlen_kv": skv, "head_dim_qk": dqk, "head_dim_v": dv,
         "attn_mask_type": mask, "window_size": window, "bottom_right_diagonal": bottom_right_diagonal,
         "core_attention_bias_type": bias[0], "attention_dropout": dropout, "cp_size": cp[0],
         "cp_comm_type": cp[1], "deterministic": deterministic, "is_training": training,
         "softmax_type": softmax, "return_max_logit": max_logit, "cuda_graph": cuda_graph,
         "num_splits": num_splits, "pad_between_seqs": pad_between_seqs}
    if bias[0] in ("pre_scale_bias", "post_scale_bias"):
        w["core_attention_bias_shape"] = bias[1]
        w["core_attention_bias_requires_grad"] = True
    if bias[0] == "alibi" and bias[1]:
        w["alibi_slopes_shape"] = bias[1]
    w["fp8"] = fp8 is not None
    w["fp8_dpa"] = fp8 is not None
    w["fp8_mha"] = bool(fp8 and fp8[1])
    w["fp8_recipe"] = fp8[0] if fp8 else "delayed"
    if score_mod:
        w["has_score_mod"] = True
    w["inference"] = inference is not None
    w["kv_cache_paged"] = bool(inference)
    return w


BASES = {
    "hopper": (dict(sm=90, cudnn="9.10.2", fa2="2.7.4.post1"),
               dict(layout="bshd_bshd_bshd", mask="causal", dqk=128, dv=128)),
    "ampere": (dict(sm=80, cudnn="9.1.0", fa2="2.5.8"),
               dict(layout="sbhd_sbhd_sbhd", dtype="fp16", heads=32, groups=8, sq=4096, skv=4096, dqk=64, dv=64,
                    mask="no_mask")),
    "blackwell": (dict(sm=100, cudnn="9.13.1", fa2="2.8.3", fa4="4.0.0b11"),
                  dict(layout="thd_thd_thd", heads=128, groups=128, dqk=192, dv=128, mask="padding_causal")),
    "ada": (dict(sm=89, cudnn="9.5.1", fa2="2.6.3"),
            dict(layout="bshd_bshd_bshd", dqk=256, dv=256, mask="causal", training=False, sq=1, skv=2048)),
}


def _sweeps():
    for base_name, (n, w) in BASES.items():
        def case(label, node_changes=None, workload_changes=None, env=None):
            nn = dict(n, **(node_changes or {}))
            ww = dict(w, **(workload_changes or {}))
            return {"name": f"sweep/{base_name}/{label}", "facts": node(**nn, env=env), "workload": workload(**ww)}

        yield case("base")
        for sm in SMS:
            yield case(f"sm{sm}", {"sm": sm})
        for cudnn in CUDNN:
            yield case(f"cudnn-{cudnn}", {"cudnn": cudnn})
        for fa2 in FLASH_ATTN:
            yield case(f"fa2-{fa2}", {"fa2": fa2})
        for fa3 in FLASH_ATTN_3[1:]:
            yield case(f"fa3-{fa3}", {"fa3": fa3, "sm": 90})
            yield case(f"fa3-{fa3}-only", {"fa3": fa3, "fa2": None, "sm": 90})
        for fa4 in FLASH_ATTN_4[1:]:
            for sm in (80, 90, 100, 120):
                yield case(f"fa4-{fa4}-sm{sm}", {"fa4": fa4, "sm": sm})
            yield case(f"fa4-{fa4}-without-cutlass-dsl", {"fa4": fa4, "sm": 100, "cutlass_dsl": None})
            yield case(f"fa4-{fa4}-cutlass-dsl-4.6.2", {"fa4": fa4, "sm": 100, "cutlass_dsl": "4.6.2"})
        for i, env in enumerate(ENVS[1:]):
            yield case("env-" + "-".join(f"{k}={v}" for k, v in env.items()), env=env)
        for layout in LAYOUTS:
            changes = {"layout": layout}
            if layout.startswith("thd") or layout in ("t3hd", "th3d"):
                changes["mask"] = "padding_causal"
            if layout in ("bs3hd", "bsh3d", "sb3hd", "sbh3d", "t3hd", "th3d"):
                changes.update(groups=w.get("heads", 16), dv=w.get("dqk", 128))
            yield case(f"layout-{layout}", workload_changes=changes)
        for dtype in ("fp16", "bf16", "fp32"):
            yield case(f"dtype-{dtype}", workload_changes={"dtype": dtype})
        for groups in GQA:
            yield case(f"gqa-{groups}", workload_changes={"groups": groups, "heads": 16})
        for sq, skv in SEQLENS:
            yield case(f"seq-{sq}x{skv}", workload_changes={"sq": sq, "skv": skv})
        for dqk, dv in HEAD_DIMS:
            yield case(f"hd-{dqk}x{dv}", workload_changes={"dqk": dqk, "dv": dv})
        for mask in MASKS:
            yield case(f"mask-{mask}", workload_changes={"mask": mask})
        for window in WINDOWS[1:]:
            for mask in ("causal", "no_mask", "causal_bottom_right", "padding"):
                yield case(f"window-{window}-{mask}", workload_changes={"window": window, "mask": mask})
        for bias in BIASES:
            for mask in ("causal", "no_mask", "padding"):
                yield case(f"bias-{bias[0]}-{bias[1]}-{mask}", workload_changes={"bias": bias, "mask": mask})
        yield case("dropout", workload_changes={"dropout": 0.1})
        for cp in CP[1:]:
            yield case(f"cp-{cp[0]}-{cp[1]}", workload_changes={"cp": cp})
            yield case(f"cp-{cp[0]}-{cp[1]}-window", workload_changes={"cp": cp, "window": "128,0"})
        yield case("deterministic", workload_changes={"deterministic": True})
        yield case("deterministic-inference", workload_changes={"deterministic": True, "training": False})
        yield case("inference", workload_changes={"training": False})
        for fp8 in FP8[1:]:
            yield case(f"fp8-{fp8[0]}-mha{int(fp8[1])}", workload_changes={"fp8": fp8})
            yield case(f"fp8-{fp8[0]}-mha{int(fp8[1])}-inference", workload_changes={"fp8": fp8, "training": False})
        for softmax in SOFTMAX[1:]:
            yield case(f"softmax-{softmax}", workload_changes={"softmax": softmax})
        yield case("max-logit", workload_changes={"max_logit": True})
        yield case("cuda-graph", workload_changes={"cuda_graph": True, "sq": 1000, "skv": 1000})
        yield case("num-splits", workload_changes={"num_splits": 2, "training": False})
        yield case("pad-between-seqs", workload_changes={"layout": "thd_thd_thd", "mask": "padding", "pad_between_seqs": True})
        yield case("score-mod", workload_changes={"score_mod": True, "mask": "no_mask"})
        yield case("score-mod-causal", workload_changes={"score_mod": True})
        yield case("bottom-right-diagonal-false",
                   workload_changes={"mask": "no_mask", "window": "128,128", "bottom_right_diagonal": False})


def _versions():
    """Every cuDNN release x the inputs whose support moved with cuDNN, on every GPU class."""
    shapes = [
        ("bshd-causal-d128", dict()),
        ("sbhd-padding-d64", dict(layout="sbhd_sbhd_sbhd", mask="padding", dqk=64, dv=64)),
        ("thd-padding-causal", dict(layout="thd_thd_thd", mask="padding_causal")),
        ("thd-gqa", dict(layout="thd_thd_thd", mask="padding_causal", groups=4)),
        ("bottom-right-cross", dict(mask="causal_bottom_right", sq=1024, skv=2048)),
        ("padding-bottom-right", dict(mask="padding_causal_bottom_right", sq=1000, skv=1000)),
        ("swa-causal", dict(window="128,0")),
        ("d256-training", dict(dqk=256, dv=256)),
        ("d256-inference", dict(dqk=256, dv=256, training=False)),
        ("mla-training", dict(dqk=192, dv=128)),
        ("d512-inference-decode", dict(dqk=512, dv=512, training=False, sq=1, mask="padding")),
        ("post-scale-bias", dict(mask="no_mask", bias=("post_scale_bias", "1hss"))),
        ("alibi-causal", dict(bias=("alibi", None))),
        ("learnable-softmax", dict(softmax="learnable")),
        ("max-logit", dict(max_logit=True)),
        ("fp8-delayed", dict(fp8=("delayed", False), sq=2048)),
        ("fp8-current", dict(fp8=("current", False))),
        ("deterministic", dict(deterministic=True)),
        ("cuda-graph-1000", dict(cuda_graph=True, sq=1000, skv=1000)),
        ("sq-not-64", dict(sq=1000, skv=1000, mask="no_mask")),
    ]
    # Hopper every third turn, the other GPU classes in between: each shape meets every
    # release once, and every GPU class meets most releases across the shapes.
    rotation = [90, 100, 80, 90, 120, 89, 90, 103, 86]
    for (index, (label, changes)), (k, cudnn) in itertools.product(enumerate(shapes), enumerate(CUDNN)):
        sm = rotation[(index + k) % len(rotation)]
        yield {"name": f"versions/{label}/sm{sm}/cudnn-{cudnn}",
               "facts": node(sm, cudnn, fa2="2.7.4.post1" if sm < 100 else "2.8.3"),
               "workload": workload(**changes)}


def _random(count, seed=20261124):
    rng = random.Random(seed)
    for i in range(count):
        sm = rng.choice(SMS)
        facts = node(sm, rng.choice(CUDNN), fa2=rng.choice(FLASH_ATTN), fa3=rng.choice(FLASH_ATTN_3),
                     fa4=rng.choice(FLASH_ATTN_4), env=rng.choice(ENVS[:6] + [{}] * 6))
        layout = rng.choice(LAYOUTS)
        mask = rng.choice(MASKS)
        if layout.startswith("t") and "padding" not in mask:
            mask = rng.choice(["padding", "padding_causal", "padding_causal_bottom_right"])
        dqk, dv = rng.choice(HEAD_DIMS)
        heads = rng.choice([8, 16, 32, 64])
        groups = heads if layout in ("bs3hd", "bsh3d", "sb3hd", "sbh3d", "t3hd", "th3d") else rng.choice([heads, heads // 4 or 1, 1])
        if layout in ("bs3hd", "bsh3d", "sb3hd", "sbh3d", "t3hd", "th3d", "bshd_bs2hd", "bshd_bsh2d",
                      "sbhd_sb2hd", "sbhd_sbh2d", "thd_t2hd", "thd_th2d"):
            dv = dqk
        sq, skv = rng.choice(SEQLENS)
        w = workload(layout=layout, dtype=rng.choice(["bf16", "bf16", "fp16", "fp32"]), heads=heads, groups=groups,
                     sq=sq, skv=skv, dqk=dqk, dv=dv, mask=mask,
                     window=rng.choice([None, None, None, "128,0", "4096,0"]) if "causal" in mask else rng.choice([None, None, "128,128"]),
                     bias=rng.choice(BIASES[:1] * 4 + BIASES[1:]), dropout=rng.choice([0.0, 0.0, 0.0, 0.1]),
                     cp=rng.choice(CP[:1] * 4 + CP[1:]), deterministic=rng.random() < 0.2,
                     training=rng.random() < 0.75, fp8=rng.choice(FP8[:1] * 6 + FP8[1:]),
                     softmax=rng.choice(SOFTMAX[:1] * 4 + SOFTMAX[1:]), max_logit=rng.random() < 0.1,
                     cuda_graph=rng.random() < 0.1, num_splits=1, pad_between_seqs=False)
        yield {"name": f"random/{i}", "facts": facts, "workload": w}


def _incidents():
    # 1: DeepSeek-V3 on A100 (TE 2.3): head_dim_qk 192 / v 128, FA and unfused disabled by env.
    for env in ({"NVTE_FLASH_ATTN": "0", "NVTE_UNFUSED_ATTN": "0"}, {"NVTE_FLASH_ATTN": "0"}, {}):
        for dqk, dv in ((192, 128), (192, 192), (128, 128)):
            yield {"name": f"incident-1/d{dqk}x{dv}/{'-'.join(env) or 'default'}",
                   "facts": node(80, "9.1.0", fa2="2.7.4.post1", env=env),
                   "workload": workload(layout="sbhd_sbhd_sbhd", heads=128, groups=128, sq=4096, skv=4096,
                                        dqk=dqk, dv=dv, mask="causal")}
    # 2: all_gather context parallelism, BF16, CP=2, seq 4096, cuDNN 9.1 vs 9.3 vs 9.6.
    for cudnn in ("9.1.0", "9.2.1", "9.3.0", "9.5.1", "9.6.0", "9.10.2"):
        for sm in (80, 90):
            for mask in ("causal", "causal_bottom_right"):
                yield {"name": f"incident-2/sm{sm}/cudnn-{cudnn}/{mask}",
                       "facts": node(sm, cudnn, fa2="2.5.8"),
                       "workload": workload(layout="bshd_bshd_bshd", heads=32, groups=32, sq=2048, skv=4096 if mask.endswith("right") else 2048,
                                            dqk=128, dv=128, mask=mask, cp=(2, "all_gather"))}
    # 3: H100 sbhd vs bshd from TransformerLayer.
    for layout in ("sbhd_sbhd_sbhd", "bshd_bshd_bshd"):
        yield {"name": f"incident-3/{layout}", "facts": node(90, "9.1.0"),
               "workload": workload(layout=layout, heads=32, groups=32, sq=2048, skv=2048, mask="causal")}
    # 4: GQA with interleaved packed QKV, H100, cuDNN 9.2.1.
    for layout in ("sbhd_sbh2d", "sbh3d", "sbhd_sbhd_sbhd"):
        groups = 16 if layout == "sbh3d" else 4
        yield {"name": f"incident-4/{layout}", "facts": node(90, "9.2.1", fa2="2.5.8"),
               "workload": workload(layout=layout, heads=16, groups=groups, sq=2048, skv=2048, mask="causal")}
    # 5: FP8 training on H100.
    for recipe in ("delayed", "current"):
        yield {"name": f"incident-5/{recipe}", "facts": node(90, "9.5.1", fa2="2.6.3"),
               "workload": workload(layout="bshd_bshd_bshd", sq=2048, skv=2048, fp8=(recipe, False))}


def cases(te_test_configs=(), random_count=260, combo_count=3000, features=frozenset()):
    """Every case of the grid for one tag, in a stable order; names are unique. features: what
    the tag has, for the targeted parts that only mean something there (targeted.py)."""
    import combinations
    import targeted

    names, contents = set(), set()
    for part in (_sweeps(), _versions(), _random(random_count), _incidents(), te_test_configs,
                 combinations.cases(combo_count, node, workload), targeted.cases(node, workload, HEAD_DIMS, features)):
        for case in part:
            content = repr((sorted(case["facts"].items()), sorted(case["workload"].items())))
            if case["name"] in names or content in contents:
                continue  # the same question twice (a sweep value equal to its base, twin test configs)
            names.add(case["name"])
            contents.add(content)
            yield case
