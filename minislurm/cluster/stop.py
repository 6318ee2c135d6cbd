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


def _send(targets, sig: int) -> None:
    """Signal each process that is still there (one that has gone is no error)."""
    for target in targets:
        try:
            os.kill(target, sig)
        except (ProcessLookupError, PermissionError):
            pass


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
    _send(everyone, signal.SIGKILL)


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
        _send(fresh, signal.SIGSTOP)
        stopped |= fresh
    _send((*stopped, pid), signal.SIGKILL)  # SIGKILL ends a stopped process too
