#!/usr/bin/env python3
"""Builds a small real torch C++ extension for the `ext` stage of scripts/gpu-validate.sh.

usage: gpu-build-ext.py DIR [EXTRA G++ FLAGS...]

Compiles flash_attn_2_cuda<EXT_SUFFIX> into DIR with g++ against the running interpreter's torch
(torch.utils.cpp_extension's include and library paths, torch's C++11 ABI; no network), and
writes a flash_attn dist-info whose RECORD lists it, so that DIR on PYTHONPATH looks like
`pip install --target DIR flash-attn`. A Python module (pybind11) where the node has Python.h,
else a plain shared object calling torch's C++ API; DIR/mode says which (python | ctypes).
-DNVTE_EXT_MISSING adds a call to a c10 function torch does not define.
"""
import os
import subprocess
import sys
import sysconfig

import torch
from torch.utils import cpp_extension

SOURCE = r"""#include <torch/torch.h>
#ifdef NVTE_EXT_MISSING
namespace c10 { void nvte_doctor_symbol_torch_lacks(int); }
#endif
#ifdef NVTE_EXT_PYTHON
#include <torch/extension.h>
#endif
at::Tensor nvte_twice(const at::Tensor& x) {
#ifdef NVTE_EXT_MISSING
  c10::nvte_doctor_symbol_torch_lacks(1);
#endif
  return x * 2;
}
#ifdef NVTE_EXT_PYTHON
PYBIND11_MODULE(flash_attn_2_cuda, m) { m.def("twice", &nvte_twice); }
#else
extern "C" int nvte_ext_check() { return nvte_twice(at::ones({2})).sum().item<int>(); }
#endif
"""


def main() -> int:
    out, extra = sys.argv[1], sys.argv[2:]
    dist = os.path.join(out, "flash_attn-2.8.3.dist-info")
    os.makedirs(dist, exist_ok=True)
    with open(os.path.join(out, "ext.cpp"), "w") as f:
        f.write(SOURCE)
    py_inc = sysconfig.get_paths()["include"]
    python = os.path.exists(os.path.join(py_inc, "Python.h"))
    name = "flash_attn_2_cuda" + sysconfig.get_config_var("EXT_SUFFIX")
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    cmd = ["g++", "-shared", "-fPIC", "-O1", "-std=c++17", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
           "-DTORCH_EXTENSION_NAME=flash_attn_2_cuda", "-DTORCH_API_INCLUDE_EXTENSION_H"]
    if python:
        cmd += ["-DNVTE_EXT_PYTHON", "-I" + py_inc]
    cmd += extra + ["-I" + p for p in cpp_extension.include_paths()]
    cmd += [os.path.join(out, "ext.cpp"), "-o", os.path.join(out, name)]
    cmd += ["-L" + p for p in cpp_extension.library_paths()] + ["-lc10", "-ltorch", "-ltorch_cpu"]
    if python:
        cmd.append("-ltorch_python")
    print(" ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    with open(os.path.join(out, "mode"), "w") as f:
        f.write("python" if python else "ctypes")
    with open(os.path.join(dist, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: flash_attn\nVersion: 2.8.3\n")
    with open(os.path.join(dist, "RECORD"), "w") as f:
        f.write(f"{name},,\nflash_attn-2.8.3.dist-info/METADATA,,\nflash_attn-2.8.3.dist-info/RECORD,,\n")
    print("built", os.path.join(out, name), "mode", "python" if python else "ctypes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
