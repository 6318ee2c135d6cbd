"""Stopping a daemon and everything it started (``cluster down``, a killed node, a controller
restart): its process group politely, then every process below it, leaving none behind."""

from __future__ import annotations

import os
import signal
import time

__all__ = ["stop_process"]


def _group_alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
        return True
    except ProcessLookupError:
        return False


def stop_process(pid: int, grace: float = 5.0, alive=None) -> None:
    """SIGTERM the process's group, then SIGKILL it and every process it started (jobs run in
    sessions of their own) after ``grace`` seconds.  ``alive`` tells when the leader is gone
    (a Popen's poll: a dead child is a zombie until reaped, and zombies answer signals)."""
    from minislurm.slurmd.proc import members
    alive = alive or (lambda: _group_alive(pid))
    everyone = members({pid})
    if grace:
        try:
            os.killpg(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
        deadline = time.time() + grace
        while time.time() < deadline and alive():
            time.sleep(0.02)
    if alive():
        _kill_tree(pid)
    for target in everyone:
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _kill_tree(pid: int) -> None:
    """SIGKILL a process and all below it at once, as a crashed machine loses them: every one is
    stopped first, scan after scan (a stopped process forks no more; a job caught mid-fork shows
    its child on the next scan; orphans stay below the stopped leader, their subreaper), and only
    then killed, so no process sees another die (a shell would note a killed child in the job's
    output)."""
    from minislurm.slurmd.proc import members
    try:
        os.kill(pid, signal.SIGSTOP)
    except (ProcessLookupError, PermissionError):
        return
    stopped: set[int] = set()
    for _ in range(100):
        fresh = members({pid}) - stopped - {pid}
        if not fresh:
            break
        for target in fresh:
            try:
                os.kill(target, signal.SIGSTOP)
            except (ProcessLookupError, PermissionError):
                pass
        stopped |= fresh
    for target in (*stopped, pid):
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.kill(pid, signal.SIGCONT)
    except (ProcessLookupError, PermissionError):
        pass
