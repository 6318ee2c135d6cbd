"""Installing minislurm prints no warning box: setuptools (77 and later) deprecates a license
given as a TOML table and prints a notice for it on every build; an SPDX string is the form."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_license_is_an_spdx_expression_and_setuptools_new_enough_to_read_it():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "MIT"
    assert "setuptools>=77" in project["build-system"]["requires"]
