"""What DotProductAttention does to its inputs before it calls get_attention_backend, at a tag,
done by the tag's own code.

nvte-doctor models this as its own step (src/model/dpa_inputs.cpp); the harness must not model
it a second time, or a mistake would agree with itself. So every rewrite here runs TE's code:

  determinism   the expression DotProductAttention.__init__ assigns to self.deterministic
                (NVTE_ALLOW_NONDETERMINISTIC_ALGO, torch's deterministic switch), cut out of the
                tag's source with ast and evaluated under the case's environment;
  window        check_set_window_size of the tag (the runner calls it);
  KV cache      the statements of forward's `if inference_params is not None:` block that read
                or change attn_mask_type / bottom_right_diagonal (the padding-mask assertion, the
                causal -> bottom-right rewrite), cut out and executed; from 2.2 the format change of
                InferenceParams.step (its own statements, on its own cache_qkv_format); and the
                layout, from the tag's get_qkv_layout on CPU tensors shaped as forward hands them
                over (Q, K, V made contiguous, K and V from the cache);
  FP8 recipe    init_fp8_metadata's switch on NVTE_DPA_FP8_RECIPE (2.8 on): the module-level
                reads of NVTE_DPA_FP8_* and the statements from `fp8_recipe_dpa = fp8_recipe` to
                the FP8 group (the if/elif chain that swaps or adds recipes, and 2.8-2.14's
                assertion that DotProductAttention takes only per-tensor recipes), executed on
                the case's recipe; the selector then sees fp8_meta["recipe"] and
                fp8_meta["local_recipes"] as that code leaves them.

A statement TE would fail on (an assertion) makes the case one TE refuses: Unrepresentable.
"""

import ast
import os
import types
from functools import lru_cache

import torch


class Refused(Exception):
    """DotProductAttention itself refuses the inputs (an assertion in forward)."""


def _parse(checkout, tag, needle):
    paths = checkout.grep(tag, needle, "transformer_engine/pytorch")
    if not paths:
        return None, None
    path = paths[0]
    return ast.parse(checkout.show(tag, path)), path


def _class(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    return None


def _method(cls, name):
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def _mentions(node, names):
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _assigns_self(node, attribute):
    return (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute)
            and isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id == "self"
            and node.targets[0].attr == attribute)


class TagInputs:
    """The pre-selection code of one tag, compiled once."""

    def __init__(self, checkout, tag):
        dpa_module, self.dpa_path = _parse(checkout, tag, "class DotProductAttention(")
        dpa = _class(dpa_module, "DotProductAttention")
        init, forward = _method(dpa, "__init__"), _method(dpa, "forward")
        if init is None or forward is None:
            raise RuntimeError(f"{tag}: DotProductAttention without __init__/forward in {self.dpa_path}")

        # The inputs DotProductAttention takes at the tag (its own and its CP group's arguments).
        self.arguments = set()
        for method in (init, forward, _method(dpa, "set_context_parallel_group")):
            if method is not None:
                self.arguments |= {a.arg for a in method.args.args + method.args.kwonlyargs}

        # self.deterministic = <expression>
        found = [n for n in ast.walk(init) if _assigns_self(n, "deterministic")]
        if len(found) != 1:
            raise RuntimeError(f"{tag}: {len(found)} assignments to self.deterministic in {self.dpa_path}")
        self.deterministic_code = compile(ast.Expression(found[0].value), self.dpa_path, "eval")

        # forward: if inference_params is not None: ... (the first such block that rewrites the mask)
        self.kv_mask_code = None
        for node in ast.walk(forward):
            if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                    and _mentions(node.test, {"inference_params"}) and isinstance(node.test.ops[0], ast.IsNot)):
                statements = [s for s in node.body if isinstance(s, (ast.Assert, ast.If))
                              and _mentions(s.test, {"attn_mask_type"})]
                if any(_mentions(s, {"attn_mask_type"}) for s in statements):
                    self.kv_mask_code = compile(ast.Module(body=statements, type_ignores=[]), self.dpa_path, "exec")
                    break
        if self.kv_mask_code is None:
            raise RuntimeError(f"{tag}: no KV-cache mask rewrite in {self.dpa_path}")

        # InferenceParams.step's format change (2.2 on): the assignments to self.*_qkv_format.
        self.step_format_code = None
        self.cache_format_code = None
        tree, path = _parse(checkout, tag, "class InferenceParams")
        params = _class(tree, "InferenceParams") if tree is not None else None
        step = _method(params, "step") if params is not None else None
        if step is not None and any(_assigns_self(n, "output_qkv_format") for n in ast.walk(step)):
            body = [s for s in step.body if isinstance(s, (ast.Assign, ast.If))
                    and any(_assigns_self(n, "input_qkv_format") or _assigns_self(n, "output_qkv_format")
                            for n in ast.walk(s))]
            self.step_format_code = compile(ast.Module(body=body, type_ignores=[]), path, "exec")
            cache = [n for n in ast.walk(_method(params, "__init__")) if _assigns_self(n, "cache_qkv_format")]
            if len(cache) != 1:
                raise RuntimeError(f"{tag}: {len(cache)} assignments to cache_qkv_format in {path}")
            self.cache_format_code = compile(ast.Expression(cache[0].value), path, "eval")

        # init_fp8_metadata's recipe switch (2.8 on) and the module-level NVTE_DPA_FP8_* reads.
        self.fp8_recipe_code = None
        self.fp8_globals_code = None
        fp8_init = _method(dpa, "init_fp8_metadata")
        if fp8_init is not None and _mentions(fp8_init, {"_dpa_fp8_recipe"}):
            body, inside = [], False
            for statement in fp8_init.body:
                targets = [t.id for t in getattr(statement, "targets", []) if isinstance(t, ast.Name)]
                if targets == ["fp8_recipe_dpa"]:
                    inside = True
                if targets == ["fp8_group"]:
                    break
                if inside:
                    body.append(statement)
            if not body:
                raise RuntimeError(f"{tag}: no recipe switch in {self.dpa_path}'s init_fp8_metadata")
            self.fp8_recipe_code = compile(ast.Module(body=body, type_ignores=[]), self.dpa_path, "exec")
            reads = [s for s in dpa_module.body if isinstance(s, ast.Assign) and len(s.targets) == 1
                     and isinstance(s.targets[0], ast.Name)
                     and (s.targets[0].id.startswith("_dpa_fp8") or s.targets[0].id == "formats")]
            self.fp8_globals_code = compile(ast.Module(body=reads, type_ignores=[]), self.dpa_path, "exec")

    # AttentionParams field -> the DotProductAttention argument it comes from (None: derived by
    # forward at every tag, e.g. cuda_graph from is_graph_capturing()).
    SOURCES = {"cp_size": "cp_group", "context_parallel": "cp_group", "cp_comm_type": "cp_comm_type",
               "has_score_mod": "score_mod", "cuda_graph": None}

    def accepts(self, field):
        """Whether DotProductAttention takes the input behind an AttentionParams field."""
        source = self.SOURCES.get(field, field)
        return source is None or source in self.arguments

    def deterministic(self, requested):
        """DotProductAttention's self.deterministic under the current os.environ; `requested`
        stands for torch.use_deterministic_algorithms(True), which the expression also reads."""
        before = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(bool(requested))
        try:
            return bool(eval(self.deterministic_code, {"os": os, "torch": torch}))
        finally:
            torch.use_deterministic_algorithms(before)

    def fp8_meta(self, recipe, make_recipe):
        """fp8_meta as init_fp8_metadata leaves it for the autocast recipe `recipe` under the
        current os.environ: {"recipe", "local_recipes"} (just the recipe before 2.8).
        make_recipe(kind, **kwargs) builds the recipes TE's code constructs."""
        if self.fp8_recipe_code is None:
            return {"recipe": recipe}
        namespace = {"os": os, "Format": types.SimpleNamespace(HYBRID="HYBRID", E4M3="E4M3", E5M2="E5M2"),
                     "List": list, "fp8_recipe": recipe,
                     "DelayedScaling": lambda **kw: make_recipe("delayed", **kw),
                     "Float8CurrentScaling": lambda **kw: make_recipe("current", **kw),
                     "MXFP8BlockScaling": lambda **kw: make_recipe("mxfp8", **kw)}
        try:
            exec(self.fp8_globals_code, namespace)
            exec(self.fp8_recipe_code, namespace)
        except AssertionError as why:
            raise Refused(str(why) or "FP8 recipe") from None
        recipes = namespace["fp8_recipes"]
        return {"recipe": namespace["fp8_recipe_dpa"], "local_recipes": recipes if isinstance(recipes, list) else [recipes]}

    def kv_cache_mask(self, mask, bottom_right_diagonal):
        namespace = {"attn_mask_type": mask, "bottom_right_diagonal": bottom_right_diagonal}
        try:
            exec(self.kv_mask_code, namespace)
        except AssertionError as why:
            raise Refused(str(why) or "KV cache") from None
        return namespace["attn_mask_type"], namespace["bottom_right_diagonal"]

    def kv_cache_format(self, qkv_format):
        """The qkv_format forward continues with after InferenceParams.step (unchanged before 2.2)."""
        if self.step_format_code is None:
            return qkv_format
        state = types.SimpleNamespace(cache_qkv_format=eval(self.cache_format_code, {}))
        exec(self.step_format_code, {"self": state, "qkv_format": qkv_format})
        return state.output_qkv_format


@lru_cache(maxsize=None)
def tag_inputs(checkout, tag):
    return TagInputs(checkout, tag)


# ---- tensors shaped as forward hands them to get_qkv_layout ---------------------------------


def _dims(fmt, b, s, h, d):
    return {"bshd": (b, s, h, d), "sbhd": (s, b, h, d), "thd": (b * s, h, d), "bhsd": (b, h, s, d)}[fmt]


def layout_tensors(layout, b, sq, skv, h, hg, dqk, dv):
    """Q, K, V as views of the tensors a layout names (packed ones share one allocation)."""
    parts = layout.split("_")
    if len(parts) == 1:  # bs3hd, sbh3d, t3hd, ...: one tensor
        fmt = parts[0].replace("3", "")
        at = parts[0].index("3")
        inner = (3, h, dqk) if parts[0][at + 1] == "h" else (h, 3, dqk)
        packed = torch.zeros(_dims(fmt, b, sq, 1, 1)[:-2] + inner)
        q, k, v = packed.unbind(dim=-3 if inner[0] == 3 else -2)
        return q, k, v, fmt
    if len(parts) == 2:  # bshd_bs2hd, sbhd_sbh2d, thd_t2hd, ...
        fmt = parts[0]
        inner = (2, hg, dqk) if "2h" in parts[1] else (hg, 2, dqk)
        packed = torch.zeros(_dims(fmt, b, skv, 1, 1)[:-2] + inner)
        k, v = packed.unbind(dim=-3 if inner[0] == 2 else -2)
        return torch.zeros(_dims(fmt, b, sq, h, dqk)), k, v, fmt
    qf, kf = parts[0], parts[1]
    q = torch.zeros(_dims(qf, b, sq, h, dqk))
    k = torch.zeros(_dims(kf, b, skv, hg, dqk))
    v = torch.zeros(_dims(kf, b, skv, hg, dv))
    return q, k, v, qf if qf == kf else f"{qf}_2{kf}"


def kv_cache_layout(module, inputs, layout, sizes, paged, inference_params):
    """(qkv_layout, qkv_format) TE's forward arrives at with a KV cache, from the tag's get_qkv_layout."""
    b, sq, skv, h, hg, dqk, dv = sizes
    q, k, v, fmt = layout_tensors(layout, b, sq, skv, h, hg, dqk, dv)
    if "_2" in fmt or fmt == "bhsd":
        raise Refused(f"KV cache with {layout}")  # forward takes one qkv_format for Q and K/V
    if inputs.step_format_code is None:
        # Before 2.2: K and V come out of the cache contiguous, in the input's format; Q as given.
        if fmt == "thd":
            raise Refused("KV cache with thd before TE 2.2")
        k = torch.zeros(_dims(fmt, b, skv, hg, dqk))
        v = torch.zeros(_dims(fmt, b, skv, hg, dv))
        result = module.get_qkv_layout(q, k, v, qkv_format=fmt)
        return result[0], fmt
    # 2.2 on: forward makes Q, K, V contiguous; step() returns the cache's K and V (bshd).
    new_format = inputs.kv_cache_format(fmt)
    q = q.contiguous()
    cache_k = torch.zeros(_dims("bshd", b, skv, hg, dqk))
    cache_v = torch.zeros(_dims("bshd", b, skv, hg, dv))
    result = module.get_qkv_layout(q, cache_k, cache_v, qkv_format=new_format, inference_params=inference_params)
    return result[0], new_format
