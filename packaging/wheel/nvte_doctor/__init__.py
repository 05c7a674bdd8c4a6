"""nvte-doctor, installed from a wheel: the portable bundle (scripts/build-portable.sh) under
nvte_doctor/bundle/, and this launcher. `nvte-doctor ARGS` and `python -m nvte_doctor ARGS` run
the bundle's binary with ARGS; it examines the interpreter it was started with (the job's venv)
unless --python, --root or --facts says otherwise, through NVTE_DOCTOR_PYTHON."""
import os
import sys

BUNDLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bundle")
BINARY = os.path.join(BUNDLE, "bin", "nvte-doctor")

# Options after which the interpreter of this process is not the one to examine.
_CHOSEN = ("--python", "--root", "--facts")


def _chooses_interpreter(args):
    return any(a in _CHOSEN or a.startswith(tuple(c + "=" for c in _CHOSEN)) for a in args)


def main(argv=None):
    """Replaces this process with the bundled binary; returns only if it cannot be started."""
    args = sys.argv[1:] if argv is None else list(argv)
    env = dict(os.environ)
    if not _chooses_interpreter(args) and "NVTE_DOCTOR_PYTHON" not in env:
        env["NVTE_DOCTOR_PYTHON"] = sys.executable
    try:
        os.execve(BINARY, ["nvte-doctor"] + args, env)
    except OSError as error:
        sys.stderr.write("nvte-doctor: cannot run %s: %s\n" % (BINARY, error.strerror))
        return 3
