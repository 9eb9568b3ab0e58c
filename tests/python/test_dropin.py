"""Tracy drop-in headers (tracy/Tracy.hpp, tracy/TracyC.h): programs written
with Tracy's macros (tests/dropin/) are built with g++ and gcc against the
build tree (-I build/include) and against the headers and library that
`make install DESTDIR=...` stages (found with pkg-config), run under the real
capture-release, and the trace holds exactly what they recorded. Built
without TRACY_ENABLE they reference nothing of libtrace."""
import collections
import os
import subprocess

import pytest

from conftest import BIN, BUILD, ROOT
from tracy import _tracy

SRC = os.path.join(ROOT, "tests", "dropin")
WORKERS, ITERS = 3, 10
WARN = ["-O2", "-Wall", "-Wextra", "-Werror"]
DEFAULT_PYTHON = "/usr/bin/python3"

pytestmark = pytest.mark.skipif(
    os.path.realpath(os.environ.get("TRACY_TEST_PYTHON", DEFAULT_PYTHON))
    != os.path.realpath(DEFAULT_PYTHON),
    reason="C and C++ programs, no Python in them: checked once, in the run for "
           + DEFAULT_PYTHON)


def sh(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    assert p.returncode == 0, "%s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr)
    return p.stdout


def cpp(out, flags, libs=()):
    sh(["g++", "-std=c++17"] + WARN + flags + [os.path.join(SRC, "dropin.cpp"),
       os.path.join(SRC, "dropin_other.cpp"), "-o", out] + list(libs))
    return out


def c(out, flags, libs=()):
    sh(["gcc", "-std=c11"] + WARN + flags + [os.path.join(SRC, "dropin_c.c"), "-o", out]
       + list(libs) + ["-lpthread"])
    return out


def make_env():
    env = dict(os.environ)
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"):
        env.pop(k, None)
    return env


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """{label: path} of the enabled programs; the build tree's and the staged ones."""
    d = tmp_path_factory.mktemp("dropin")
    inc = os.path.join(BUILD, "include")
    tree_libs = [os.path.join(BUILD, "lib", "libtrace.a"), "-lzstd", "-lpthread"]
    progs = {
        "tree_cpp": cpp(str(d / "tree_cpp"), ["-DTRACY_ENABLE", "-I" + inc,
                                             "-I" + os.path.join(inc, "tracy")], tree_libs),
        "tree_c": c(str(d / "tree_c"), ["-DTRACY_ENABLE", "-I" + inc], tree_libs),
    }
    stage = str(d / "stage")
    make = ["make", "-s", "-C", ROOT, "install", "DESTDIR=" + stage, "PREFIX=/usr/local"]
    if os.path.realpath(BUILD) != os.path.realpath(os.path.join(ROOT, "build")):
        make.append("B=" + os.path.relpath(BUILD, ROOT))
    sh(make, env=make_env())
    env = dict(os.environ, PKG_CONFIG_PATH=stage + "/usr/local/lib/pkgconfig",
               PKG_CONFIG_SYSROOT_DIR=stage)
    env.pop("PKG_CONFIG_LIBDIR", None)
    cflags = sh(["pkg-config", "--cflags", "libtrace"], env=env).split()
    libs = sh(["pkg-config", "--libs", "libtrace"], env=env).split()
    incdir = sh(["pkg-config", "--variable=includedir", "libtrace"], env=env).strip()
    if not incdir.startswith(stage):  # pkgconf prefixes variables too, pkg-config not
        incdir = stage + incdir
    assert "-I" + incdir in cflags, cflags
    assert os.path.exists(os.path.join(incdir, "tracy", "Tracy.hpp"))
    libs.append("-Wl,-rpath," + stage + "/usr/local/lib")
    progs["staged_cpp"] = cpp(str(d / "staged_cpp"), ["-DTRACY_ENABLE"] + cflags
                              + ["-I" + os.path.join(incdir, "tracy")], libs)
    progs["staged_c"] = c(str(d / "staged_c"), ["-DTRACY_ENABLE"] + cflags, libs)
    return progs


@pytest.fixture(scope="module")
def trace(programs, tmp_path_factory):
    """The four programs run under one capture-release: {label: per-process dict}."""
    out = str(tmp_path_factory.mktemp("dropin_trace") / "dropin.tracy")
    d = subprocess.Popen([os.path.join(BIN, "capture-release"), "-o", out, "-p", "0", "-q",
                          "-n", str(len(programs))], stdout=subprocess.PIPE, text=True)
    try:
        port = d.stdout.readline().strip()
        env = dict(os.environ, TRACY_PORT=port)
        env.pop("TRACY_ADDR", None)
        for label, exe in programs.items():
            p = subprocess.run([exe, str(WORKERS), str(ITERS)], capture_output=True,
                               text=True, timeout=60, env=env)
            assert p.returncode == 0, (label, p.stdout, p.stderr)
            assert "connected 1" in p.stdout, (label, p.stdout, p.stderr)
        assert d.wait(timeout=60) == 0
    finally:
        if d.poll() is None:
            d.kill()
            d.wait()
    t = _tracy._read_trace(out)
    assert t["complete"]
    assert t["lost"] == []
    by_exe = {os.path.realpath(exe): label for label, exe in programs.items()}
    res = {}
    for pr in t["processes"]:
        assert pr["status"] == 0, pr
        assert pr["events_received"] == pr["events_sent"] and pr["events_lost"] == 0, pr
        label = by_exe[os.path.realpath(pr["argv"][0] if pr["argv"] else pr["program"])]
        i = pr["index"]
        res[label] = {k: [e for e in t[k] if e.process == i]
                      for k in ("zones", "messages", "signposts", "plots", "frames")}
        res[label]["threads"] = sorted(th.name for th in t["threads"] if th.process == i)
    assert sorted(res) == sorted(programs)
    return res


def halves(n):
    """How many of range(n) are even and odd."""
    return (n + 1) // 2, n // 2


def each(n):
    return WORKERS * n


def common_checks(p, main_name, worker_name, app_info):
    W, N = WORKERS, ITERS
    assert p["threads"] == sorted([main_name] + ["%s %d" % (worker_name, w) for w in range(W)])
    assert p["signposts"] and [(s.header, s.body) for s in p["signposts"]] == [("app info", app_info)]
    for z in p["zones"]:
        assert z.kind == 4 and z.flags == 0, z  # user zones, closed normally
    return W, N


def plot_values(p, name):
    return [e.value for e in p["plots"] if e.name == name]


@pytest.mark.parametrize("label", ["tree_cpp", "staged_cpp"])
def test_cpp_macros_record_exactly_what_the_program_did(trace, label):
    p = trace[label]
    W, N = common_checks(p, "main thread", "worker", "drop-in test")
    even, odd = halves(N)
    names = collections.Counter(z.name for z in p["zones"])
    assert names == {
        "plain": each(N), "named": each(N), "colored": each(N), "renamed": each(N),
        "nested": each(2 * N), "inner renamed": each(N), "nc": each(N),
        "with_depth": each(4 * N), "ns": each(N), "ncs": each(N), "named s": each(N),
        "named cs": each(N), "transient": each(2 * N), "transient 0": each(even),
        "transient 1": each(odd), "transient s": each(N), "fmt 0": each(even),
        "fmt 1": each(odd), "fmt v renamed": each(N), "by srcloc": each(N),
        "lock wait: custom": each(N), "lock wait: std::mutex mtx": each(N),
        "lock wait: std::shared_mutex smtx": each(2 * N)}
    text = collections.defaultdict(list)
    for z in p["zones"]:
        text[z.name].append(z.text)
    # Every ZoneText and ZoneValue of a zone is kept, one line each, as Tracy shows them.
    assert sorted(text["named"]) == sorted("t\n%d" % i for i in range(N) for _ in range(W))
    assert sorted(text["inner renamed"]) == sorted(str(i) for i in range(N) for _ in range(W))
    assert sorted(text["fmt v renamed"]) == sorted("v=%d" % i for i in range(N) for _ in range(W))
    assert sorted(text["fmt 0"] + text["fmt 1"]) == sorted(
        "i=%d" % i for i in range(N) for _ in range(W))
    # The text given to the outer zone while the inner one was open is the outer's.
    nested = collections.Counter((z.depth, z.text) for z in p["zones"] if z.name == "nested")
    assert nested == {(0, "outer text"): each(N), (2, ""): each(N)}
    assert all(z.file.endswith("dropin.cpp") for z in p["zones"] if not z.name.startswith("lock"))
    plots = collections.Counter(e.name for e in p["plots"])
    assert plots == {"int plot": each(N), "float plot": each(N), "double plot": each(N),
                     "dyn a": each(even), "dyn b": each(odd), "memory": each(8 * N),
                     "memory: pool": each(8 * N), "memory: main pool": 5,
                     "memory: empty pool": 1}
    assert sorted(plot_values(p, "int plot")) == sorted(float(i) for i in range(N) for _ in range(W))
    assert sorted(plot_values(p, "double plot")) == sorted(i * 0.5 for i in range(N) for _ in range(W))
    # Bytes in use per pool: the other file's allocation, two here, a free, a discard.
    assert plot_values(p, "memory: main pool") == [8, 1008, 1032, 32, 0]
    for pool in ("memory", "memory: pool"):
        v = plot_values(p, pool)
        assert min(v) >= 0 and v[-1] == 0, (pool, v[-5:])
    msgs = collections.Counter(m.text for m in p["messages"])
    fixed = ["literal", "colored", "literal colored", "msg s", "msg ls", "msg cs", "msg lcs"]
    assert msgs == dict({m: each(N) for m in fixed},
                        **{"msg %d %d" % (w, i): 1 for w in range(W) for i in range(N)})
    frames = collections.Counter(f.name for f in p["frames"])
    assert frames == {"": N, "worker": each(N), "discontinuous": each(N)}


@pytest.mark.parametrize("label", ["tree_c", "staged_c"])
def test_c_macros_record_exactly_what_the_program_did(trace, label):
    p = trace[label]
    W, N = common_checks(p, "c main", "c worker", "c drop-in test")
    even, odd = halves(N)
    names = collections.Counter(z.name for z in p["zones"])
    assert names == {"c_zones": each(N), "c named": each(N), "c renamed": each(N),
                     "c nc 0": each(even), "c nc 1": each(odd), "c_depth": each(2 * N),
                     "c ns": each(N), "c ncs": each(N), "c srcloc": each(N),
                     "c alloc 0": each(even), "c alloc 1": each(odd)}
    texts = collections.Counter((z.name, z.text) for z in p["zones"] if z.text)
    want = {("c_zones", "c text"): each(N)}
    want.update({("c named", str(i)): W for i in range(N)})
    want.update({("c nc %d" % (i % 2), "i=%d" % i): W for i in range(N)})
    want.update({("c srcloc", str(i)): W for i in range(N)})
    want.update({("c alloc 0", "alloc"): each(even), ("c alloc 1", "alloc"): each(odd)})
    assert texts == want
    depth = collections.Counter((z.name, z.depth) for z in p["zones"] if z.name in ("c_depth", "c ns"))
    assert depth == {("c_depth", 0): each(N), ("c_depth", 2): each(N), ("c ns", 1): each(N)}
    plots = collections.Counter(e.name for e in p["plots"])
    assert plots == {"c plot": each(N), "c float": each(N), "c int": each(N),
                     "c fn plot": each(N), "memory": each(6 * N), "memory: c pool": each(8 * N)}
    assert sorted(plot_values(p, "c plot")) == sorted(i * 0.5 for i in range(N) for _ in range(W))
    for pool in ("memory", "memory: c pool"):
        v = plot_values(p, pool)
        assert min(v) >= 0 and v[-1] == 0, (pool, v[-5:])
    msgs = collections.Counter(m.text for m in p["messages"])
    fixed = ["c literal", "c colored", "c literal colored", "c msg s", "c msg ls",
             "c msg cs", "c msg lcs", "c fn message", "c log"]
    assert msgs == dict({m: each(N) for m in fixed},
                        **{"c msg %d %d" % (w, i): 1 for w in range(W) for i in range(N)})
    frames = collections.Counter(f.name for f in p["frames"])
    assert frames == {"": N, "c worker": each(N), "c discontinuous": each(N)}


def test_without_tracy_enable_nothing_is_referenced_or_recorded(tmp_path):
    inc = os.path.join(BUILD, "include")
    exes = [cpp(str(tmp_path / "off_cpp"), ["-Wno-unused", "-Wno-unused-parameter", "-I" + inc,
                                           "-I" + os.path.join(inc, "tracy")]),
            c(str(tmp_path / "off_c"), ["-Wno-unused", "-Wno-unused-parameter", "-I" + inc])]
    for exe in exes:
        syms = sh(["nm", exe])
        assert not [s for s in syms.split() if s.startswith(("lt_", "lt__"))], exe
        # A daemon on a port of its own: nothing may connect to it.
        d = subprocess.Popen([os.path.join(BIN, "capture-release"), "-o", exe + ".tracy",
                              "-p", "0", "-q", "-s", "1"], stdout=subprocess.PIPE, text=True)
        try:
            port = d.stdout.readline().strip()
            p = subprocess.run([exe, "2", "3"], capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, TRACY_PORT=port))
            assert p.returncode == 0 and "connected 0" in p.stdout, p
            assert d.wait(timeout=30) == 0
        finally:
            if d.poll() is None:
                d.kill()
                d.wait()
        t = _tracy._read_trace(exe + ".tracy")
        assert t["processes"] == [] and t["zones"] == []



def test_build_tree_pkg_config_points_at_build_include():
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(BUILD, "lib", "pkgconfig"))
    env.pop("PKG_CONFIG_LIBDIR", None)
    env.pop("PKG_CONFIG_SYSROOT_DIR", None)
    inc = sh(["pkg-config", "--variable=includedir", "libtrace"], env=env).strip()
    assert os.path.realpath(inc) == os.path.realpath(os.path.join(BUILD, "include"))
    assert "-I" + inc in sh(["pkg-config", "--cflags", "libtrace"], env=env).split()
    for h in ("tracy/Tracy.hpp", "tracy/TracyC.h", "libtrace/trace_client.h"):
        assert os.path.exists(os.path.join(inc, h)), h
