"""Imports one tag's get_attention_backend from a TE checkout, with the machine stubbed out.

TE's selector lives in transformer_engine/pytorch/attention.py (before 2.0) or
attention/dot_product_attention/utils.py (2.0 on). Importing it normally needs the compiled
extension, a GPU and half of TE. Here:

* the modules that decide are loaded from the tag's own source, unmodified: the selector's
  module, backends.py (its import-time flash-attn detection sets FlashAttentionUtils), the
  cpp_extensions/fused_attn.py tables and constants.py;
* transformer_engine_torch is a small module whose enums are parsed from the tag's public C
  headers and whose get_fused_attn_backend calls the tag's compiled C++ selector (native.py);
* every other TE module, and flash-attn's own modules, are permissive stubs: any attribute is a
  class that can be subclassed, instantiated, called or used as a decorator, and is falsy;
* what the selector asks of the machine -- compute capability, cuDNN version, installed
  flash-attn versions, environment variables -- comes from the case (Machine).

The stubs never re-implement a decision: where TE calls a helper whose answer matters
(get_fp8_te_dtype, is_in_onnx_export_mode), the stub answers as the helper would for the
narrow inputs the harness passes, and this file says so next to it.
"""

import copy
import functools
import enum
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import logging
import os
import re
import sys
import tempfile
import types
from pathlib import Path

import torch

from native import FusedBackendSelector


class Machine:
    """The node a case describes; read by the stubs while TE runs."""

    sm = 90
    cudnn = (9, 10, 2)
    fa_versions = {}  # distribution name -> version text (absent = not installed)


# ---- permissive stubs ---------------------------------------------------------------------------


class _StubMeta(type):
    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(name)

    def __bool__(cls):
        return True

    def __getitem__(cls, item):
        return cls

    def __iter__(cls):
        return iter(())


class _Stub(metaclass=_StubMeta):
    """Anything TE imports that the selector does not decide with."""

    def __new__(cls, *args, **kwargs):
        # Used as a decorator (@jit_fuser, @no_torch_dynamo()): hand the function back.
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], _Stub):
            return args[0]
        return super().__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return _Stub()

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Stub()

    def __bool__(self):
        return False

    def __iter__(self):
        return iter(())

    def __getitem__(self, item):
        return _Stub()


def _stub_class(name):
    return _StubMeta(name, (_Stub,), {})


class StubModule(types.ModuleType):
    def __init__(self, name):
        super().__init__(name)
        self.__path__ = []  # a package, so that submodules resolve through the finder too
        self.__file__ = f"<stub {name}>"

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _stub_class(name)
        setattr(self, name, value)
        return value


# ---- transformer_engine_torch from the tag's C headers ------------------------------------------


def parse_c_enums(header_text):
    """{enum name: {member: value}} for every `enum NAME { ... };` and `enum class NAME`."""
    enums = {}
    text = re.sub(r"/\*.*?\*/", "", header_text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    for match in re.finditer(r"enum\s+(?:class\s+)?(\w+)\s*(?::\s*\w+\s*)?\{([^}]*)\}", text):
        name, body = match.group(1), match.group(2)
        members, next_value = {}, 0
        for item in body.split(","):
            item = item.strip()
            if not item:
                continue
            if "=" in item:
                member, value = (part.strip() for part in item.split("=", 1))
                value = members[value] if value in members else int(value, 0)
            else:
                member, value = item, next_value
            members[member] = value
            next_value = value + 1
        enums[name] = members
    return enums


PYBIND_SOURCES = ["transformer_engine/common/util/pybind_helper.h",
                  "transformer_engine/pytorch/csrc/extensions/pybind.cpp"]


def parse_pybind_enums(text):
    """{python enum name: (C++ type, [member names])} of every py::enum_ binding in text."""
    bindings = {}
    pattern = re.compile(r"enum_<\s*([\w:]+)\s*>\s*\(\s*m\s*,\s*\"(\w+)\"(.*?);", re.S)
    for match in pattern.finditer(text):
        c_type, py_name, chain = match.group(1), match.group(2), match.group(3)
        members = re.findall(r'\.value\(\s*"(\w+)"', chain)
        bindings[py_name] = (c_type.split("::")[-1], members)
    return bindings


def make_tex_module(checkout, tag, selector: FusedBackendSelector):
    """transformer_engine_torch as the tag's pybind module exports it: the enums it binds
    (members and values from the C headers) and get_fused_attn_backend."""
    headers = "transformer_engine/common/include/transformer_engine"
    c_enums = {}
    for name in ("transformer_engine.h", "fused_attn.h"):
        c_enums.update(parse_c_enums(checkout.show(tag, f"{headers}/{name}")))
    for path in ("transformer_engine/pytorch/csrc/common.h", *PYBIND_SOURCES):
        if checkout.exists(tag, path):
            c_enums.update({k: v for k, v in parse_c_enums(checkout.show(tag, path)).items() if k not in c_enums})
    tex = StubModule("transformer_engine_torch")
    for source in PYBIND_SOURCES:
        if not checkout.exists(tag, source):
            continue
        for py_name, (c_type, members) in parse_pybind_enums(checkout.show(tag, source)).items():
            values = c_enums.get(c_type)
            if values is None or not members:
                continue
            setattr(tex, py_name, enum.IntEnum(py_name, {m: values[m] for m in members if m in values}))

    def get_fused_attn_backend(*args):
        cudnn = Machine.cudnn
        cudnn_int = cudnn[0] * 10000 + cudnn[1] * 100 + cudnn[2] if cudnn[0] >= 9 else \
            cudnn[0] * 1000 + cudnn[1] * 100 + cudnn[2]
        value, printed = selector(Machine.sm, cudnn_int, args)
        if printed:
            logging.getLogger("te-conformance.native").debug("%s", printed)
        return tex.NVTE_Fused_Attn_Backend(value)

    tex.get_fused_attn_backend = get_fused_attn_backend
    return tex


# ---- the import machinery -----------------------------------------------------------------------


def _fake_dtype(name):
    class FakeDtype:
        is_floating_point = True

        def __repr__(self):
            return f"torch.{name}"

    return FakeDtype()


def _patch_torch():
    """What TE of a later era expects of torch that Debian's torch 1.13 lacks, and the device."""
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float4_e2m1fn_x2"):
        if not hasattr(torch, name):
            setattr(torch, name, _fake_dtype(name))
    torch.cuda.is_available = lambda: True
    torch.cuda.current_device = lambda: 0
    torch.cuda.device_count = lambda: 1
    torch.cuda.get_device_capability = lambda device=None: (Machine.sm // 10, Machine.sm % 10)
    torch.version.cuda = "12.8"
    if not hasattr(torch, "compile"):
        torch.compile = lambda fn=None, *a, **k: fn if fn is not None else (lambda f: f)
    if not hasattr(torch, "compiler"):
        torch.compiler = _CompilerNamespace()
    if not hasattr(torch.library, "custom_op"):
        torch.library.custom_op = _custom_op
    if not hasattr(torch.library, "register_fake"):
        torch.library.register_fake = lambda *a, **k: (lambda f: f)
    if not hasattr(torch.Tensor, "untyped_storage"):  # get_qkv_layout compares storage pointers
        torch.Tensor.untyped_storage = lambda self: self.storage()


class _CustomOp:
    """What torch.library.custom_op returns, for a torch that predates it: the function, and
    registration methods whose decorators pass through."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __getattr__(self, name):
        return lambda *a, **k: (a[0] if a and callable(a[0]) else (lambda f: f))


def _custom_op(name, fn=None, **kwargs):
    return _CustomOp(fn) if fn is not None else _CustomOp


class _CompilerNamespace:
    """torch.compiler for a torch that predates it: not compiling; decorators pass through."""

    def is_compiling(self):
        return False

    def __getattr__(self, name):
        def decorator(fn=None, *args, **kwargs):
            return fn if callable(fn) else (lambda f: f)
        return decorator


def _pkg_version(name):
    if name in Machine.fa_versions:
        return Machine.fa_versions[name]
    if name in ("flash-attn", "flash-attn-3", "flash-attn-4", "flashattn-hopper", "flash_attn", "nvidia-cutlass-dsl"):
        raise importlib.metadata.PackageNotFoundError(name)
    return _real_version(name)


_real_version = importlib.metadata.version


def _te_pytorch_utils():
    """transformer_engine.pytorch.utils: the device queries answer from the case."""
    module = StubModule("transformer_engine.pytorch.utils")
    module.get_device_compute_capability = lambda: (Machine.sm // 10, Machine.sm % 10)
    module.get_cudnn_version = lambda: Machine.cudnn
    module.is_bf16_compatible = lambda: Machine.sm >= 80
    return module


def _get_fp8_te_dtype_factory(tex):
    # quantization.get_fp8_te_dtype: E4M3 for the forward tensors of E4M3 and HYBRID recipes
    # (the harness only asks for fprop tensors), else E5M2 -- TE's rule, see quantization.py.
    def get_fp8_te_dtype(recipe, fprop_tensor=True):
        fmt = getattr(recipe, "fp8_format", "HYBRID")
        if fmt == "E4M3" or (fmt == "HYBRID" and fprop_tensor):
            return tex.DType.kFloat8E4M3
        return tex.DType.kFloat8E5M2

    return get_fp8_te_dtype


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Routes TE's and flash-attn's modules: real source for the deciding ones, stubs else."""

    STUB_ROOTS = ("transformer_engine", "flash_attn", "flash_attn_2_cuda", "flashattn_hopper",
                  "flash_attn_interface", "flash_attn_3", "einops", "triton", "onnx", "onnxscript",
                  "nvdlfw_inspect", "transformer_engine_torch", "pydantic", "nvtx", "cutlass")

    def __init__(self, real_sources, special):
        self.real_sources = real_sources  # module name -> Path of the tag's source file
        self.special = special            # module name -> ready module object

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.special:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        if fullname in self.real_sources:
            return importlib.util.spec_from_file_location(fullname, self.real_sources[fullname],
                                                          loader=_CompiledOnce(fullname, self.real_sources[fullname]))
        if fullname.split(".")[0] in self.STUB_ROOTS:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return self.special.get(spec.name) or StubModule(spec.name)

    def exec_module(self, module):
        pass


class _CompiledOnce(importlib.abc.Loader):
    """Executes a real TE source file, compiled once per process: every import key imports the
    tag's modules afresh, and compiling them each time was two thirds of the harness's time."""

    CODE = {}

    def __init__(self, name, path):
        self.name, self.path = name, str(path)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        code = self.CODE.get(self.path)
        if code is None:
            with open(self.path) as source:
                code = self.CODE[self.path] = compile(source.read(), self.path, "exec")
        exec(code, module.__dict__)


_STATE_TYPES = (bool, int, float, str, tuple, list, dict, set, type(None))


def _state_of(namespace):
    """The plain-data entries of a module's or class's namespace (what a call can mutate)."""
    state = {}
    for key, value in namespace.items():
        if key.startswith("__"):
            continue
        if isinstance(value, _STATE_TYPES) or type(value).__name__ == "Version":
            state[key] = copy.copy(value)
    return state


class LoadedSelector:
    """get_attention_backend of one tag, imported for one set of import-time inputs."""

    def __init__(self, module, backends_module, fa_utils):
        self.module = module
        self.backends_module = backends_module
        self.fa_utils = fa_utils  # FlashAttentionUtils (2.x) or None (1.x: module globals)
        self._module_snapshot = _state_of(vars(module))
        self._fa_snapshot = _state_of(vars(fa_utils)) if fa_utils is not None else None

    def reset(self):
        """Back to the state right after import: get_attention_backend mutates globals
        (_use_flash_attn_3, FlashAttentionUtils.version_required, warning flags)."""
        for k, v in self._module_snapshot.items():
            setattr(self.module, k, copy.copy(v))
        if self.fa_utils is not None:
            for k, v in self._fa_snapshot.items():
                setattr(self.fa_utils, k, copy.copy(v))


def fa4_release_ref(fa_path, version):
    """The flash-attention ref of an FA4 release (4.0.0b11 -> tag fa4-v4.0.0.beta11), or HEAD
    when the checkout has no tag for it (a version newer than the checkout, or none given)."""
    import re
    import subprocess

    match = re.fullmatch(r"4\.0\.0b(\d+)", version or "")
    if match:
        tag = f"fa4-v4.0.0.beta{match.group(1)}"
        known = subprocess.run(["git", "-C", str(fa_path), "rev-parse", "--verify", "-q", f"{tag}^{{commit}}"],
                               capture_output=True, text=True)
        if known.returncode == 0:
            return tag
    return "HEAD"


@functools.lru_cache(maxsize=None)
def load_fa4_validate_head_dims(fa_path, ref="HEAD"):
    """flash-attn 4's own _validate_head_dims (flash_attn/cute/interface.py) at a release, which
    TE calls to decide whether FA4 takes a head-dim pair. Cut out with ast and run alone: the rest
    of that module needs the CUTLASS DSL. Returns (function, 'commit') or (None, None)."""
    if fa_path is None:
        return None, None
    import ast
    import subprocess

    path = "flash_attn/cute/interface.py"
    source = subprocess.run(["git", "-C", str(fa_path), "show", f"{ref}:{path}"], capture_output=True,
                            text=True, check=True).stdout
    commit = subprocess.run(["git", "-C", str(fa_path), "rev-parse", f"{ref}^{{commit}}"], capture_output=True,
                            text=True, check=True).stdout.strip()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == "_validate_head_dims":
            namespace = {"lru_cache": functools.lru_cache}
            exec(compile(ast.Module(body=[node], type_ignores=[]), path, "exec"), namespace)
            return namespace["_validate_head_dims"], commit
    raise SystemExit(f"{fa_path}@{ref}: no _validate_head_dims in {path}")


class TagImporter:
    """Imports a tag's selector afresh for each set of import-time inputs (flash-attn versions,
    environment, and the SM, which flash-attn detection reads at import)."""

    def __init__(self, checkout, tag, build_dir: Path, fa_path=None):
        self.fa_path = fa_path
        self.fa4_validate, self.fa4_source = load_fa4_validate_head_dims(fa_path)
        self.checkout, self.tag = checkout, tag
        self.version = checkout.version(tag)
        self.selector = FusedBackendSelector(checkout, tag, build_dir)
        self.source_dir = Path(tempfile.mkdtemp(prefix=f"te-src-{tag}-"))
        # The selector moved (attention.py -> dot_product_attention/utils.py in 2.2 ->
        # attention/dot_product_attention/utils.py in 2.3), and so did flash-attn detection
        # (attention.py until 2.2, backends.py from 2.3): find both by their text.
        selector_paths = checkout.grep(tag, "def get_attention_backend(", "transformer_engine/pytorch")
        detection_paths = checkout.grep(tag, 'get_pkg_version("flash-attn")', "transformer_engine/pytorch")
        if len(selector_paths) != 1 or len(detection_paths) != 1:
            raise RuntimeError(f"{tag}: selector in {selector_paths}, flash-attn detection in {detection_paths}")
        files = {
            "transformer_engine.pytorch.cpp_extensions.fused_attn": "transformer_engine/pytorch/cpp_extensions/fused_attn.py",
            "transformer_engine.pytorch.constants": "transformer_engine/pytorch/constants.py",
        }
        self.real = {}
        module_name = lambda path: path[:-3].replace("/", ".")
        self.selector_module = module_name(selector_paths[0])
        self.detection_module = module_name(detection_paths[0])
        files[self.selector_module] = selector_paths[0]
        files[self.detection_module] = detection_paths[0]
        for name, path in files.items():
            target = self.source_dir / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(checkout.show(tag, path))
            self.real[name] = target
        _patch_torch()
        importlib.metadata.version = _pkg_version

    def load(self, sm, fa_versions, env):
        """A freshly imported selector for this SM, flash-attn versions and environment."""
        for name in list(sys.modules):
            if name.split(".")[0] in _Finder.STUB_ROOTS:
                del sys.modules[name]
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Finder)]
        Machine.sm = sm
        Machine.fa_versions = dict(fa_versions)
        for key in [k for k in os.environ if k.startswith("NVTE_")]:
            del os.environ[key]
        os.environ.update(env)
        os.environ["NVTE_DEBUG"] = "1"
        os.environ["NVTE_DEBUG_LEVEL"] = "2"

        tex = make_tex_module(self.checkout, self.tag, self.selector)
        te_root = StubModule("transformer_engine")
        te_root.__version__ = self.version
        quantization = StubModule("transformer_engine.pytorch.quantization")
        quantization.get_fp8_te_dtype = _get_fp8_te_dtype_factory(tex)
        fp8 = StubModule("transformer_engine.pytorch.fp8")
        fp8.get_fp8_te_dtype = quantization.get_fp8_te_dtype
        export = StubModule("transformer_engine.pytorch.export")
        export.is_in_onnx_export_mode = lambda: False  # the harness never exports to ONNX
        fa4 = StubModule("flash_attn.cute.interface")
        if self.fa_path is not None:
            # The head-dim check of the FA4 release the case has installed.
            ref = fa4_release_ref(self.fa_path, fa_versions.get("flash-attn-4"))
            fa4._validate_head_dims = load_fa4_validate_head_dims(self.fa_path, ref)[0]
        special = {
            "flash_attn.cute.interface": fa4,
            "transformer_engine_torch": tex,
            "transformer_engine": te_root,
            "transformer_engine.pytorch.utils": _te_pytorch_utils(),
            "transformer_engine.pytorch.quantization": quantization,
            "transformer_engine.pytorch.fp8": fp8,
            "transformer_engine.pytorch.export": export,
        }
        sys.meta_path.insert(0, _Finder(self.real, special))
        importlib.invalidate_caches()

        logging.disable(logging.CRITICAL)  # import-time warnings (flash-attn version out of range)
        try:
            module = importlib.import_module(self.selector_module)
            # Importing the detection module runs TE's flash-attn 2/3/4 detection.
            backends = importlib.import_module(self.detection_module)
        finally:
            logging.disable(logging.NOTSET)
        fa_utils = getattr(module, "FlashAttentionUtils", None)
        self.tex = tex
        loaded = LoadedSelector(module, backends, fa_utils)
        loaded.checkout, loaded.tag = self.checkout, self.tag
        constants = sys.modules.get("transformer_engine.pytorch.constants")
        loaded.mask_types = getattr(constants, "AttnMaskTypes", None)
        return loaded
