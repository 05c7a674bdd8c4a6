"""Builds TE's own fused-attention backend selector for one tag into a shared library.

nvte_get_fused_attn_backend (transformer_engine/common/fused_attn/fused_attn.cpp) decides which
cuDNN sub-backend takes a workload. It asks the machine three things: the SM of the current
device, cudnnGetVersion() and an environment variable. We cut that function and the layout
helpers it calls out of the tag's source (never copying them into this repository), compile
them with g++ against the tag's own public headers plus shim/prelude.hpp, and call the result
through ctypes with the machine the case describes.
"""

import ctypes
import hashlib
import os
import re
import subprocess
import tempfile
from pathlib import Path

from tegit import TeCheckout

SHIM_DIR = Path(__file__).resolve().parent / "shim"
FUSED_ATTN_CPP = "transformer_engine/common/fused_attn/fused_attn.cpp"
FUSED_ATTN_UTILS = "transformer_engine/common/fused_attn/utils.cu"
PUBLIC_HEADERS = "transformer_engine/common/include/transformer_engine"

# The helpers nvte_get_fused_attn_backend calls, where the tag has them.
HELPERS = ["nvte_get_qkv_layout_group", "nvte_get_qkv_format", "nvte_get_q_format", "nvte_get_kv_format"]


def extract_function(source: str, name: str):
    """The text of the top-level function `name` (signature to closing brace), or None."""
    match = re.search(r"^[A-Za-z_][\w:<>, ]*\b" + re.escape(name) + r"\s*\(", source, re.MULTILINE)
    if not match:
        return None
    start = match.start()
    open_brace = source.index("{", match.end())
    depth = 0
    for i in range(open_brace, len(source)):
        if source[i] == "{":
            depth += 1
        elif source[i] == "}":
            depth -= 1
            if depth == 0:
                return source[start : i + 1]
    raise ValueError(f"unbalanced braces in {name}")


def parse_prototype(header: str):
    """[(type, name)] of nvte_get_fused_attn_backend's parameters in the public header."""
    match = re.search(r"NVTE_Fused_Attn_Backend\s+nvte_get_fused_attn_backend\s*\(([^)]*)\)\s*;", header)
    if not match:
        raise ValueError("nvte_get_fused_attn_backend not declared in fused_attn.h")
    params = []
    for part in match.group(1).split(","):
        words = part.replace("const", " ").split()
        params.append((" ".join(words[:-1]), words[-1]))
    return params


CTYPES = {
    "bool": ctypes.c_bool,
    "float": ctypes.c_float,
    "size_t": ctypes.c_size_t,
    "int64_t": ctypes.c_int64,
    "int": ctypes.c_int,
}


def ctype_of(c_type: str):
    # Every other parameter type is one of TE's C enums (NVTEDType, NVTE_QKV_Layout, ...).
    return CTYPES.get(c_type, ctypes.c_int)


class FusedBackendSelector:
    """TE's compiled nvte_get_fused_attn_backend for one tag."""

    def __init__(self, checkout: TeCheckout, tag: str, build_dir: Path):
        self.tag = tag
        header = checkout.show(tag, f"{PUBLIC_HEADERS}/fused_attn.h")
        self.params = parse_prototype(header)
        source = self._source(checkout, tag)
        digest = hashlib.sha256((source + header).encode()).hexdigest()[:16]
        library = build_dir / f"fused_selector-{tag}-{digest}.so"
        if not library.exists():
            self._compile(checkout, tag, source, library)
        self.lib = ctypes.CDLL(str(library))
        self.lib.conformance_set_machine.argtypes = [ctypes.c_int, ctypes.c_long]
        self.lib.conformance_capture_end.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        self.call = self.lib.conformance_backend
        self.call.argtypes = [ctype_of(t) for t, _ in self.params] + [ctypes.POINTER(ctypes.c_int)]
        self.call.restype = ctypes.c_int

    def _source(self, checkout, tag):
        cpp = checkout.show(tag, FUSED_ATTN_CPP)
        pieces = ['#include "prelude.hpp"', "namespace transformer_engine::fused_attn {"]
        if "get_ragged_offset_dtype" in cpp:
            utils = checkout.show(tag, FUSED_ATTN_UTILS)
            pieces.append(extract_function(utils, "get_ragged_offset_dtype"))
        pieces.append("}  // namespace transformer_engine::fused_attn")
        for helper in HELPERS:
            text = extract_function(cpp, helper)
            if text:
                pieces.append(text)
        pieces.append(extract_function(cpp, "nvte_get_fused_attn_backend"))
        # A C entry point that turns TE's exceptions (NVTE_CHECK) into an error flag.
        args = ", ".join(f"{t} {n}" for t, n in self.params)
        names = ", ".join(n for _, n in self.params)
        pieces.append(
            f'extern "C" int conformance_backend({args}, int* error) {{\n'
            f"  try {{ return static_cast<int>(nvte_get_fused_attn_backend({names})); }}\n"
            f"  catch (const std::exception&) {{ *error = 1; return -1; }}\n}}"
        )
        return "\n\n".join(pieces) + "\n"

    def _compile(self, checkout, tag, source, library):
        library.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="te-selector-") as tmp:
            tmp = Path(tmp)
            include = tmp / "include" / "transformer_engine"
            include.mkdir(parents=True)
            for name in ("fused_attn.h", "transformer_engine.h"):
                (include / name).write_text(checkout.show(tag, f"{PUBLIC_HEADERS}/{name}"))
            # The public headers include <cuda_runtime_api.h> for cudaStream_t only.
            cuda_stub = tmp / "cuda-stub"
            cuda_stub.mkdir()
            (cuda_stub / "cuda_runtime_api.h").write_text(
                "#pragma once\ntypedef struct CUstream_st* cudaStream_t;\n"
                "typedef enum cudaDataType_t { CUDA_R_32F = 0 } cudaDataType;\n"
            )
            (tmp / "selector.cpp").write_text(source)
            command = ["g++", "-std=c++17", "-O1", "-shared", "-fPIC", "-w",
                       f"-I{SHIM_DIR}", f"-I{tmp / 'include'}", f"-I{cuda_stub}",
                       "-o", str(library) + ".tmp", str(tmp / "selector.cpp"), str(SHIM_DIR / "shim.cpp")]
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError(f"{tag}: compiling nvte_get_fused_attn_backend failed:\n{result.stderr[-4000:]}")
            os.replace(str(library) + ".tmp", library)

    def __call__(self, sm: int, cudnn_version: int, args):
        """The sub-backend number TE returns for args (in the header's parameter order) and
        whatever the selector printed."""
        if len(args) != len(self.params):
            raise TypeError(f"{self.tag}: selector takes {len(self.params)} arguments, got {len(args)}")
        self.lib.conformance_set_machine(sm, cudnn_version)
        error = ctypes.c_int(0)
        self.lib.conformance_capture_begin()
        try:
            value = self.call(*[int(a) if not isinstance(a, float) else a for a in args], ctypes.byref(error))
        finally:
            buffer = ctypes.create_string_buffer(4096)
            self.lib.conformance_capture_end(buffer, len(buffer))
        if error.value:
            raise RuntimeError(f"{self.tag}: nvte_get_fused_attn_backend raised for {args}")
        return value, buffer.value.decode(errors="replace").strip()
