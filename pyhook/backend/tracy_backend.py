"""tracy_backend -- the PEP 517 build backend of `pip install .` (see
pyproject.toml). Needs no package from a registry: it builds the extension
for the interpreter running it with the tree's own Makefile (make, a C
compiler and the -dev packages of tools/deps.sh), in a build directory of
its own, and packs a wheel by hand:

    tracy/                    the package, with _tracy<EXT_SUFFIX>
    tracy-isolated.pth        profiles the Python children started with -E
                              or -I of a profiled program
    tracy-V.data/scripts/     capture-release, tracy-csv (python -m tracy
                              finds them in the environment's bin/), and the
                              tracy command (pyhook/cmd/tracy, for this
                              environment's interpreter)
    tracy-V.dist-info/        METADATA, WHEEL, entry_points.txt (the pytest
                              plugin), RECORD
"""
import base64
import hashlib
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "tracy"
PROGRAMS = ("capture-release", "tracy-csv")


def _version():
    """The library's version, written once in libtrace/trace.h."""
    try:
        with open(os.path.join(ROOT, "libtrace", "trace.h")) as f:
            text = f.read()
    except OSError:
        return "0.0.0"
    parts = [re.search(r"^#define LT_VERSION_%s (\d+)$" % p, text, re.M)
             for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(m.group(1) for m in parts) if all(parts) else "0.0.0"


def _tag():
    impl = "cp%d%d" % sys.version_info[:2]
    plat = re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())
    return "%s-%s-%s" % (impl, impl, plat)


def _metadata(version):
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
            "Summary: Records a Python program's timeline into a .tracy trace "
            "(python -m tracy)\nRequires-Python: >=3.8,<3.14\n" % (NAME, version))


def _build(tmp):
    """make for this interpreter into tmp; returns (package dir, bin dir)."""
    build = os.path.join(tmp, "build")
    cmd = ["make", "-C", ROOT, "--no-print-directory", "B=" + build,
           "PYTHON=" + sys.executable, "pyhook"] + [build + "/bin/" + p for p in PROGRAMS]
    jobs = os.environ.get("TRACY_BUILD_JOBS", "2")
    r = subprocess.run(cmd + ["-j" + jobs], stdout=sys.stderr)
    if r.returncode != 0:
        raise RuntimeError("tracy: `%s` failed (exit %d)" % (" ".join(cmd), r.returncode))
    return os.path.join(build, "python", NAME), os.path.join(build, "bin")


def _record_line(arc, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "%s,sha256=%s,%d" % (arc, digest.decode(), len(data))


def _pack(path, pkg, bindir, version):
    dist = "%s-%s.dist-info" % (NAME, version)
    data = "%s-%s.data" % (NAME, version)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    files = []
    for d, dirs, names in os.walk(pkg):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        for n in sorted(names):
            if n.endswith(".py") or n == "_tracy" + suffix:
                full = os.path.join(d, n)
                files.append((os.path.join(NAME, os.path.relpath(full, pkg)), full, 0o644))
    files.append(("tracy-isolated.pth", os.path.join(ROOT, "pyhook", "tracy-isolated.pth"), 0o644))
    for p in PROGRAMS:
        files.append(("%s/scripts/%s" % (data, p), os.path.join(bindir, p), 0o755))
    files.append(("%s/scripts/tracy" % data, os.path.join(ROOT, "pyhook", "cmd", "tracy"), 0o755))
    meta = {
        dist + "/METADATA": _metadata(version),
        dist + "/WHEEL": "Wheel-Version: 1.0\nGenerator: tracy_backend\n"
                         "Root-Is-Purelib: false\nTag: %s\n" % _tag(),
        dist + "/entry_points.txt": "[pytest11]\ntracy = tracy.pytest_plugin\n",
    }
    record = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, full, mode in files:
            with open(full, "rb") as f:
                blob = f.read()
            if arc.endswith("/scripts/tracy"):  # pip gives it the environment's python
                blob = b"#!python" + blob[blob.index(b"\n"):]
            info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, blob)
            record.append(_record_line(arc, blob))
        for arc, text in meta.items():
            z.writestr(arc, text)
            record.append(_record_line(arc, text.encode()))
        record.append(dist + "/RECORD,,")
        z.writestr(dist + "/RECORD", "\n".join(record) + "\n")


# ---- PEP 517 hooks -------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    name = "%s-%s-%s.whl" % (NAME, version, _tag())
    with tempfile.TemporaryDirectory(prefix="tracy-build-") as tmp:
        pkg, bindir = _build(tmp)
        _pack(os.path.join(wheel_directory, name), pkg, bindir, version)
    return name


def build_sdist(sdist_directory, config_settings=None):
    """The tree as it is, without build outputs and version control."""
    version = _version()
    base = "%s-%s" % (NAME, version)
    skip = {".git", "build", "__pycache__"}

    def keep(info):
        parts = info.name.split("/")
        return None if any(p in skip for p in parts[1:]) else info
    with tarfile.open(os.path.join(sdist_directory, base + ".tar.gz"), "w:gz") as t:
        t.add(ROOT, arcname=base, filter=keep)
    return base + ".tar.gz"
