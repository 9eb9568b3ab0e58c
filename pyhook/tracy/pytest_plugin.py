"""pytest plugin: the `tracy_profile` fixture.

Active under `python -m tracy -m pytest` (which passes `-p tracy.pytest_plugin`),
or with `-p tracy.pytest_plugin`. A test that requests `tracy_profile` has its
body profiled, also under `python -m tracy -p`; the fixture value is the
Profiler. Each such test is also a zone named after the test. Recording is on
only while the test function itself runs: pytest's own work (fixtures,
reports, assertion rewriting) is not shown as the test's.
"""
import functools

import pytest

import tracy


@pytest.fixture
def tracy_profile(request):
    prof = tracy.Profiler()
    request.node._tracy_profiler = prof
    try:
        yield prof
    finally:
        prof.disable()
        request.node._tracy_profiler = None


def _profiled(func, prof, name):
    @functools.wraps(func)
    def call(*args, **kwargs):
        with tracy.zone(name):
            prof.enable()
            try:
                return func(*args, **kwargs)
            finally:
                prof.disable()
    return call


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    prof = getattr(pyfuncitem, "_tracy_profiler", None)
    if prof is None:
        yield
        return
    orig = pyfuncitem.obj
    pyfuncitem.obj = _profiled(orig, prof, pyfuncitem.nodeid)
    try:
        yield
    finally:
        pyfuncitem.obj = orig
