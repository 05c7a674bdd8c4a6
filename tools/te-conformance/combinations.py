"""Seeded combinatorial cases, weighted to the deployments TE meets: several non-default
values in every case, so that interactions (not one axis at a time) are asked.

Nodes come from a fixed pool of software stacks per GPU (the import key of a case is its SM,
flash-attn versions and environment, and every distinct key costs a fresh import of TE's
modules): cuDNN, which is read at call time, varies freely within the GPU's releases.
"""

import random

# GPU -> (weight, cuDNN releases seen with it, flash-attn 2 versions, FA3, FA4)
GPUS = {
    80: (20, ["8.9.7", "9.1.0", "9.3.0", "9.5.1", "9.8.0", "9.10.2", "9.13.0", "9.19.0"],
         [None, "2.4.2", "2.5.8", "2.6.3", "2.7.4.post1", "2.8.3"], [None], [None]),
    86: (4, ["9.1.0", "9.5.1", "9.10.2", "9.14.0"], [None, "2.5.8", "2.7.4.post1"], [None], [None]),
    89: (6, ["8.9.7", "9.1.0", "9.5.1", "9.10.2", "9.14.0", "9.19.0"], [None, "2.3.6", "2.6.3", "2.7.4.post1"],
         [None], [None]),
    90: (34, ["9.1.0", "9.3.0", "9.5.1", "9.7.1", "9.8.0", "9.10.2", "9.11.0", "9.13.1", "9.14.0", "9.17.0",
              "9.19.0", "9.21.0"],
         [None, "2.5.8", "2.6.3", "2.7.4.post1", "2.8.3"], [None, None, "3.0.0b1"], [None, None, "4.0.0b11", "4.0.0b24"]),
    100: (24, ["9.7.1", "9.8.0", "9.10.2", "9.11.1", "9.13.1", "9.14.0", "9.17.1", "9.19.0", "9.21.0"],
          [None, "2.7.3", "2.7.4.post1", "2.8.3"], [None], [None, "4.0.0b11", "4.0.0b24", "4.0.0b5"]),
    103: (3, ["9.13.1", "9.14.0", "9.19.0"], [None, "2.8.3"], [None], [None, "4.0.0b24"]),
    120: (9, ["9.8.0", "9.10.2", "9.13.1", "9.14.0", "9.19.0"], [None, "2.7.4.post1", "2.8.3"], [None],
          [None, "4.0.0b24"]),
}
ENVS = [({}, 30), ({"NVTE_ALLOW_NONDETERMINISTIC_ALGO": "0"}, 4), ({"NVTE_FLASH_ATTN": "0"}, 2),
        ({"NVTE_FUSED_ATTN": "0"}, 2), ({"NVTE_FLASH_ATTN_V2": "0"}, 1), ({"NVTE_FLASH_ATTN_V3": "0"}, 1),
        ({"NVTE_FLASH_ATTN_V4": "0"}, 1), ({"NVTE_UNFUSED_ATTN": "0"}, 1),
        ({"NVTE_ALLOW_NONDETERMINISTIC_ALGO": "0", "NVTE_FLASH_ATTN": "0"}, 1)]
STACKS_PER_GPU = 8

LAYOUTS = [("bshd_bshd_bshd", 30), ("sbhd_sbhd_sbhd", 20), ("thd_thd_thd", 22), ("sbh3d", 4), ("bs3hd", 3),
           ("sbhd_sb2hd", 2), ("bshd_bsh2d", 2), ("thd_t2hd", 2), ("t3hd", 1), ("bhsd_bhsd_bhsd", 2),
           ("sbhd_bshd_bshd", 1), ("thd_bshd_bshd", 1)]
MASKS = [("causal", 35), ("padding_causal", 25), ("no_mask", 10), ("padding", 10), ("causal_bottom_right", 6),
         ("padding_causal_bottom_right", 8), ("arbitrary", 4)]
HEAD_DIMS = [((128, 128), 40), ((64, 64), 14), ((192, 128), 10), ((256, 256), 8), ((192, 192), 4),
             ((96, 96), 4), ((80, 80), 3), ((576, 512), 2), ((128, 64), 2), ((32, 32), 2), ((160, 160), 2),
             ((512, 512), 1)]
HEADS = [(32, 30), (64, 20), (16, 15), (128, 15), (8, 8), (40, 4), (96, 4)]
FP8_RECIPES = [("delayed", 4), ("current", 4), ("mxfp8", 3), ("block", 2), ("nvfp4", 1)]
CP = [((2, "p2p"), 3), ((4, "p2p"), 2), ((2, "a2a"), 2), ((8, "a2a"), 1), ((2, "all_gather"), 2),
      ((4, "a2a+p2p"), 1)]


def _pick(rng, weighted):
    values, weights = zip(*weighted)
    return rng.choices(values, weights=weights)[0]


def _stacks(rng, node):
    """A fixed pool of software stacks (flash-attn versions and environment) per GPU."""
    pool = {}
    for sm, (_, _, fa2s, fa3s, fa4s) in GPUS.items():
        pool[sm] = [dict(fa2=rng.choice(fa2s), fa3=rng.choice(fa3s), fa4=rng.choice(fa4s), env=_pick(rng, ENVS))
                    for _ in range(STACKS_PER_GPU)]
    return pool


def cases(count, node, workload, seed=20261125):
    rng = random.Random(seed)
    stacks = _stacks(rng, node)
    sms = list(GPUS)
    for i in range(count):
        sm = rng.choices(sms, weights=[GPUS[s][0] for s in sms])[0]
        stack = rng.choice(stacks[sm])
        facts = node(sm, rng.choice(GPUS[sm][1]), **stack)

        layout = _pick(rng, LAYOUTS)
        mask = _pick(rng, MASKS)
        if layout.startswith("t") and "padding" not in mask:
            mask = rng.choice(["padding_causal", "padding_causal", "padding", "padding_causal_bottom_right"])
        dqk, dv = _pick(rng, HEAD_DIMS)
        packed = "3" in layout or "2" in layout
        if packed:
            dv = dqk
        heads = _pick(rng, HEADS)
        groups = heads if "3" in layout else rng.choice([heads, heads, heads // 4 or 1, heads // 8 or 1, 1])
        if heads % groups:
            groups = heads
        training = rng.random() < 0.75
        if training:
            sq = rng.choice([1024, 2048, 2048, 4096, 4096, 8192, 16384, 1000])
            skv = sq if rng.random() < 0.85 else rng.choice([sq * 2, 512, 4096])
        else:
            sq = rng.choice([1, 1, 1, 128, 2048, 4096])
            skv = rng.choice([2048, 4096, 8192, 32768]) if sq < 2048 else sq
        causal = "causal" in mask
        window = None
        roll = rng.random()
        if roll < 0.10:
            window = rng.choice(["4096,0", "128,0", "1024,0"]) if causal else rng.choice(["128,128", "256,0"])
        elif roll < 0.13:  # windows TE corrects for the mask (check_set_window_size)
            window = rng.choice(["-1,-1", "128,128"]) if causal else "-1,0"
        bias = ("no_bias", None)
        roll = rng.random()
        if roll < 0.08:
            bias = rng.choice([("post_scale_bias", "1hss"), ("post_scale_bias", "bhss"), ("post_scale_bias", "111s"),
                               ("post_scale_bias", "b1ss"), ("pre_scale_bias", "1hss")])
        elif roll < 0.12:
            bias = rng.choice([("alibi", None), ("alibi", "nh"), ("alibi", "bnh")])
        fp8 = None
        if sm >= 89 and rng.random() < 0.15:
            fp8 = (_pick(rng, FP8_RECIPES), rng.random() < 0.3)
        cp = (1, "p2p")
        if training and rng.random() < 0.22:
            cp = _pick(rng, CP)
        inference = None
        if not training and rng.random() < 0.45:
            inference = rng.random() < 0.5  # paged or not
            if rng.random() < 0.8:  # serving stacks pass padding masks with a KV cache (TE 2.2+ asserts it)
                mask = rng.choice(["padding_causal", "padding_causal", "padding", "padding_causal_bottom_right"])
        w = workload(layout=layout, dtype=_pick(rng, [("bf16", 70), ("fp16", 22), ("fp32", 4)]), heads=heads,
                     groups=groups, sq=sq, skv=skv, dqk=dqk, dv=dv, mask=mask, window=window, bias=bias,
                     dropout=0.1 if training and rng.random() < 0.12 else 0.0, cp=cp,
                     deterministic=rng.random() < 0.1, training=training, fp8=fp8,
                     softmax=_pick(rng, [("vanilla", 92), ("off-by-one", 4), ("learnable", 4)]),
                     max_logit=rng.random() < 0.04, cuda_graph=rng.random() < 0.06,
                     num_splits=2 if not training and rng.random() < 0.05 else 1,
                     pad_between_seqs=layout.startswith("t") and rng.random() < 0.2,
                     inference=None, batch=rng.choice([1, 2, 4, 8, 32]),
                     score_mod=rng.random() < 0.02)
        if inference is not None:
            w["inference"] = True
            w["kv_cache_paged"] = inference
        if rng.random() < 0.05:
            w["checkpoint_core_attention"] = True
        if fp8 is not None and rng.random() < 0.2:
            w["fp8_output"] = True
        if bias[0] == "alibi" and bias[1] == "bnh":
            w["alibi_slopes_shape"] = "bnh"
        yield {"name": f"combo/{i}", "facts": facts, "workload": w}
