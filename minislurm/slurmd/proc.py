"""Stopping a job's processes on one node (like slurmstepd with proctrack/linuxproc).

Each batch script and each task runs in its own session (see :mod:`minislurm.slurmd.spawn`).
Stopping a job signals every group it owns and every descendant found in /proc (so a child
that left its group is not forgotten): SIGCONT + SIGTERM, then SIGKILL after KillWait.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass, field


@dataclass
class Table:
    """Every process at one moment, from /proc: (pid, parent, session, state) each, and the
    pids by parent and by session (the live ones), so that looking up one job's processes
    costs what the job has, not what the machine runs."""

    rows: list[tuple[int, int, int, bytes]]
    children: dict[int, list[int]] = field(default_factory=dict)
    sessions: dict[int, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for pid, parent, sid, state in self.rows:
            self.children.setdefault(parent, []).append(pid)
            if state != b"Z":
                self.sessions.setdefault(sid, []).append(pid)


def _scan() -> Table:
    """Every process now, from /proc."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            out.append((int(entry), int(fields[1]), int(fields[3]), fields[0]))
        except (OSError, IndexError, ValueError):
            continue
    return Table(out)


_last: tuple[float, Table] = (float("-inf"), Table([]))


def recent_scan(max_age: float) -> Table:
    """:func:`_scan`, or the last one if it is younger than ``max_age`` seconds.  What only
    observes (usage meters, the reaping of orphans) shares one scan: an agent process hosting
    hundreds of virtual nodes has a meter per node, and a scan each would cost it the square
    of its node count.  Stopping and signalling always scan afresh."""
    global _last
    now = time.monotonic()
    if now - _last[0] >= max_age:
        _last = (now, _scan())
    return _last[1]


def _pgrp(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[2])
    except (OSError, IndexError, ValueError):
        return None


def _tagged(children: dict[int, list[int]], tag: tuple[int, str, int]) -> list[int]:
    """Processes below this agent whose environment names the job on this node (its
    "container", as a cgroup is for Slurm's proctrack/cgroup).  This catches a daemon that
    left both the job's session and its process tree (re-parented to the agent, its
    subreaper).  A run of another incarnation (SLURM_RESTART_COUNT) is not this one."""
    job_id, node, inc = tag
    want = (f"SLURM_JOB_ID={job_id}".encode(), f"SLURMD_NODENAME={node}".encode())
    restart = f"SLURM_RESTART_COUNT={inc}".encode()
    out, todo = [], list(children.get(os.getpid(), ()))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, ()))
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = set(f.read().split(b"\0"))
        except OSError:
            continue
        other_run = any(v.startswith(b"SLURM_RESTART_COUNT=") for v in env) and restart not in env
        if all(w in env for w in want) and not other_run:
            out.append(pid)
    return out


def members(roots: set[int], tag: tuple[int, str, int] | None = None) -> set[int]:
    """Live processes of the sessions started at ``roots``, and every descendant of the roots
    (and, with a job ``tag``, of every process tagged with it: see :func:`_tagged`).

    Sessions catch children orphaned by their parent's exit (the agent is their subreaper);
    descendants catch a child that started a session of its own.
    """
    return set(families(roots, tag))


def families(roots: set[int], tag: tuple[int, str, int] | None = None,
             table: Table | None = None) -> dict[int, int | None]:
    """:func:`members`, each mapped to the root whose session or tree it belongs to (None: one
    found only by the job's tag), so a step's usage can be told per task.  ``table``: a scan
    of /proc already made (:func:`recent_scan`)."""
    table = _scan() if table is None else table
    todo: list[tuple[int, int | None]] = [(r, r) for r in roots]
    todo += [(pid, r) for r in roots for pid in table.sessions.get(r, ())]
    if tag is not None:
        todo.extend((pid, None) for pid in _tagged(table.children, tag))
    children = table.children
    found: dict[int, int | None] = {}
    while todo:
        pid, root = todo.pop()
        if pid not in found or (found[pid] is None and root is not None):
            found[pid] = root
            todo.extend((child, root) for child in children.get(pid, ()))
    return found


def become_subreaper() -> None:
    """Orphaned job processes are re-parented to the agent instead of init, so none escape."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


_zombies: set[int] = set()  # what the last reaping round saw dead and left


def _own_zombies() -> set[int]:
    """This process's exited children not yet collected, from the kernel's list of each of its
    threads' children (what a job left behind is a few processes; /proc as a whole may be
    thousands); from a scan of /proc on a kernel without that list."""
    me = os.getpid()
    children = []
    try:
        for task in os.listdir(f"/proc/{me}/task"):
            with open(f"/proc/{me}/task/{task}/children", "rb") as f:
                children += [int(pid) for pid in f.read().split()]
    except FileNotFoundError:
        return {pid for pid, parent, _, state in _scan().rows if parent == me and state == b"Z"}
    return {pid for pid in children if _state(pid) == b"Z"}


def _state(pid: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def reap_orphans(tracked: set[int]) -> None:
    """Collect exited orphans (not the processes asyncio is waiting for).  Only a zombie seen by
    the round before is collected: a task that exits while it is being started is not yet
    tracked, and asyncio must get its exit status, not this."""
    now = _own_zombies() - tracked
    for pid in now & _zombies:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
    _zombies.clear()
    _zombies.update(now)


@dataclass
class ProcessSet:
    """The root processes of one job (or step) on this node; ``tag`` (job id, node, restart
    count) also finds the job's processes that escaped both (see :func:`_tagged`)."""

    procs: list[asyncio.subprocess.Process] = field(default_factory=list)
    tag: tuple[int, str, int] | None = None

    def pids(self) -> set[int]:
        return {p.pid for p in self.procs}

    def alive(self) -> bool:
        return any(p.returncode is None for p in self.procs)

    def signal(self, signum: int) -> None:
        """Each process gets the signal once (a trap runs once, as under slurmstepd): the
        roots' process groups, then every other member one by one."""
        roots = self.pids()
        targets = members(roots, self.tag)
        for pid in roots:
            try:
                os.killpg(pid, signum)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in targets:
            if _pgrp(pid) in roots:
                continue
            try:
                os.kill(pid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    async def stop(self, kill_wait: float) -> None:
        """SIGCONT and SIGTERM, then SIGKILL after ``kill_wait`` seconds for whatever remains.
        Without a wait, SIGKILL alone (as slurmstepd kills what a finished batch script left)."""
        everyone = members(self.pids(), self.tag)
        if kill_wait > 0:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGTERM)
        waited = 0.0
        while waited < kill_wait and (self.alive() or _any_alive(everyone)):
            await asyncio.sleep(0.05)
            waited += 0.05
        everyone |= members(self.pids(), self.tag)
        self.signal(signal.SIGKILL)
        for pid in everyone:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _any_alive(pids: set[int]) -> bool:
    for pid in pids:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] != b"Z":
                    return True
        except (ProcessLookupError, PermissionError, OSError):
            continue
    return False
