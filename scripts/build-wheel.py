#!/usr/bin/env python3
"""Builds the nvte-doctor wheel from the portable bundle, offline, with Debian's packaging tools.

    scripts/build-wheel.py [--bundle DIR] [--out DIR] [--builtin]

--bundle DIR  the portable bundle (scripts/build-portable.sh; default build-portable/nvte-doctor)
--out DIR     where the wheel goes (default build-portable); its path is printed on stdout
--builtin     write the zip with Python's zipfile instead of `python3 -m wheel pack`

The wheel is nvte_doctor-VERSION-py3-none-manylinux_2_MINOR_x86_64.whl, MINOR from the bundle's
MANIFEST (the glibc it was built against and tested on, 2.31 for the portable build, and never
below the oldest glibc every ELF file in it runs on, measured: 2.30), the way
cmake, ninja and ruff ship native programs on PyPI: the package nvte_doctor/ (packaging/wheel:
the launcher, `python -m nvte_doctor`), the bundle under nvte_doctor/bundle/, and the .dist-info
(METADATA, WHEEL, entry_points.txt with the `nvte-doctor` console script, RECORD with each
file's sha256). The tree is laid out in a scratch directory and packed by `python3 -m wheel pack`
(Debian's python3-wheel, which writes RECORD and names the file from WHEEL's tag); without
python3-wheel, or with --builtin, by the same layout written here with zipfile (the same
entries, the same bytes in them). No network, no build backend: python3 -m build and setuptools
are not needed. The same bundle gives the same wheel, byte for byte (timestamps from
SOURCE_DATE_EPOCH, else 1980-01-01; entries in sorted order).
"""
import argparse
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(message):
    sys.stderr.write("build-wheel: %s\n" % message)
    sys.exit(2)


def manifest(bundle):
    """Returns (version, glibc minor) from the bundle's MANIFEST; fails naming what is missing."""
    path = os.path.join(bundle, "MANIFEST")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        fail("%s: %s (build the bundle with scripts/build-portable.sh)" % (path, error.strerror))
    version = re.search(r"^version: nvte-doctor (\S+)", text, re.M)
    glibc = re.search(r"^glibc: >= 2\.(\d+)$", text, re.M)
    if not version or not glibc:
        fail("%s: no 'version: nvte-doctor X' or 'glibc: >= 2.N' line" % path)
    # The tag names the glibc the portable build was made against and tested on (2.31), not a
    # lower floor its files happen to need (bullseye's libudev asks for 2.30): no promise of a
    # glibc nothing ran on.
    built = re.search(r"^built-against: glibc 2\.(\d+)", text, re.M)
    return version.group(1), max(int(glibc.group(1)), int(built.group(1)) if built else 0)


def metadata(version):
    summary = "TransformerEngine compatibility checker for GPU nodes and job environments"
    return "\n".join([
        "Metadata-Version: 2.1",
        "Name: nvte-doctor",
        "Version: " + version,
        "Summary: " + summary,
        "License: Apache-2.0",
        "Requires-Python: >=3.6",
        "Classifier: Operating System :: POSIX :: Linux",
        "Classifier: Environment :: Console",
        "Description-Content-Type: text/plain",
        "",
        "nvte-doctor answers one question for people who run NVIDIA TransformerEngine: will this",
        "node and this environment run this attention workload, with which backend, and if not,",
        "what to type to fix it. Installed into a job's virtual environment, `nvte-doctor` (or",
        "`python -m nvte_doctor`) examines that environment's interpreter by default.",
        "",
    ])


def layout(bundle, version, tag):
    """Returns [(name in the wheel, bytes, executable)] of every file but RECORD."""
    dist_info = "nvte_doctor-%s.dist-info" % version
    files = []
    package = os.path.join(SOURCE, "packaging", "wheel", "nvte_doctor")
    for name in sorted(os.listdir(package)):
        if name.endswith(".py"):
            with open(os.path.join(package, name), "rb") as handle:
                files.append(("nvte_doctor/" + name, handle.read(), False))
    for directory, subdirs, names in os.walk(bundle):
        subdirs.sort()
        for name in sorted(names):
            path = os.path.join(directory, name)
            if os.path.islink(path) or not os.path.isfile(path):
                fail("%s: not a plain file (a wheel carries plain files only)" % path)
            with open(path, "rb") as handle:
                data = handle.read()
            relative = os.path.relpath(path, bundle).replace(os.sep, "/")
            files.append(("nvte_doctor/bundle/" + relative, data, os.access(path, os.X_OK)))
    files.append((dist_info + "/METADATA", metadata(version).encode(), False))
    wheel = "Wheel-Version: 1.0\nGenerator: nvte-doctor scripts/build-wheel.py\nRoot-Is-Purelib: false\nTag: %s\n" % tag
    files.append((dist_info + "/WHEEL", wheel.encode(), False))
    entry_points = "[console_scripts]\nnvte-doctor = nvte_doctor:main\n"
    files.append((dist_info + "/entry_points.txt", entry_points.encode(), False))
    files.append((dist_info + "/top_level.txt", b"nvte_doctor\n", False))
    return files


def write_builtin(files, version, target, epoch):
    """The wheel written with zipfile: the files sorted as `wheel pack` sorts them (the .dist-info
    last), then RECORD."""
    dist_info = "nvte_doctor-%s.dist-info" % version
    files = sorted(files, key=lambda f: (f[0].startswith(dist_info + "/"), f[0]))
    record = []
    for name, data, _ in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
    record.append(dist_info + "/RECORD,,")
    files.append((dist_info + "/RECORD", ("\n".join(record) + "\n").encode(), False))
    stamp = time.gmtime(max(epoch, 315532800))[:6]
    partial = target + ".partial"
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data, executable in files:
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.external_attr = (0o100755 if executable else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    os.replace(partial, target)


def write_with_wheel_pack(files, version, target, epoch):
    """The wheel packed by Debian's python3-wheel from the tree laid out in a scratch directory."""
    scratch = tempfile.mkdtemp(prefix="nvte-wheel.")
    try:
        tree = os.path.join(scratch, "nvte_doctor-" + version)
        for name, data, executable in files:
            path = os.path.join(tree, *name.split("/"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(data)
            os.chmod(path, 0o755 if executable else 0o644)
        dest = os.path.join(scratch, "dist")
        os.makedirs(dest)
        env = dict(os.environ, SOURCE_DATE_EPOCH=str(max(epoch, 315532800)))
        done = subprocess.run([sys.executable, "-m", "wheel", "pack", "--dest-dir", dest, tree], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
        made = os.listdir(dest) if os.path.isdir(dest) else []
        if done.returncode != 0 or made != [os.path.basename(target)]:
            fail("python3 -m wheel pack failed (exit %d, made %s): %s" % (done.returncode, made, done.stdout.strip()))
        shutil.move(os.path.join(dest, made[0]), target + ".partial")
        os.replace(target + ".partial", target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description="Build the nvte-doctor wheel from the portable bundle.")
    parser.add_argument("--bundle", default=os.path.join(SOURCE, "build-portable", "nvte-doctor"))
    parser.add_argument("--out", default=os.path.join(SOURCE, "build-portable"))
    parser.add_argument("--builtin", action="store_true", help="write the zip with zipfile, not python3 -m wheel pack")
    options = parser.parse_args()
    bundle = os.path.abspath(options.bundle)
    version, minor = manifest(bundle)
    tag = "py3-none-manylinux_2_%d_x86_64" % minor
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    files = layout(bundle, version, tag)
    os.makedirs(options.out, exist_ok=True)
    target = os.path.join(os.path.abspath(options.out), "nvte_doctor-%s-%s.whl" % (version, tag))
    packer = not options.builtin
    if packer:
        try:
            import wheel  # noqa: F401  Debian's python3-wheel
        except ImportError:
            sys.stderr.write("build-wheel: python3-wheel is not installed: writing the zip with zipfile\n")
            packer = False
    if packer:
        write_with_wheel_pack(files, version, target, epoch)
    else:
        write_builtin(files, version, target, epoch)
    sys.stderr.write("build-wheel: %s (%s)\n" % (target, "python3 -m wheel pack" if packer else "zipfile"))
    print(target)


if __name__ == "__main__":
    main()
