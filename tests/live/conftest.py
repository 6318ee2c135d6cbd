"""Fixtures for the live tests: a real controller and real node agents, started per module."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from livekit import started  # noqa: E402


# Seconds a live test may take, its module's cluster start included (pytest-timeout): a hung
# daemon or command fails that test with every thread's stack, instead of stalling CI.  A test
# that needs longer says so with its own ``@pytest.mark.timeout(...)``.
LIVE_TIMEOUT = 300


def pytest_configure(config):
    config.addinivalue_line("markers", "live: end-to-end tests against a real local cluster (processes)")


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here not in Path(item.fspath).parents:
            continue
        item.add_marker(pytest.mark.daemons)
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(LIVE_TIMEOUT))


@pytest.fixture(scope="module")
def live(tmp_path_factory, request):
    """A 2-node, 4-GPU-per-node cluster for the module.  A module may set ``CLUSTER = {...}``
    (LocalCluster keyword arguments) to change it, and ``SHARED_ROOT = True`` to put the
    cluster where other users can reach its files (pytest's own folders are private to the
    user running it, and a job running as another user must reach its spooled script)."""
    kw = getattr(request.module, "CLUSTER", {})
    name = request.module.__name__.rsplit(".", 1)[-1]
    if getattr(request.module, "SHARED_ROOT", False):
        root = Path(tempfile.mkdtemp(prefix=f"minislurm-{name}-"))
        root.chmod(0o755)
        try:
            with started(root, **kw) as lv:
                yield lv
        finally:
            shutil.rmtree(root, ignore_errors=True)
    else:
        with started(tmp_path_factory.mktemp(name), **kw) as lv:
            yield lv
