#!/usr/bin/env python3
"""nvte-doctor's Python tier: attention kernels as PyTorch / TransformerEngine run them.

Started by `nvte-doctor selftest` with the interpreter that has TE (else torch) and a timeout:
    python3 selftest.py '{"workloads": [{"dtype": "bf16", "layout": "bshd_bshd_bshd", "batch": 2,
                          "heads": 16, "kv_heads": 4, "seq_q": 512, "seq_kv": 512,
                          "dim_qk": 128, "dim_v": 128, "causal": true}, ...]}'
It prints exactly one JSON object as its last line of stdout:
    {"status": "ok"|"failed"|"skipped", "error": ..., "te_present": bool, "torch": "2.11.0",
     "cases": [{"label", "backend", "status", "error", "fwd_max_abs_err", "bwd_max_abs_err", "ms"}]}

With TransformerEngine: for each workload, TE's own get_attention_backend with AttentionParams
built from the fields this TE version has, then DotProductAttention forward and backward with
each backend forced through NVTE_FLASH_ATTN / NVTE_FUSED_ATTN / NVTE_UNFUSED_ATTN (set before
TE picks, reset between runs), outputs and gradients compared with the unfused run.
Without TE: torch.nn.functional.scaled_dot_product_attention with each SDPA backend (cuDNN,
flash, efficient) against the math backend in fp32, forward and backward.
"""
import json
import os
import sys
import time

TOLERANCE = {"bf16": 2.5e-2, "fp16": 5e-3}


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def make_inputs(torch, w, device):
    dtype = torch.bfloat16 if w["dtype"] == "bf16" else torch.float16
    gen = torch.Generator(device="cpu").manual_seed(1234)

    def rand(heads, seq, dim):
        # [batch, heads, seq, dim] for torch SDPA
        return (torch.rand(w["batch"], heads, seq, dim, generator=gen) * 2 - 1).to(device=device, dtype=dtype)

    q = rand(w["heads"], w["seq_q"], w["dim_qk"])
    k = rand(w["kv_heads"], w["seq_kv"], w["dim_qk"])
    v = rand(w["kv_heads"], w["seq_kv"], w["dim_v"])
    grad = rand(w["heads"], w["seq_q"], w["dim_v"])
    return q, k, v, grad


def label_of(w):
    return "%s %s b%d h%d/%d s%d d%d/%d %s" % (w["dtype"], w["layout"], w["batch"], w["heads"], w["kv_heads"], w["seq_q"],
                                              w["dim_qk"], w["dim_v"], "causal" if w["causal"] else "no_mask")


def run_torch(torch, workloads):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    backends = [("cudnn", getattr(SDPBackend, "CUDNN_ATTENTION", None)), ("flash", SDPBackend.FLASH_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
    cases = []
    for w in workloads:
        q, k, v, grad = make_inputs(torch, w, "cuda")
        gqa = w["heads"] != w["kv_heads"]

        def attend(backend, qq, kk, vv):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(qq, kk, vv, is_causal=w["causal"], enable_gqa=gqa)

        # Reference: the math backend in fp32.
        ref_in = [t.detach().float().requires_grad_() for t in (q, k, v)]
        ref = attend(SDPBackend.MATH, *ref_in)
        ref.backward(grad.float())
        for name, backend in backends:
            case = {"label": label_of(w), "backend": name}
            if backend is None:
                case.update(status="skipped", error="this torch has no SDPBackend for " + name)
                cases.append(case)
                continue
            inputs = [t.detach().clone().requires_grad_() for t in (q, k, v)]
            try:
                torch.cuda.synchronize()
                start = time.perf_counter()
                out = attend(backend, *inputs)
                out.backward(grad)
                torch.cuda.synchronize()
                case["ms"] = (time.perf_counter() - start) * 1e3
            except Exception as e:  # a backend that does not take this shape is data
                case.update(status="skipped", error=str(e).splitlines()[0] if str(e) else type(e).__name__)
                cases.append(case)
                continue
            tol = TOLERANCE[w["dtype"]]
            fwd = (out.float() - ref).abs().max().item()
            bwd = max((a.grad.float() - b.grad).abs().max().item() for a, b in zip(inputs, ref_in))
            scale = max(ref.abs().max().item(), 1.0)
            grad_scale = max(max(b.grad.abs().max().item() for b in ref_in), 1.0)
            case.update(fwd_max_abs_err=fwd, bwd_max_abs_err=bwd,
                        status="ok" if fwd <= tol * 2 * scale and bwd <= tol * 4 * grad_scale else "failed")
            if case["status"] == "failed":
                case["error"] = "%s differs from the fp32 math reference: forward %.4g, backward %.4g" % (name, fwd, bwd)
            cases.append(case)
    return cases


def run_te(torch, te, workloads):
    import inspect
    from transformer_engine.pytorch import DotProductAttention
    utils = None
    for mod in ("transformer_engine.pytorch.attention.dot_product_attention.utils",
                "transformer_engine.pytorch.dot_product_attention.utils", "transformer_engine.pytorch.attention"):
        try:
            utils = __import__(mod, fromlist=["get_attention_backend"])
            if hasattr(utils, "get_attention_backend"):
                break
        except ImportError:
            continue
    cases = []
    for w in workloads:
        case_base = {"label": label_of(w)}
        fmt = w["layout"].split("_")[0][:4] if w["layout"] else "bshd"
        if fmt not in ("bshd", "sbhd"):
            fmt = "sbhd" if w["layout"].startswith("sb") else "bshd"
        mask = "causal" if w["causal"] else "no_mask"
        selected = None
        if utils is not None and hasattr(utils, "AttentionParams"):
            fields = getattr(utils.AttentionParams, "__dataclass_fields__", {})
            wanted = dict(qkv_type=torch.Tensor, qkv_dtype=torch.bfloat16 if w["dtype"] == "bf16" else torch.float16,
                          qkv_layout=w["layout"], batch_size=w["batch"], num_heads=w["heads"],
                          num_gqa_groups=w["kv_heads"], max_seqlen_q=w["seq_q"], max_seqlen_kv=w["seq_kv"],
                          head_dim_qk=w["dim_qk"], head_dim_v=w["dim_v"], attn_mask_type=mask,
                          window_size=(-1, 0) if w["causal"] else (-1, -1), is_training=True)
            try:
                params = utils.AttentionParams(**{k: v for k, v in wanted.items() if k in fields})
                answer = utils.get_attention_backend(params)
                names = ["use_flash_attention", "use_fused_attention", "fused_attention_backend", "use_unfused_attention"]
                selected = {n: str(answer[i]) for i, n in enumerate(names) if i < len(answer)}
            except Exception as e:
                selected = {"error": str(e).splitlines()[0] if str(e) else type(e).__name__}
        outputs = {}
        for backend, env in (("UnfusedDotProductAttention", {"NVTE_FLASH_ATTN": "0", "NVTE_FUSED_ATTN": "0", "NVTE_UNFUSED_ATTN": "1"}),
                             ("FusedAttention", {"NVTE_FLASH_ATTN": "0", "NVTE_FUSED_ATTN": "1", "NVTE_UNFUSED_ATTN": "0"}),
                             ("FlashAttention", {"NVTE_FLASH_ATTN": "1", "NVTE_FUSED_ATTN": "0", "NVTE_UNFUSED_ATTN": "0"})):
            case = dict(case_base, backend=backend, selector=selected)
            os.environ.update(env)
            try:
                q, k, v, grad = make_inputs(torch, w, "cuda")
                to_fmt = (lambda t: t.permute(0, 2, 1, 3).contiguous()) if fmt == "bshd" else (lambda t: t.permute(2, 0, 1, 3).contiguous())
                qq, kk, vv = [to_fmt(t).requires_grad_() for t in (q, k, v)]
                dpa = DotProductAttention(w["heads"], (w["dim_qk"], w["dim_v"]) if w["dim_qk"] != w["dim_v"] else w["dim_qk"],
                                          num_gqa_groups=w["kv_heads"], attn_mask_type=mask, qkv_format=fmt)
                torch.cuda.synchronize()
                start = time.perf_counter()
                out = dpa(qq, kk, vv)
                out.backward(to_fmt(grad).reshape(out.shape))
                torch.cuda.synchronize()
                case["ms"] = (time.perf_counter() - start) * 1e3
                outputs[backend] = (out.detach().float(), [t.grad.float() for t in (qq, kk, vv)])
                case["status"] = "ok"
            except Exception as e:
                case.update(status="skipped", error=str(e).splitlines()[0] if str(e) else type(e).__name__)
            cases.append(case)
        ref = outputs.get("UnfusedDotProductAttention")
        for case in cases[-3:]:
            got = outputs.get(case["backend"])
            if ref is None or got is None or case["backend"] == "UnfusedDotProductAttention":
                continue
            tol = TOLERANCE[w["dtype"]]
            case["fwd_max_abs_err"] = (got[0] - ref[0]).abs().max().item()
            case["bwd_max_abs_err"] = max((a - b).abs().max().item() for a, b in zip(got[1], ref[1]))
            if case["fwd_max_abs_err"] > tol * 2 or case["bwd_max_abs_err"] > tol * 8:
                case["status"] = "failed"
                case["error"] = "%s and UnfusedDotProductAttention disagree: forward %.4g, backward %.4g" % (
                    case["backend"], case["fwd_max_abs_err"], case["bwd_max_abs_err"])
    return cases


def main():
    args = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    workloads = args.get("workloads") or [{"dtype": "bf16", "layout": "bshd_bshd_bshd", "batch": 2, "heads": 16, "kv_heads": 16,
                                          "seq_q": 512, "seq_kv": 512, "dim_qk": 128, "dim_v": 128, "causal": True}]
    try:
        import torch
    except ImportError as e:
        emit({"status": "skipped", "error": "torch is not importable: %s" % e, "te_present": False})
        return
    result = {"torch": torch.__version__, "python": sys.version.split()[0]}
    if not torch.cuda.is_available():
        emit(dict(result, status="skipped", error="no GPU: torch.cuda.is_available() is False", te_present=False))
        return
    result["gpu"] = torch.cuda.get_device_name(0)
    result["cudnn"] = torch.backends.cudnn.version()
    try:
        import transformer_engine as te
        import transformer_engine.pytorch  # noqa: F401
        result["te_present"] = True
        result["te_version"] = getattr(te, "__version__", "")
        cases = run_te(torch, te, workloads)
    except ImportError as e:
        result["te_present"] = False
        result["note"] = "TransformerEngine is not importable here (%s): ran torch's SDPA backends instead" % e
        cases = run_torch(torch, workloads)
    result["cases"] = cases
    bad = [c for c in cases if c.get("status") == "failed"]
    fwd = [c["fwd_max_abs_err"] for c in cases if "fwd_max_abs_err" in c]
    if fwd:
        result["max_abs_err"] = max(fwd)
    result["status"] = "failed" if bad else "ok" if any(c.get("status") == "ok" for c in cases) else "skipped"
    if bad:
        result["error"] = bad[0]["label"] + ": " + bad[0]["error"]
    emit(result)


if __name__ == "__main__":
    main()
