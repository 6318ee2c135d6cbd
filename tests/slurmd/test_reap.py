"""The agent collects its exited orphans (it is their subreaper), never a process asyncio waits for."""

from __future__ import annotations

import os
import subprocess
import time

from minislurm.slurmd import proc


def _zombie() -> int:
    child = subprocess.Popen(["true"])
    child.returncode = 0  # as if collected: Popen must not reap it behind the agent's back
    while proc._state(child.pid) != b"Z":
        time.sleep(0.01)
    return child.pid


def test_an_exited_child_nobody_waits_for_is_collected_on_the_second_round(monkeypatch):
    monkeypatch.setattr(proc, "_zombies", set())
    orphan, tracked = _zombie(), _zombie()
    proc.reap_orphans({tracked})
    assert proc._state(orphan) == b"Z"  # seen once: it may be a task still being started
    proc.reap_orphans({tracked})
    assert proc._state(orphan) is None and proc._state(tracked) == b"Z"
    os.waitpid(tracked, 0)
