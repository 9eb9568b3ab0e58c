"""Why `tracy._tracy` does not import: the package holds one extension per
interpreter ABI (_tracy<EXT_SUFFIX>), and one built for another Python would
otherwise surface as a puzzling "circular import". Imported only then."""
import os


def extension_missing():
    """Raises ImportError naming this interpreter and the builds present,
    when there is no extension for it; returns when there is one (its own
    import error is then the one to show)."""
    import glob
    import sys
    import sysconfig
    here = os.path.dirname(os.path.abspath(__file__))
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    if os.path.exists(os.path.join(here, "_tracy" + suffix)):
        return
    built = sorted(os.path.basename(p)[len("_tracy"):]
                   for p in glob.glob(os.path.join(here, "_tracy.*")))
    raise ImportError(
        "tracy: not built for Python %d.%d (%s): %s has %s; build it with "
        "`make PYTHON=%s` or `%s -m pip install .`, tracy supports CPython 3.8 to 3.13"
        % (sys.version_info[0], sys.version_info[1], sys.executable, here,
           "builds for " + ", ".join(built) if built else "no extension",
           sys.executable, sys.executable)) from None

