"""Runs one case through a tag's real get_attention_backend and reads off TE's answer.

A case is written in nvte-doctor's vocabulary (facts such as gpu.sm and cudnn.version, and
workload keys as in `--workload-set`), so that the ctest can replay it through `explain`
unchanged. Here it becomes what DotProductAttention hands to get_attention_backend at that
tag: AttentionParams with only the fields the tag has, the window and diagonal normalised as
DotProductAttention.forward normalises them, and fp8_meta holding a recipe object.
"""

import dataclasses
import logging
import os

import torch
from packaging.version import Version as PkgVersion

import preselect
from teimport import Machine

FA_DISTRIBUTIONS = {
    # fact name -> the distribution name TE asks importlib.metadata for, per era
    "flash_attn.version": ["flash-attn"],
    "flash_attn_3.version": ["flash-attn-3", "flashattn-hopper"],
    "flash_attn_4.version": ["flash-attn-4"],
    # TE's HEAD loads flash-attn-4 only with its CUTLASS DSL installed.
    "package.nvidia_cutlass_dsl.version": ["nvidia-cutlass-dsl"],
}

SUB_BACKENDS = {0: "F16_max512_seqlen", 1: "F16_arbitrary_seqlen", 2: "FP8"}

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


class Unrepresentable(Exception):
    """The case uses an input this tag does not have (a field, a layout, a mask type)."""


class _Recipe:
    """The fp8 recipe object get_attention_backend inspects: its kind predicates and flags."""

    KINDS = {"delayed": "DelayedScaling", "current": "Float8CurrentScaling", "mxfp8": "MXFP8BlockScaling",
             "block": "Float8BlockScaling", "nvfp4": "NVFP4BlockScaling"}

    def __init__(self, kind, fp8_dpa, fp8_mha, fp8_format="HYBRID"):
        self.kind = kind
        self.fp8_dpa = fp8_dpa
        self.fp8_mha = fp8_mha
        self.fp8_format = fp8_format
        self.__class__ = type(self.KINDS[kind], (_Recipe,), {})

    def __repr__(self):
        # The shape of TE's recipe repr (recipe_type=..., fp8_dpa=..., fp8_mha=...): what a log shows.
        return (f"recipe_type={self.KINDS[self.kind]}, format={self.fp8_format}, "
                f"fp8_dpa={self.fp8_dpa}, fp8_mha={self.fp8_mha}")

    def delayed(self):
        return self.kind == "delayed"

    def float8_current_scaling(self):
        return self.kind == "current"

    def mxfp8(self):
        return self.kind == "mxfp8"

    def float8_block_scaling(self):
        return self.kind == "block"

    def nvfp4(self):
        return self.kind == "nvfp4"

    def float8_per_tensor_scaling(self):
        return self.kind in ("delayed", "current")

    def custom(self):
        return False


_RecipeStandIn = _Recipe  # the stand-in class itself, whatever live.py binds _Recipe to


def _switched_recipe(kind, fp8_format="HYBRID", fp8_dpa=False, fp8_mha=False, **_scaling):
    """A recipe as TE's constructors build one in init_fp8_metadata's switch. Through the module
    global _Recipe: live.py puts TE's own recipe classes there (they keep their own format)."""
    recipe = _Recipe(kind, fp8_dpa, fp8_mha)
    if isinstance(recipe, _RecipeStandIn):
        recipe.fp8_format = fp8_format
    return recipe


class _InferenceParams:
    """The two attributes get_attention_backend reads of InferenceParams."""

    def __init__(self, is_paged, page_size):
        self.is_paged = is_paged
        self.page_size = page_size


class _DebugLog(logging.Handler):
    def __init__(self, records=None):
        super().__init__(level=logging.DEBUG)
        self.lines = []
        self.records = records  # te_logs.py keeps the records themselves, to format them as TE does

    def emit(self, record):
        if self.records is not None:
            self.records.append(record)
        try:
            self.lines.append(record.getMessage())
        except Exception:  # a TE format string that does not match its arguments
            self.lines.append(str(record.msg))


def parse_version_tuple(text):
    parts = [int(p) for p in text.split(".")[:3]]
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)


def import_key(case):
    """What must be fixed when TE's modules are imported (see TagImporter.load)."""
    facts = case["facts"]
    fa = tuple(sorted((k, facts[k]) for k in FA_DISTRIBUTIONS if k in facts))
    env = tuple(sorted((k[4:], v) for k, v in facts.items() if k.startswith("env.")))
    return facts["gpu.sm"], fa, env


def fa_versions_for_import(case):
    out = {}
    for fact, names in FA_DISTRIBUTIONS.items():
        if fact in case["facts"]:
            for name in names:
                out[name] = case["facts"][fact]
    return out


def run_case(loaded, case, records=None):
    """TE's verdict for the case: a dict, or raises Unrepresentable. records (a list), when
    given, receives TE's log records as its logger emitted them."""
    loaded.reset()
    # The case's environment, afresh: TE sets NVTE_FUSED_ATTN_BACKEND itself for some bias
    # shapes (a process-wide side effect a fresh job would not have seen yet).
    for key in [k for k in os.environ if k.startswith("NVTE_")]:
        del os.environ[key]
    os.environ.update({k[4:]: v for k, v in case["facts"].items() if k.startswith("env.")})
    os.environ["NVTE_DEBUG"] = "1"
    os.environ["NVTE_DEBUG_LEVEL"] = "2"
    module = loaded.module
    facts, w = case["facts"], dict(case["workload"])
    Machine.sm = facts["gpu.sm"]
    Machine.cudnn = parse_version_tuple(facts["cudnn.version"])

    fields = {f.name for f in dataclasses.fields(module.AttentionParams)}
    defaults = {f.name: f.default for f in dataclasses.fields(module.AttentionParams)}

    mask = w["attn_mask_type"]
    # TE's own mask vocabulary (AttnMaskTypes in constants.py, which DotProductAttention asserts
    # against); cpp_extensions' AttnMaskType lacks `arbitrary`, which the selector handles itself.
    mask_names = getattr(module, "AttnMaskTypes", None) or loaded.mask_types
    if mask_names is not None and mask not in mask_names:
        raise Unrepresentable(f"attn_mask_type {mask}")
    layout = w["qkv_layout"]
    left, right = (int(x) for x in w["window_size"].split(","))
    inputs = preselect.tag_inputs(loaded.checkout, loaded.tag)
    # forward: the window checked against the mask (TE's check_set_window_size: it corrects some
    # windows and asserts on others), then the diagonal forced by the mask.
    try:
        window = tuple(module.check_set_window_size(mask, (left, right)))
    except AssertionError as why:
        raise Unrepresentable(f"window {left},{right} refused by TE for {mask}") from None
    brd = w.get("bottom_right_diagonal", True)
    if mask in ("causal", "padding_causal"):
        brd = False
    if mask in ("causal_bottom_right", "padding_causal_bottom_right"):
        brd = True
    inference = _InferenceParams(bool(w.get("kv_cache_paged", False)), 256) if w.get("inference") else None
    if inference is not None:
        # forward's KV-cache block: the mask rewrite, then the cache's layout and format.
        try:
            mask, brd = inputs.kv_cache_mask(mask, brd)
            sizes = (2, 2, 2 if w["max_seqlen_q"] == w["max_seqlen_kv"] else 3, w["num_heads"], w["num_gqa_groups"],
                     w["head_dim_qk"], w["head_dim_v"])
            layout, _ = preselect.kv_cache_layout(module, inputs, layout, sizes, inference.is_paged, inference)
        except preselect.Refused as why:
            raise Unrepresentable(f"inference {why}") from None
        if layout == "not_supported":
            raise Unrepresentable("inference layout not_supported")
    if hasattr(module, "QKVLayout") and layout not in module.QKVLayout:
        raise Unrepresentable(f"qkv_layout {layout}")
    # DotProductAttention.__init__: deterministic from NVTE_ALLOW_NONDETERMINISTIC_ALGO (the case's
    # environment is set) or torch's switch (the workload's `deterministic`).
    deterministic = inputs.deterministic(bool(w.get("deterministic", False)))

    fp8 = bool(w.get("fp8", False))
    recipe = _Recipe(w.get("fp8_recipe", "delayed"), bool(w.get("fp8_dpa", False)), bool(w.get("fp8_mha", False)))
    fp8_meta = None
    if fp8:
        # init_fp8_metadata: NVTE_DPA_FP8_RECIPE may swap the recipe or add one (2.8 on).
        try:
            fp8_meta = inputs.fp8_meta(recipe, _switched_recipe)
        except preselect.Refused as why:
            raise Unrepresentable(f"fp8_recipe {why}") from None
    bias = w.get("core_attention_bias_type", "no_bias")
    params = {
        "qkv_type": torch.Tensor,
        "qkv_dtype": DTYPES[w["qkv_dtype"]],
        "qkv_layout": layout,
        "batch_size": w["batch_size"],
        "num_heads": w["num_heads"],
        "num_gqa_groups": w["num_gqa_groups"],
        "max_seqlen_q": w["max_seqlen_q"],
        "max_seqlen_kv": w["max_seqlen_kv"],
        "head_dim_qk": w["head_dim_qk"],
        "head_dim_v": w["head_dim_v"],
        "attn_mask_type": mask,
        "window_size": window,
        "alibi_slopes_shape": None,
        "core_attention_bias_type": bias,
        # DotProductAttention passes the shape of the bias tensor, None without one (ALiBi too).
        "core_attention_bias_shape": w.get("core_attention_bias_shape", "1hss")
        if bias in ("pre_scale_bias", "post_scale_bias") else None,
        # DotProductAttention passes the bias tensor's requires_grad, False without a tensor.
        "core_attention_bias_requires_grad": bool(w.get("core_attention_bias_requires_grad", False))
        if bias in ("pre_scale_bias", "post_scale_bias") else False,
        "pad_between_seqs": bool(w.get("pad_between_seqs", False)),
        "attention_dropout": float(w.get("attention_dropout", 0.0)),
        "context_parallel": w["cp_size"] > 1,
        "cp_comm_type": w.get("cp_comm_type", "p2p"),
        "cp_size": w["cp_size"],
        "deterministic": deterministic,
        "is_training": bool(w.get("is_training", True)),
        "fp8": fp8,
        "fp8_meta": fp8_meta,
        "inference_params": inference,
        "softmax_type": w.get("softmax_type", "vanilla"),
        "return_max_logit": bool(w.get("return_max_logit", False)),
        "cuda_graph": bool(w.get("cuda_graph", False)),
        "num_splits": int(w.get("num_splits", 1)),
        "fp8_output": bool(w.get("fp8_output", False)),
        "checkpoint_core_attention": bool(w.get("checkpoint_core_attention", False)),
        "has_score_mod": bool(w.get("has_score_mod", False)),
    }
    if "bottom_right_diagonal" in fields:
        params["bottom_right_diagonal"] = brd
    if params["alibi_slopes_shape"] is None and bias == "alibi" and w.get("alibi_slopes_shape"):
        params["alibi_slopes_shape"] = [w["num_heads"]] if w["alibi_slopes_shape"] == "nh" else [w["batch_size"], w["num_heads"]]
    for name in list(params):
        if name in fields:
            continue
        value = params.pop(name)
        # A field AttentionParams lacks at this tag: when DotProductAttention takes the input
        # anyway (cp_size from the CP group, checkpoint_core_attention, fp8_output, a KV cache,
        # a CUDA graph), TE selects without it and the case is asked as it is; an input the tag
        # does not have at all must be at its meaning-neutral value.
        if name in ("bottom_right_diagonal", "inference_params") or inputs.accepts(name):
            continue
        neutral = {"softmax_type": "vanilla", "return_max_logit": False, "num_splits": 1,
                   "has_score_mod": False, "pad_between_seqs": False, "alibi_slopes_shape": None}
        if name in neutral and value != neutral[name]:
            raise Unrepresentable(f"{name}={value} before the tag had it")
    if "bottom_right_diagonal" not in fields and w.get("bottom_right_diagonal", True) is False and \
            mask not in ("causal", "padding_causal"):
        raise Unrepresentable("bottom_right_diagonal before TE 2.14")
    attention_params = module.AttentionParams(**params)

    log = _DebugLog(records)
    root = logging.getLogger()
    root.addHandler(log)
    root.setLevel(logging.DEBUG)
    dpa_logger = logging.getLogger("DotProductAttention")
    dpa_logger.addHandler(log)
    dpa_logger.setLevel(logging.DEBUG)
    dpa_logger.propagate = False
    try:
        result = module.get_attention_backend(attention_params)
    finally:
        root.removeHandler(log)
        dpa_logger.removeHandler(log)

    if len(result) == 6:
        use_flash, flash_backend, use_fused, fused_backend, use_unfused, available = result
    else:
        use_flash, use_fused, fused_backend, use_unfused, available = result
        flash_backend = None
    flash_generation = None
    if available[0]:
        if flash_backend is not None:
            version = PkgVersion(str(flash_backend))
            flash_generation = version.major if version.major in (2, 3, 4) else None
        else:  # TE 1.x / 2.0: a module global says whether FA3 was used
            flash_generation = 3 if getattr(module, "_use_flash_attn_3", False) else 2
    selected = None
    if use_flash:
        selected = "FlashAttention"
    elif use_fused:
        selected = "FusedAttention"
    elif use_unfused:
        selected = "UnfusedDotProductAttention"
    reasons = [line for line in log.lines if line.startswith("Disabling") or "not supported" in line]
    sub_backend = SUB_BACKENDS.get(int(fused_backend)) if (available[1] and fused_backend is not None) else None
    # Compact on purpose (the data is ~60k of these): availability of each backend, the fused
    # sub-backend in place of `true`, the flash-attn major in place of `true`.
    return {
        "selected": selected,
        "flash": flash_generation if available[0] else False,
        "fused": sub_backend if available[1] else False,
        "unfused": bool(available[2]),
        "reasons": reasons[:12],
    }
