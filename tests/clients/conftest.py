"""Contract tests: the tools ML people drive Slurm with, unchanged, against a live cluster.

Each tool runs from the client virtualenv (``make .venv-clients``: requirements-clients.txt,
pinned; kept apart from .venv so that no tool's pins bend the project's) as a user's own
script would, with the cluster's commands on PATH; the test reads what the user saw.  Without
that virtualenv these tests are skipped, unless MINISLURM_REQUIRE_CLIENTS=1 (as .ci/run sets)
makes that a failure.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "live"))
sys.path.insert(0, str(Path(__file__).parent))

from livekit import started  # noqa: E402

CLIENTS_PYTHON = ROOT / ".venv-clients" / "bin" / "python"


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.daemons)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(300))


@pytest.fixture(scope="session")
def clients_python() -> Path:
    if not CLIENTS_PYTHON.exists():
        why = f"no client virtualenv at {CLIENTS_PYTHON.parent.parent} (make .venv-clients)"
        if os.environ.get("MINISLURM_REQUIRE_CLIENTS") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return CLIENTS_PYTHON


@pytest.fixture
def cluster(tmp_path):
    """A fresh 2-node, 4-GPU-per-node cluster for each test: tools keep state between calls."""
    with started(tmp_path) as live:
        yield live
