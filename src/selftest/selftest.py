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
built from the fields this TE version has ("selections": what it answers), then DotProductAttention
forward and backward, first as TE chooses under the node's NVTE_* settings ("default"), then with
each backend forced through NVTE_FLASH_ATTN / NVTE_FUSED_ATTN / NVTE_UNFUSED_ATTN. TE caches its
selection while the attention parameters are unchanged, so the cache is reset before each run and
read after it: "ran" is the backend TE really ran, and a forced backend TE did not run is skipped,
never counted. Outputs and gradients are compared with torch's math SDPA in fp32.
TE installed but not importable (a missing requirement such as pydantic, a cuDNN clash) is a
failure with Python's own message; torch's SDPA backends run instead.
Without TE: torch.nn.functional.scaled_dot_product_attention with each SDPA backend (cuDNN,
flash, efficient) against the math backend in fp32, forward and backward.
"bytecode": whether torch's and TE's own bytecode is usable ("unusable" lists the packages whose
is missing or stale) and the sys.pycache_prefix this process then used ("prefix": the doctor's
cache, given as "bytecode_cache" in the argument, or the caller's PYTHONPYCACHEPREFIX).
"mapped": the cuDNN / NVRTC / cuBLAS files this process has mapped once torch and TE are imported
(/proc/self/maps), the truth the doctor's load-order model predicts.
"loaded" (an ok answer only): every file and directory the answer depended on (loaded_files);
the doctor takes it out of the result and reuses the answer while none of them changes
(src/selftest/python_reuse.hpp); "not_kept" instead says why there is no such list.
"timings": where this process's time went, in seconds (issue 40's budget for the tier is 2 s):
"start" (interpreter start to this script's first line, from the process's start time),
"import_torch", "import_te" (after torch's and before any CUDA work, as a job imports them),
"gate" (waiting for the doctor's CUDA checks to finish: with {"gate": true} in its argument the
script reads stdin to its end before its first GPU work, so that it shares the GPU with no other
check), "cuda_init" (the CUDA context, the GPU's name, cuDNN's version), "reference" (the fp32 references, all workloads), "cases" (the backends' runs, references
excluded), "total" (the process's age at the end). Read it in `selftest --format json`: the python
check's "result".
"""
import time

_T0 = time.perf_counter()

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

TOLERANCE = {"bf16": 2.5e-2, "fp16": 5e-3}
TIMINGS = {}


def lap(name, since):
    """Adds the seconds since `since` to TIMINGS[name]; returns now."""
    now = time.perf_counter()
    TIMINGS[name] = round(TIMINGS.get(name, 0.0) + now - since, 4)
    return now


def process_age():
    """Seconds since this process started (/proc/self/stat's start time), or None."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def timings():
    out = dict(TIMINGS)
    age = process_age()
    if age is not None:
        out["total"] = round(age, 3)
        out["start"] = round(max(age - (time.perf_counter() - _T0), 0.0), 3)
    return out


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def bytecode_usable(name):
    """Whether the package `name` has bytecode Python will use (its __init__'s .pyc beside the
    source, valid for it); True when there is no such source to speak of."""
    import importlib.util
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return True
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return True
    try:
        with open(importlib.util.cache_from_source(spec.origin), "rb") as f:
            head = f.read(16)
        st = os.stat(spec.origin)
    except (OSError, NotImplementedError, ValueError):
        return False
    if len(head) < 16 or head[:4] != importlib.util.MAGIC_NUMBER:
        return False
    if int.from_bytes(head[4:8], "little") & 1:  # hash-based: Python checks the hash itself
        return True
    return (int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF and
            int.from_bytes(head[12:16], "little") == st.st_size & 0xFFFFFFFF)


def use_bytecode_cache(prefix):
    """Where torch's or TE's own bytecode is missing or stale (PYTHONDONTWRITEBYTECODE, a
    read-only image, pip's --no-compile), every process compiles their thousands of modules from
    source: seconds each time. Then this process keeps what it compiles in the doctor's private
    cache instead (sys.pycache_prefix), and the next self-test reads it from there; the
    environment itself is left as it is. Returns what it found and did, for the result."""
    unusable = [name for name in ("torch", "transformer_engine") if not bytecode_usable(name)]
    out = {"unusable": unusable, "prefix": sys.pycache_prefix}
    if unusable and prefix and sys.pycache_prefix is None:
        sys.pycache_prefix = prefix
        sys.dont_write_bytecode = False  # the sources' directories stay untouched all the same
        out["prefix"] = prefix
    return out


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


def mapped_libraries():
    """The cuDNN, NVRTC and cuBLAS files mapped into this process."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/" in line}
    except OSError:
        return []
    keys = ("libcudnn", "libnvrtc", "libcublas", "libtransformer_engine")
    return sorted(p for p in paths if any(os.path.basename(p).startswith(k) for k in keys))


def loaded_files():
    """Every file and directory this process depended on, for the doctor to reuse its answer
    while none of them changes: the interpreter, each imported module's file, each file mapped
    into it (libraries, cuDNN's sub-libraries its runs loaded), the sys.path entries and the user
    site directory, existing or not (one created later adds to sys.path). The doctor adds the
    directory of each. Returns the sorted list, or why there is none (the answer is then not
    kept): a library or module mapped after its file was deleted (replaced while this ran), or a
    path that is not UTF-8 text the doctor could read back. Other deleted mappings are scratch
    (CUDA's and NCCL's shared memory, memfd), not inputs."""
    import site
    paths = {sys.executable, os.path.realpath(sys.executable)}
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if isinstance(name, str) and name:
            paths.add(os.path.abspath(name))
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) < 6 or not fields[5].startswith("/"):
                    continue
                path = fields[5].rstrip("\n")
                if path.startswith(("/dev/", "/proc/", "/sys/", "/memfd:")):
                    continue
                if path.endswith(" (deleted)"):
                    base = os.path.basename(path[:-len(" (deleted)")])
                    if ".so" in base or base.endswith((".py", ".pyc")):
                        return "%s was replaced while the tier ran" % path[:-len(" (deleted)")]
                    continue
                paths.add(path)
    except OSError as e:
        return "/proc/self/maps: %s" % e
    paths.update(os.path.abspath(p) for p in sys.path if p)
    user_site = site.getusersitepackages()
    if isinstance(user_site, str) and user_site:
        paths.add(user_site)
    for p in paths:
        try:
            p.encode("utf-8")
        except UnicodeEncodeError:
            return "%r is not UTF-8" % p
    return sorted(paths)


def label_of(w):
    label = "%s %s b%d h%d/%d s%d d%d/%d %s" % (w["dtype"], w["layout"], w["batch"], w["heads"], w["kv_heads"], w["seq_q"],
                                               w["dim_qk"], w["dim_v"], "causal" if w["causal"] else "no_mask")
    if w.get("window_left", -1) >= 0:
        label += " window %d,%d" % (w["window_left"], 0 if w["causal"] else w.get("window_right", -1))
    return label


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
        ref_start = time.perf_counter()
        ref_in = [t.detach().float().requires_grad_() for t in (q, k, v)]
        ref = attend(SDPBackend.MATH, *ref_in)
        ref.backward(grad.float())
        torch.cuda.synchronize()
        lap("reference", ref_start)
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


# get_attention_backend's answer, by its length: TE >= 2.3 returns (use_flash_attention,
# flash_attention_backend, use_fused_attention, fused_attention_backend, use_unfused_attention,
# available_backends); TE 1.x-2.2 the same without flash_attention_backend (utils.py / attention.py
# at each tag).
SELECTOR_FIELDS = {
    6: ("use_flash_attention", "flash_attention_backend", "use_fused_attention", "fused_attention_backend",
        "use_unfused_attention", "available_backends"),
    5: ("use_flash_attention", "use_fused_attention", "fused_attention_backend", "use_unfused_attention",
        "available_backends"),
}

FORCED = (("FusedAttention", {"NVTE_FLASH_ATTN": "0", "NVTE_FUSED_ATTN": "1", "NVTE_UNFUSED_ATTN": "0"}),
          ("FlashAttention", {"NVTE_FLASH_ATTN": "1", "NVTE_FUSED_ATTN": "0", "NVTE_UNFUSED_ATTN": "0"}),
          ("UnfusedDotProductAttention", {"NVTE_FLASH_ATTN": "0", "NVTE_FUSED_ATTN": "0", "NVTE_UNFUSED_ATTN": "1"}))


def first_line(e):
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def backend_name(answer):
    """The backend a selector answer (a dict of SELECTOR_FIELDS) names, as TE's debug log does."""
    if answer.get("use_flash_attention"):
        return "FlashAttention"
    if answer.get("use_fused_attention"):
        sub = answer.get("fused_attention_backend")
        return "FusedAttention" + (" (%s)" % str(sub).split(".")[-1] if sub is not None else "")
    if answer.get("use_unfused_attention"):
        return "UnfusedDotProductAttention"
    return "none"


def find_selector(torch):
    for mod in ("transformer_engine.pytorch.attention.dot_product_attention.utils",
                "transformer_engine.pytorch.dot_product_attention.utils", "transformer_engine.pytorch.attention"):
        try:
            utils = __import__(mod, fromlist=["get_attention_backend"])
        except ImportError:
            continue
        if hasattr(utils, "get_attention_backend") and hasattr(utils, "AttentionParams"):
            return utils
    return None


def find_backend_cache(dpa_class):
    """TE keeps its last selection in a module dict (_attention_backends) and reuses it while the
    attention parameters are unchanged, whatever NVTE_* says meanwhile: forcing a backend needs the
    cache reset, and reading it after a forward tells which backend really ran."""
    module = sys.modules.get(dpa_class.__module__)
    for mod in (module, sys.modules.get("transformer_engine.pytorch.attention")):
        cache = getattr(mod, "_attention_backends", None) if mod is not None else None
        if isinstance(cache, dict) and "attention_params" in cache:
            return cache
    return None


def te_selector(torch, utils, w, mask, fmt, window):
    fields = getattr(utils.AttentionParams, "__dataclass_fields__", {})
    wanted = dict(qkv_type=torch.Tensor, qkv_dtype=torch.bfloat16 if w["dtype"] == "bf16" else torch.float16,
                  qkv_layout=w["layout"], qkv_format=fmt, batch_size=w["batch"], num_heads=w["heads"],
                  num_gqa_groups=w["kv_heads"], max_seqlen_q=w["seq_q"], max_seqlen_kv=w["seq_kv"],
                  head_dim_qk=w["dim_qk"], head_dim_v=w["dim_v"], attn_mask_type=mask,
                  window_size=window or ((-1, 0) if w["causal"] else (-1, -1)), is_training=True)
    try:
        params = utils.AttentionParams(**{k: v for k, v in wanted.items() if k in fields})
        answer = utils.get_attention_backend(params)
    except Exception as e:
        return {"error": first_line(e)}
    names = SELECTOR_FIELDS.get(len(answer))
    if names is None:
        return {"error": "get_attention_backend returned %d values; this self-test reads 5 or 6" % len(answer)}
    got = dict(zip(names, answer))
    out = {k: (v if isinstance(v, bool) or v is None else str(v)) for k, v in got.items() if k != "available_backends"}
    out["backend"] = backend_name(got)
    return out


def run_te(torch, te, workloads):
    from transformer_engine.pytorch import DotProductAttention
    import torch.nn.functional as F
    utils = find_selector(torch)
    cache = find_backend_cache(DotProductAttention)
    saved = {k: os.environ.get(k) for k in ("NVTE_FLASH_ATTN", "NVTE_FUSED_ATTN", "NVTE_UNFUSED_ATTN")}

    def restore():
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    cases, selections = [], []
    for w in workloads:
        fmt = "sbhd" if w["layout"].startswith("sb") else "bshd"
        mask = "causal" if w["causal"] else "no_mask"
        window = None
        if w.get("window_left", -1) >= 0 or w.get("window_right", -1) > 0:
            window = (int(w.get("window_left", -1)), 0 if w["causal"] else int(w.get("window_right", -1)))
        q, k, v, grad = make_inputs(torch, w, "cuda")
        started = time.perf_counter()
        # The reference: torch's math SDPA in fp32 on the same inputs ([batch, heads, seq, dim]);
        # a sliding window as an explicit mask (query i sees keys i-left .. i+right).
        ref_in = [t.detach().float().requires_grad_() for t in (q, k, v)]
        gqa = w["heads"] != w["kv_heads"]
        if window is None:
            ref = F.scaled_dot_product_attention(*ref_in, is_causal=w["causal"], enable_gqa=gqa)
        else:
            i = torch.arange(w["seq_q"], device="cuda").unsqueeze(1)
            j = torch.arange(w["seq_kv"], device="cuda").unsqueeze(0)
            allowed = torch.ones(w["seq_q"], w["seq_kv"], dtype=torch.bool, device="cuda")
            if window[0] >= 0:
                allowed &= j >= i - window[0]
            if window[1] >= 0:
                allowed &= j <= i + window[1]
            ref = F.scaled_dot_product_attention(*ref_in, attn_mask=allowed, enable_gqa=gqa)
        ref.backward(grad.float())
        if fmt == "bshd":
            to_fmt = lambda t: t.permute(0, 2, 1, 3).contiguous()  # noqa: E731
        else:
            to_fmt = lambda t: t.permute(2, 0, 1, 3).contiguous()  # noqa: E731
        ref_out = to_fmt(ref.detach())
        ref_grads = [to_fmt(t.grad) for t in ref_in]
        torch.cuda.synchronize()
        lap("reference", started)
        selection = {"label": label_of(w), "selector": te_selector(torch, utils, w, mask, fmt, window) if utils else
                     {"error": "this TE has no get_attention_backend the self-test knows"}}
        tol = TOLERANCE[w["dtype"]]
        scale = max(ref_out.abs().max().item(), 1.0)
        grad_scale = max(max(g.abs().max().item() for g in ref_grads), 1.0)

        def attend(forced, env):
            case = {"label": label_of(w), "backend": forced}
            restore()
            os.environ.update(env)
            if cache is not None:
                cache["attention_params"] = None
                cache["backend_selection_requires_update"] = True
            try:
                qq, kk, vv = [to_fmt(t).detach().requires_grad_() for t in (q, k, v)]
                extra = {"window_size": window} if window is not None else {}
                dpa = DotProductAttention(w["heads"], (w["dim_qk"], w["dim_v"]) if w["dim_qk"] != w["dim_v"] else w["dim_qk"],
                                          num_gqa_groups=w["kv_heads"], attn_mask_type=mask, qkv_format=fmt, **extra)
                torch.cuda.synchronize()
                start = time.perf_counter()
                out = dpa(qq, kk, vv)
                out.backward(to_fmt(grad).reshape(out.shape))
                torch.cuda.synchronize()
                case["ms"] = (time.perf_counter() - start) * 1e3
            except Exception as e:
                # TE refusing the forced backend for this shape ("No dot product attention
                # backend is available") is data: skipped. A backend TE selected and then failed
                # to run (a cuDNN error, say) is a failure, whichever run it was.
                selected = backend_name(cache) if cache is not None and cache.get("attention_params") is not None else "none"
                if selected != "none":
                    case.update(status="failed", ran=selected, error="%s failed: %s" % (selected, first_line(e)))
                else:
                    case.update(status="skipped", error=first_line(e))
                return case
            finally:
                restore()
            ran = backend_name(cache) if cache is not None else None
            if ran is not None:
                case["ran"] = ran
            if forced != "default" and ran is not None and not ran.startswith(forced):
                case.update(status="skipped", error="TE ran %s when %s was forced" % (ran, forced))
                return case
            fwd = (out.detach().float().reshape(ref_out.shape) - ref_out).abs().max().item()
            bwd = max((t.grad.float() - g).abs().max().item() for t, g in zip((qq, kk, vv), ref_grads))
            case.update(fwd_max_abs_err=fwd, bwd_max_abs_err=bwd,
                        status="ok" if fwd <= tol * 2 * scale and bwd <= tol * 4 * grad_scale else "failed")
            if case["status"] == "failed":
                case["error"] = "%s differs from the fp32 math reference: forward %.4g, backward %.4g" % (
                    ran or forced, fwd, bwd)
            return case

        # TE's own choice under the node's NVTE_* settings, then each backend forced in turn.
        default = attend("default", {})
        selection["chosen"] = default.get("ran", "none" if default.get("status") == "skipped" else "unknown")
        if "error" in default:
            selection["error"] = default["error"]
        selections.append(selection)
        cases.append(default)
        for forced, env in FORCED:
            if cache is None:
                cases.append({"label": label_of(w), "backend": forced, "status": "skipped",
                              "error": "this TE keeps no backend cache the self-test can reset, so a forced backend cannot be told apart"})
                continue
            cases.append(attend(forced, env))
    return cases, selections


def main():
    args = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    workloads = args.get("workloads") or [{"dtype": "bf16", "layout": "bshd_bshd_bshd", "batch": 2, "heads": 16, "kv_heads": 16,
                                          "seq_q": 512, "seq_kv": 512, "dim_qk": 128, "dim_v": 128, "causal": True}]
    t = time.perf_counter()
    bytecode = use_bytecode_cache(args.get("bytecode_cache"))
    try:
        import torch
    except ImportError as e:
        emit({"status": "skipped", "error": "torch is not importable: %s" % e, "te_present": False})
        return
    t = lap("import_torch", t)
    result = {"torch": torch.__version__, "python": sys.version.split()[0], "bytecode": bytecode}
    if not torch.cuda.is_available():  # the driver only: no context, no GPU memory
        emit(dict(result, status="skipped", error="no GPU: torch.cuda.is_available() is False", te_present=False,
                  timings=timings()))
        return
    # TE's import, as a job does it: after torch's, before any CUDA work.
    import importlib.util
    te_spec = importlib.util.find_spec("transformer_engine")
    te, te_error = None, None
    if te_spec is not None:
        try:
            import transformer_engine
            import transformer_engine.pytorch  # noqa: F401
            te = transformer_engine
        except Exception as e:  # ImportError, or a RuntimeError from a library clash at import
            te_error = e
    t = lap("import_te", t)
    if args.get("gate"):
        # The doctor's CUDA checks run meanwhile: the GPU is this process's once stdin ends.
        sys.stdin.read()
        t = lap("gate", t)
    result["gpu"] = torch.cuda.get_device_name(0)
    result["cudnn"] = torch.backends.cudnn.version()
    t = lap("cuda_init", t)
    result["mapped"] = mapped_libraries()
    if te is not None:
        result["te_present"] = True
        result["te_version"] = getattr(te, "__version__", "")
        result["te_path"] = os.path.dirname(te.__file__)
        cases, result["selections"] = run_te(torch, te, workloads)
    else:
        result["te_present"] = te_spec is not None
        if te_spec is not None:
            result["te_import_error"] = "%s: %s" % (type(te_error).__name__, first_line(te_error))
            result["te_path"] = os.path.dirname(te_spec.origin or "") or None
            why = first_line(te_error)
        else:
            why = "No module named 'transformer_engine'"
        result["note"] = "TransformerEngine is not importable here (%s): ran torch's SDPA backends instead" % why
        cases = run_torch(torch, workloads)
    lap("cases", t)
    TIMINGS["cases"] = round(max(TIMINGS["cases"] - TIMINGS.get("reference", 0.0), 0.0), 4)
    result["timings"] = timings()
    result["cases"] = cases
    bad = [c for c in cases if c.get("status") == "failed"]
    fwd = [c["fwd_max_abs_err"] for c in cases if "fwd_max_abs_err" in c]
    if fwd:
        result["max_abs_err"] = max(fwd)
    result["status"] = "failed" if bad else "ok" if any(c.get("status") == "ok" for c in cases) else "skipped"
    if bad:
        result["error"] = bad[0]["label"] + ": " + bad[0]["error"]
    if "te_import_error" in result:
        result["status"] = "failed"
        result["stage"] = "import"
        result["error"] = "transformer_engine is installed (%s) but does not import: %s" % (
            result.get("te_path") or "?", result["te_import_error"])
    if result["status"] == "ok":
        loaded = loaded_files()
        if isinstance(loaded, list):
            result["loaded"] = loaded
        else:
            result["not_kept"] = "this answer is not reused by later self-tests: " + loaded
    emit(result)


if __name__ == "__main__":
    main()
