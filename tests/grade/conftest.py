"""The labs assigned once per session, shared by the grading tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from gradekit import LABS, minislurm  # noqa: E402


def pytest_collection_modifyitems(config, items):
    """Grading runs notebooks in kernels (and the grader image): every test here starts them."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.daemons)


@pytest.fixture(scope="session")
def dist(tmp_path_factory):
    """``minislurm grade assign`` on every lab (test_catalogue.py grades the worked solutions)."""
    out = tmp_path_factory.mktemp("dist")
    proc = minislurm("grade", "assign", *(f"labs/{lab}.ipynb" for lab in LABS), "--out", str(out),
                     "--jobs", "2", "--no-run-tests")
    assert proc.returncode == 0, proc.stdout
    return out, proc.stdout
