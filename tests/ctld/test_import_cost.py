"""The controller starts without compiling grammars it never uses (minislurm/core/lazyimports.py):
jsonschema's optional IRI check cost every controller start 1-3 s idle, over 10 s under load."""

from __future__ import annotations

import subprocess
import sys


def test_the_controller_imports_jsonschema_without_the_iri_grammars():
    probe = ("import sys, minislurm.ctld.api, jsonschema; "
             "print('jsonschema' in sys.modules, sys.modules.get('rfc3987_syntax', 'absent'))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["True", "None"], result.stdout + result.stderr
