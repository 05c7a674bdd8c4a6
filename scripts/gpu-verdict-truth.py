#!/usr/bin/env python3
"""What TE's DotProductAttention does in one process, for the verdict-truth stage of
scripts/gpu-validate.sh: llama-3-8b's attention (bf16, bshd, causal, 32 heads, 8 KV groups,
head_dim 128, b=1, s=8192: the shape `explain --hf-config tests/fixtures/hf/llama-3-8b` assumes),
forward and backward, with TE's debug log on (NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2, set by the caller)
so that `nvte-doctor explain --te-log` reads what TE selected. With --torch-sdpa-first the process
first runs PyTorch's own cuDNN attention, as a training script that mixes both does.
Prints one line: RESULT ran|failed <error>."""
import argparse
import sys
import traceback

p = argparse.ArgumentParser()
p.add_argument("--torch-sdpa-first", action="store_true")
a = p.parse_args()

import torch  # noqa: E402  (torch first: the import order of a usual training script)

if a.torch_sdpa_first:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.randn(1, 32, 1024, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()
    torch.cuda.synchronize()
    print("torch cuDNN SDPA ran first", flush=True)

import transformer_engine.pytorch as te  # noqa: E402

try:
    dpa = te.DotProductAttention(32, 128, num_gqa_groups=8, attn_mask_type="causal", qkv_format="bshd")
    q = torch.randn(1, 8192, 32, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(1, 8192, 8, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(1, 8192, 8, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    out = dpa(q, k, v)
    out.float().sum().backward()
    torch.cuda.synchronize()
    print("RESULT ran", flush=True)
except Exception as e:  # what the job would see
    traceback.print_exc()
    print("RESULT failed " + " ".join(str(e).split())[:300], flush=True)
sys.exit(0)
