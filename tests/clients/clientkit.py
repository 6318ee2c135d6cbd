"""Running a tool's session script with the client virtualenv against a live cluster."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path


def run_session(python: Path, script: str, cluster, *args: str, timeout: float = 240) -> dict:
    """Run ``tests/clients/SCRIPT ARGS`` with the client virtualenv against ``cluster``; the
    JSON object it prints last."""
    env = cluster.c.env()
    env["PATH"] = os.pathsep.join([str(cluster.c.dir / "bin"), str(python.parent), "/usr/bin", "/bin"])
    r = subprocess.run([str(python), str(Path(__file__).parent / script), *args], env=env, cwd=str(cluster.work),
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{script} {' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return json.loads(r.stdout.strip().splitlines()[-1])
