"""The wheel that `pip install .` builds carries the toolkit's version, the
one the programs print (written once, in libtrace/trace.h)."""
import importlib.util
import os
import subprocess

from conftest import BIN, ROOT


def test_wheel_version_is_the_programs_version():
    spec = importlib.util.spec_from_file_location(
        "tracy_backend", os.path.join(ROOT, "pyhook", "backend", "tracy_backend.py"))
    backend = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backend)
    out = subprocess.run([os.path.join(BIN, "tracy-info"), "-V"], capture_output=True,
                         text=True, timeout=60).stdout
    version = out.split()[1]
    assert version[0].isdigit() and version != "0.0.0", out
    assert backend._version() == version
