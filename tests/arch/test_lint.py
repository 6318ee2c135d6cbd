"""The tree passes the linter (ruff, rules in pyproject.toml): an unused import, an undefined
name or a shadowed definition fails the tests, not a reader's afternoon."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_tree_passes_ruff():
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        ruff = shutil.which("ruff")
    if ruff is None:
        pytest.fail("ruff is not installed (it is in requirements.txt: make .venv/.installed)")
    result = subprocess.run([str(ruff), "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
