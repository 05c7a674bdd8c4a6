"""Targeted parts of the grid: classes of input that the sweeps and the seeded combinations reach
too rarely to prove anything, each asked densely.

  fp8-recipe   FP8 attention where fused FP8 exists (sm90; sm100 with the cuDNN releases around
               its current-scaling and MXFP8 thresholds; sm120, where TE turns it off), every
               autocast recipe against every NVTE_DPA_FP8_RECIPE value DotProductAttention knows
               (init_fp8_metadata swaps or adds recipes from 2.8 on); the switch's values only
               where the tag reads the variable, the plain recipes at every tag
  window-tl    sliding windows aligned top-left in cross-attention (max_seqlen_q != kv) with
               flash-attn 2 in TE's range, outside it, disabled (NVTE_FLASH_ATTN_V2=0), absent, or
               dropped by an earlier filter (MLA head dims, FP8), beside flash-attn 3 and 4
  fa4-heads    every head-dim pair against each flash-attn 4 release whose head-dim check
               (_validate_head_dims) differs from the previous one, on sm90/100/103/120; only where
               the tag loads flash-attn 4
"""

# The first FA4 beta of each distinct _validate_head_dims in flash-attention's history
# (fa4-v4.0.0.beta5, .beta9, .beta11, .beta16, .beta26; the release in between answer alike).
FA4_HEAD_DIM_ERAS = ["4.0.0b5", "4.0.0b9", "4.0.0b11", "4.0.0b16", "4.0.0b24", "4.0.0b26"]

DPA_FP8_RECIPES = ["F16", "DelayedScaling", "Float8CurrentScaling", "MXFP8BlockScaling"]


def fp8_recipes(node, workload, switch):
    nodes = [(90, "9.10.2", dict(fa2="2.7.4.post1", fa3="3.0.0b1")), (90, "9.19.0", dict(fa2="2.7.4.post1")),
             (100, "9.13.1", dict(fa2="2.8.3")), (100, "9.19.0", dict(fa2="2.8.3")),
             (100, "9.21.0", dict(fa2="2.8.3", fa4="4.0.0b24")), (120, "9.19.0", dict(fa2="2.8.3"))]
    recipes = [("delayed", False), ("current", False), ("mxfp8", False), ("mxfp8", True), ("nvfp4", False)]
    envs = [None] + (DPA_FP8_RECIPES if switch else [])
    for sm, cudnn, stack in nodes:
        for env in envs:
            facts = node(sm, cudnn, **stack, env={"NVTE_DPA_FP8_RECIPE": env} if env else None)
            for recipe in recipes:
                label = f"fp8-recipe/sm{sm}/cudnn-{cudnn}/{env or 'unset'}/{recipe[0]}-mha{int(recipe[1])}"
                variants = [("training", {}), ("inference", dict(training=False))]
                if sm >= 100:  # determinism thresholds of FP8 on Blackwell (cuDNN 9.18)
                    variants.append(("deterministic", dict(deterministic=True)))
                for name, changes in variants:
                    yield {"name": f"{label}/{name}", "facts": facts,
                           "workload": workload(layout="bshd_bshd_bshd", sq=2048, skv=2048, fp8=recipe, **changes)}


def window_top_left(node, workload):
    nodes = [
        ("sm90-fa2-in", node(90, "9.10.2", fa2="2.7.4.post1", fa3="3.0.0b1")),
        ("sm90-fa2-off", node(90, "9.10.2", fa2="2.7.4.post1", fa3="3.0.0b1", env={"NVTE_FLASH_ATTN_V2": "0"})),
        ("sm90-fa2-absent", node(90, "9.10.2", fa3="3.0.0b1")),
        ("sm90-fa2-too-old", node(90, "9.10.2", fa2="2.0.9", fa3="3.0.0b1")),
        ("sm100-fa2-in", node(100, "9.13.1", fa2="2.8.3", fa4="4.0.0b24")),
        ("sm100-fa2-below-blackwell-floor", node(100, "9.13.1", fa2="2.7.2.post1", fa4="4.0.0b24")),
        ("sm100-fa2-off", node(100, "9.13.1", fa2="2.8.3", fa4="4.0.0b24", env={"NVTE_FLASH_ATTN_V2": "0"})),
        ("sm100-fa2-absent", node(100, "9.13.1", fa4="4.0.0b24")),
        ("sm80-fa2-only", node(80, "9.1.0", fa2="2.7.4.post1")),
        ("sm120-fa2-in", node(120, "9.19.0", fa2="2.8.3", fa4="4.0.0b24")),
    ]
    shapes = [
        ("causal-128", dict(mask="causal", window="128,0", sq=1024, skv=2048)),
        ("padding-causal-128", dict(mask="padding_causal", window="128,0", sq=1024, skv=2048)),
        ("no-mask-128x128-top-left", dict(mask="no_mask", window="128,128", sq=1024, skv=2048, bottom_right_diagonal=False)),
        ("padding-256-top-left", dict(mask="padding", window="256,0", sq=2048, skv=1024, bottom_right_diagonal=False)),
        ("no-mask-decode", dict(mask="no_mask", window="128,128", sq=128, skv=256, bottom_right_diagonal=False,
                                training=False)),
        ("causal-128-mla", dict(mask="causal", window="128,0", sq=1024, skv=2048, dqk=192, dv=128)),
        ("causal-128-fp8-inference", dict(mask="causal", window="128,0", sq=1024, skv=2048, fp8=("delayed", False),
                                          training=False)),
        ("causal-128-self", dict(mask="causal", window="128,0", sq=2048, skv=2048)),
    ]
    for node_label, facts in nodes:
        for shape_label, changes in shapes:
            yield {"name": f"window-tl/{node_label}/{shape_label}", "facts": facts, "workload": workload(**changes)}


def fa4_heads(node, workload, head_dims):
    for fa4 in FA4_HEAD_DIM_ERAS:
        for sm in (90, 100, 103, 120):
            facts = node(sm, "9.13.1" if sm >= 100 else "9.10.2", fa4=fa4)
            for dqk, dv in head_dims:
                variants = [("training", {})]
                if sm == 100:
                    variants.append(("inference", dict(training=False)))
                for name, changes in variants:
                    yield {"name": f"fa4-heads/{fa4}/sm{sm}/d{dqk}x{dv}/{name}", "facts": facts,
                           "workload": workload(dqk=dqk, dv=dv, **changes)}


def cases(node, workload, head_dims, features):
    """features: what the tag has ("dpa_fp8_recipe": reads NVTE_DPA_FP8_RECIPE; "fa4": loads
    flash-attn 4)."""
    yield from fp8_recipes(node, workload, "dpa_fp8_recipe" in features)
    yield from window_top_left(node, workload)
    if "fa4" in features:
        yield from fa4_heads(node, workload, head_dims)
