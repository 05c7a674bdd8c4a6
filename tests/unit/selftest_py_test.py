#!/usr/bin/env python3
"""The Python tier's TE logic without torch, TE or a GPU: reading get_attention_backend's answer
in both of its shapes (5 values before TE 2.3, 6 since), naming the backend TE ran from its
selection cache, finding and resetting that cache, and the script's own answer on a machine
without torch. Run by ctest (selftest_py)."""
import dataclasses
import importlib.util
import json
import subprocess
import os
import sys
import tempfile
import time
import types
import unittest
import unittest.mock

SCRIPT = sys.argv.pop(1)
spec = importlib.util.spec_from_file_location("selftest_script", SCRIPT)
selftest = importlib.util.module_from_spec(spec)
spec.loader.exec_module(selftest)

FAKE_TORCH = types.SimpleNamespace(Tensor=object, bfloat16="bf16", float16="fp16")
WORKLOAD = {"dtype": "bf16", "layout": "bshd_bshd_bshd", "batch": 2, "heads": 16, "kv_heads": 4, "seq_q": 512,
            "seq_kv": 512, "dim_qk": 128, "dim_v": 128, "causal": True}


def fake_utils(answer, fields=("qkv_dtype", "qkv_layout", "num_heads", "head_dim_qk", "window_size")):
    params = dataclasses.make_dataclass("AttentionParams", [(f, object, dataclasses.field(default=None)) for f in fields])
    seen = []

    def get_attention_backend(p):
        seen.append(p)
        return answer

    return types.SimpleNamespace(AttentionParams=params, get_attention_backend=get_attention_backend, seen=seen)


class SelectorAnswer(unittest.TestCase):
    def test_six_values_since_te_2_3(self):
        utils = fake_utils((False, None, True, "NVTE_Fused_Attn_Backend.NVTE_F16_arbitrary_seqlen", False, [True, True, True]))
        got = selftest.te_selector(FAKE_TORCH, utils, WORKLOAD, "causal", "bshd", None)
        self.assertEqual(got["backend"], "FusedAttention (NVTE_F16_arbitrary_seqlen)")
        self.assertIs(got["use_fused_attention"], True)
        self.assertEqual(got["fused_attention_backend"], "NVTE_Fused_Attn_Backend.NVTE_F16_arbitrary_seqlen")
        self.assertIs(got["use_unfused_attention"], False)
        # Only the fields this TE's AttentionParams has are passed; the window follows the mask.
        self.assertEqual(utils.seen[0].window_size, (-1, 0))
        self.assertEqual(utils.seen[0].head_dim_qk, 128)

    def test_five_values_before_te_2_3(self):
        utils = fake_utils((False, False, None, True, [False, False, True]))
        got = selftest.te_selector(FAKE_TORCH, utils, WORKLOAD, "causal", "bshd", (128, 0))
        self.assertEqual(got["backend"], "UnfusedDotProductAttention")
        self.assertNotIn("flash_attention_backend", got)
        self.assertEqual(utils.seen[0].window_size, (128, 0))

    def test_unknown_shape_is_an_error_not_a_guess(self):
        got = selftest.te_selector(FAKE_TORCH, fake_utils((True, False)), WORKLOAD, "causal", "bshd", None)
        self.assertIn("returned 2 values", got["error"])

    def test_no_backend(self):
        got = selftest.te_selector(FAKE_TORCH, fake_utils((False, None, False, None, False, [False] * 3)), WORKLOAD,
                                   "causal", "bshd", None)
        self.assertEqual(got["backend"], "none")


class BackendCache(unittest.TestCase):
    def test_found_in_the_attention_module_and_named(self):
        module = types.ModuleType("fake_te_dpa")
        module._attention_backends = {"attention_params": None, "use_flash_attention": False,
                                      "use_fused_attention": True, "fused_attention_backend": "X.NVTE_FP8",
                                      "use_unfused_attention": False, "backend_selection_requires_update": False}
        sys.modules["fake_te_dpa"] = module
        cls = type("DotProductAttention", (), {"__module__": "fake_te_dpa"})
        cache = selftest.find_backend_cache(cls)
        self.assertIs(cache, module._attention_backends)
        self.assertEqual(selftest.backend_name(cache), "FusedAttention (NVTE_FP8)")
        cache["use_fused_attention"], cache["use_flash_attention"] = False, True
        self.assertEqual(selftest.backend_name(cache), "FlashAttention")

    def test_absent(self):
        cls = type("DotProductAttention", (), {"__module__": "no_such_module_here"})
        self.assertIsNone(selftest.find_backend_cache(cls))


class WithoutTorch(unittest.TestCase):
    def test_the_script_answers_skipped_in_one_json_line(self):
        try:
            import torch  # noqa: F401
            self.skipTest("torch is importable here")
        except ImportError:
            pass
        out = subprocess.run([sys.executable, SCRIPT, json.dumps({"workloads": [WORKLOAD]})], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        self.assertEqual(result["status"], "skipped")
        self.assertIn("torch is not importable", result["error"])


class GateAndImportOrder(unittest.TestCase):
    """Issue 40: the tier's imports run beside the doctor's CUDA checks. With {"gate": true} the
    script imports torch, asks whether there is a GPU (the driver only), imports TE, and touches the
    GPU only once its stdin ends (the doctor opens the gate when the CUDA checks are done)."""

    def test_te_is_imported_before_the_gate_and_the_gpu_used_after_it(self):
        tmp = tempfile.mkdtemp()
        log = os.path.join(tmp, "log")
        files = {
            "torch/__init__.py": "import os\n__version__ = '0.0+fake'\n"
                                 "def _log(what):\n    open(os.environ['FAKE_LOG'], 'a').write(what + '\\n')\n"
                                 "class cuda:\n"
                                 "    @staticmethod\n    def is_available():\n        _log('is_available')\n        return True\n"
                                 "    @staticmethod\n    def get_device_name(i):\n        _log('gpu')\n"
                                 "        raise RuntimeError('the fake GPU ends here')\n",
            "transformer_engine/__init__.py": "import torch\ntorch._log('import te')\n",
            "transformer_engine/pytorch/__init__.py": "",
        }
        for name, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, name)), exist_ok=True)
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
        env = dict(os.environ, PYTHONPATH=tmp, FAKE_LOG=log)
        args = json.dumps({"workloads": [WORKLOAD], "gate": True})
        child = subprocess.Popen([sys.executable, SCRIPT, args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=env)

        def lines():
            try:
                with open(log) as f:
                    return f.read().split()
            except FileNotFoundError:
                return []

        deadline = time.time() + 30
        while "te" not in lines() and time.time() < deadline and child.poll() is None:
            time.sleep(0.02)
        time.sleep(0.3)
        self.assertEqual(lines(), ["is_available", "import", "te"], "imports before the gate, no GPU work")
        self.assertIsNone(child.poll(), "the script waits at the gate")
        child.communicate(input=b"", timeout=30)  # the gate opens: end of stdin
        self.assertEqual(lines(), ["is_available", "import", "te", "gpu"])


class Bytecode(unittest.TestCase):
    """Issue 40: a package without usable bytecode is compiled from source in every process; the
    script then keeps its bytecode in the doctor's cache (sys.pycache_prefix), and only then."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.tmp, "fakepkg_bc"))
        self.source = os.path.join(self.tmp, "fakepkg_bc", "__init__.py")
        with open(self.source, "w") as f:
            f.write("X = 1\n")
        sys.path.insert(0, self.tmp)
        self.saved = (sys.pycache_prefix, sys.dont_write_bytecode)

    def tearDown(self):
        sys.path.remove(self.tmp)
        sys.pycache_prefix, sys.dont_write_bytecode = self.saved

    def test_missing_valid_and_stale(self):
        import py_compile
        self.assertFalse(selftest.bytecode_usable("fakepkg_bc"))  # never compiled
        sys.pycache_prefix = None
        py_compile.compile(self.source, doraise=True)
        self.assertTrue(selftest.bytecode_usable("fakepkg_bc"))
        with open(self.source, "a") as f:  # the source changed: size and mtime differ
            f.write("Y = 2\n")
        self.assertFalse(selftest.bytecode_usable("fakepkg_bc"))
        self.assertTrue(selftest.bytecode_usable("no_such_package_here"))

    def test_the_prefix_is_used_only_where_bytecode_is_missing(self):
        sys.pycache_prefix = None
        with unittest.mock.patch.object(selftest, "bytecode_usable", lambda name: name != "torch"):
            got = selftest.use_bytecode_cache(os.path.join(self.tmp, "cache"))
        self.assertEqual(got, {"unusable": ["torch"], "prefix": os.path.join(self.tmp, "cache")})
        self.assertEqual(sys.pycache_prefix, os.path.join(self.tmp, "cache"))
        sys.pycache_prefix = None
        with unittest.mock.patch.object(selftest, "bytecode_usable", lambda name: True):
            got = selftest.use_bytecode_cache(os.path.join(self.tmp, "cache"))
        self.assertEqual(got, {"unusable": [], "prefix": None})
        self.assertIsNone(sys.pycache_prefix)
        sys.pycache_prefix = "/the/callers"  # PYTHONPYCACHEPREFIX wins
        with unittest.mock.patch.object(selftest, "bytecode_usable", lambda name: False):
            got = selftest.use_bytecode_cache(os.path.join(self.tmp, "cache"))
        self.assertEqual(got["prefix"], "/the/callers")


class LoadedFiles(unittest.TestCase):
    """Issue 40: what the doctor watches to reuse the tier's answer. Scratch mappings (CUDA's
    /dev/zero, memfd, a deleted shared-memory file) are skipped; a library mapped after its file
    was deleted (replaced while the tier ran) keeps the answer from being kept, and says so."""

    def maps(self, *paths):
        lines = "".join("7f0000000000-7f0000001000 r-xp 00000000 00:00 0          %s\n" % p for p in paths)
        real_open = open

        def fake_open(name, *args, **kwargs):
            if name == "/proc/self/maps":
                return __import__("io").StringIO(lines)
            return real_open(name, *args, **kwargs)
        return unittest.mock.patch("builtins.open", fake_open)

    def test_modules_mappings_and_sys_path_are_listed(self):
        with self.maps("/usr/lib/libcudnn.so.9", "/dev/zero (deleted)", "/memfd:cuda (deleted)", "/dev/nvidia0",
                       "/dev/shm/nccl-x (deleted)", "/tmp/scratch (deleted)"):
            got = selftest.loaded_files()
        self.assertIsInstance(got, list)
        self.assertIn("/usr/lib/libcudnn.so.9", got)
        self.assertIn(os.path.abspath(json.__file__), got)  # an imported module
        self.assertIn(os.path.realpath(sys.executable), got)
        self.assertTrue(all(not p.startswith(("/dev/", "/memfd:")) and "(deleted)" not in p for p in got), got)
        self.assertEqual(got, sorted(got))

    def test_a_library_replaced_while_the_tier_ran_is_not_kept(self):
        with self.maps("/usr/lib/libcudnn.so.9 (deleted)"):
            got = selftest.loaded_files()
        self.assertEqual(got, "/usr/lib/libcudnn.so.9 was replaced while the tier ran")


class Timings(unittest.TestCase):
    """Issue 40: the tier says where its time went (the lead reads it on the GPU node)."""

    def test_laps_add_up_and_the_process_age_is_there(self):
        selftest.TIMINGS.clear()
        t = selftest.lap("reference", 0.0)
        selftest.lap("reference", t - 0.5)
        self.assertGreater(selftest.TIMINGS["reference"], 0.5)
        got = selftest.timings()
        self.assertIn("reference", got)
        self.assertGreater(got["total"], 0.0)
        self.assertGreaterEqual(got["start"], 0.0)
        self.assertLessEqual(got["start"], got["total"])


if __name__ == "__main__":
    unittest.main(verbosity=1)
