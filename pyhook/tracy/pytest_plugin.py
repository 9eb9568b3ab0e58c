"""pytest plugin: the `tracy_profile` fixture.

Active under `python -m tracy -m pytest` (which passes `-p tracy.pytest_plugin`),
or with `-p tracy.pytest_plugin`. A test that requests `tracy_profile` has its
body profiled, also under `python -m tracy -p`; the fixture value is the
Profiler. Each such test is also a zone named after the test.
"""
import pytest

import tracy


@pytest.fixture
def tracy_profile(request):
    prof = tracy.Profiler()
    with tracy.zone(request.node.nodeid):
        prof.enable()
        try:
            yield prof
        finally:
            prof.disable()
