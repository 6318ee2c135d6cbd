"""``cluster up --system`` compiles the commands' modules for the Python its commands run with
(minislurm/cluster/system.py ``compile_commands``): the users it installs them for cannot write
beside the sources, and a command that finds no bytecode compiles what it imports every time."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import minislurm
from minislurm.cluster.system import compile_commands


def test_every_module_has_fresh_bytecode_after_compile_commands():
    package = Path(minislurm.__file__).parent
    compile_commands(sys.executable)
    stale = []
    for source in package.rglob("*.py"):
        if "_build" in source.parts:
            continue
        cached = Path(importlib.util.cache_from_source(str(source)))
        if not cached.exists() or cached.stat().st_mtime < source.stat().st_mtime:
            stale.append(str(source.relative_to(package)))
    assert stale == []
