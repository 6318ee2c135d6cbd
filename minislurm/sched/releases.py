"""The running jobs' side of the backfill plan: per node, when the running jobs give back what
they hold (at the ends of their time limits, on the plan's grid of ``bf_resolution`` seconds),
in time order, and how much of it in all after each.

Slurm builds this afresh every backfill cycle.  A caller that plans many cycles (the
controller, the simulator) keeps one :class:`Releases` between them, as it keeps a
:class:`~minislurm.sched.order.QueueOrder`: each cycle only the jobs that started or ended
since the last change it, a few rows of the table each.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Protocol

import numpy as np

from minislurm.core.job import Allocation
from minislurm.core.state import ClusterState
from minislurm.sched.promises import NEVER


class Holding(Protocol):
    """What the plan needs of a job that holds resources: when it started, for how long at
    most, and what it holds on which nodes."""

    start_time: float
    time_limit: float
    alloc: Allocation


class Releases:
    """``times[node]``: the node's release times in order (column 0 stands for now, NEVER
    fills the rest of a row); ``cpus[node, c]``, ``mem``, ``gpus``: what the releases up to
    column ``c`` give back in all (0 past the last)."""

    def __init__(self, nodes: int = 0, resolution: float = 1):
        self.nodes, self.resolution = nodes, max(1, int(resolution))
        self.times = np.full((nodes, 1), -1, dtype=np.int64)  # column 0: set to now by the plan
        self.cpus, self.mem, self.gpus = (np.zeros((nodes, 1), dtype=np.int64) for _ in range(3))
        self._held: dict[int, tuple] = {}  # job id -> (alloc, start_time, time_limit, its rows)
        self._epoch: int | None = None  # the state's order epoch, and how much of its journal was read
        self._read = 0
        self.ready = ReadyColumns()  # kept with the table; a cycle's copy shares it
        self._a_copy = 0  # a copy's number (ReadyColumns.new_copy); 0: the kept table

    def grid(self, t: float) -> int:
        """Round a time up onto the grid; infinite stays NEVER."""
        if t == math.inf or t >= NEVER:
            return NEVER
        return int(math.ceil(t / self.resolution) * self.resolution)

    def grid_all(self, times: np.ndarray) -> np.ndarray:
        """:meth:`grid` for many times at once (the same answers)."""
        on_grid = np.ceil(np.minimum(times, NEVER) / self.resolution) * self.resolution
        return np.where(times >= NEVER, NEVER, on_grid).astype(np.int64)

    def refresh(self, state: ClusterState) -> "Releases":
        """Up to date with the state's running jobs: only the jobs its journal names since the
        last time are looked at, unless the state says to start afresh (``reprioritized``:
        a time limit may have changed) or the cluster's nodes or grid changed."""
        resolution = max(1, int(state.config.sched.bf_resolution))
        if (self.nodes, self.resolution) != (len(state.nodes), resolution):
            self.__init__(len(state.nodes), resolution)
        if self._epoch != state.order_epoch or self._read < state.journal_start:
            self.update(state.running)
        else:
            changed = state.journal[self._read - state.journal_start:]
            self.update(state.running, dict.fromkeys(changed))
        self._epoch, self._read = state.order_epoch, state.journal_start + len(state.journal)
        return self

    def update(self, running: Mapping[int, Holding], only: Iterable[int] | None = None) -> "Releases":
        """Bring the table up to date with ``running`` (job id -> job): take out the jobs that
        ended or changed (a new allocation, a new time limit), put in the new ones.  With
        ``only``, the other jobs are known to be as they were."""
        held = self._held
        if not held and only is None:
            self._fill(running)
            return self
        for job_id in (held.keys() - running.keys()) if only is None else (i for i in only if i not in running):
            if job_id in held:
                self._take_out(job_id)
        new = []
        for job_id in running if only is None else (i for i in only if i in running):
            job = running[job_id]
            entry = held.get(job_id)
            if entry is not None:
                if entry[0] is job.alloc and entry[1] == job.start_time and entry[2] == job.time_limit:
                    continue
                self._take_out(job_id)
            new.append((job_id, job))
        self.add(self._hold(new))
        return self

    def _hold(self, jobs: list[tuple[int, Holding]]) -> np.ndarray:
        """Note what each job holds (to take it out again later); returns all their rows."""
        rows = self.rows(job for _, job in jobs)
        at = 0
        for job_id, job in jobs:
            count = len(job.alloc.nodes)
            self._held[job_id] = (job.alloc, job.start_time, job.time_limit, rows[at:at + count])
            at += count
        return rows

    def copy(self) -> "Releases":
        """A copy to change within one cycle (the kept table is not touched).  It shares the
        kept :class:`ReadyColumns`, which then follow the copy until the next one is made."""
        other = Releases(0, self.resolution)
        other.nodes = self.nodes
        other.times, other.cpus, other.mem, other.gpus = (a.copy() for a in (self.times, self.cpus, self.mem, self.gpus))
        other.ready, other._a_copy = self.ready, self.ready.new_copy()
        return other

    def first_fits(self, free, requests: dict) -> dict:
        """Per request (key -> request), each node's first column at which what is ``free``
        now and what the releases up to it give back cover it (-1: none): the kept
        :class:`ReadyColumns`, unless a later copy has taken them over."""
        if self._a_copy and self._a_copy != self.ready.copies:
            self.ready = ReadyColumns()
            self._a_copy = self.ready.new_copy()
        return self.ready.columns(free, self, requests)

    def _changed(self, nodes) -> None:
        self.ready.mark(nodes, by_copy=bool(self._a_copy))

    def rows(self, jobs: Iterable[Holding]) -> np.ndarray:
        """One row per node a job holds: (node, its release time on the grid, cpus, memory,
        gpus).  Built from plain lists and converted once: there may be thousands of jobs."""
        ends: list[float] = []
        per_job: list[int] = []
        nodes: list[int] = []
        cpus: list[int] = []
        mem: list[int] = []
        gpus: list[int] = []
        for job in jobs:
            alloc = job.alloc
            ends.append(job.start_time + job.time_limit)
            per_job.append(len(alloc.nodes))
            nodes += alloc.nodes
            cpus += alloc.cpus
            mem += alloc.mem
            gpus += map(len, alloc.gpus)
        rows = np.empty((len(nodes), 5), dtype=np.int64)
        rows[:, 0], rows[:, 2], rows[:, 3], rows[:, 4] = nodes, cpus, mem, gpus
        # (grid per time, not grid_all: a cycle's start gives one or two, where numpy costs more)
        rows[:, 1] = np.repeat([self.grid(end) for end in ends], per_job)
        return rows

    def add(self, rows: np.ndarray) -> None:
        """Each row's release into its node's row of the table, in time order (a job without
        a time limit never gives anything back: it has no release)."""
        rows = rows.tolist()
        self._changed(row[0] for row in rows)
        for node, when, *amounts in rows:
            if when >= NEVER:
                continue
            times = self.times[node]
            used = int(np.searchsorted(times, NEVER))  # columns in use, column 0 included
            if used == len(times):  # the row is full: one more column for every node
                self._widen()
                times = self.times[node]
            at = int(np.searchsorted(times[:used], when, side="right"))
            times[at + 1:used + 1] = times[at:used].copy()
            times[at] = when
            for table, amount in zip((self.cpus, self.mem, self.gpus), amounts):
                row = table[node]
                row[at + 1:used + 1] = row[at:used] + amount
                row[at] = row[at - 1] + amount

    def _take_out(self, job_id: int) -> None:
        """A job's releases out of the table.  Of several releases at one time any may go:
        what all of them give back by then is the same."""
        rows = self._held.pop(job_id)[3].tolist()
        self._changed(row[0] for row in rows)
        for node, when, *amounts in rows:
            if when >= NEVER:
                continue
            times = self.times[node]
            used = int(np.searchsorted(times, NEVER))
            at = int(np.searchsorted(times[:used], when, side="left"))
            times[at:used - 1] = times[at + 1:used].copy()
            times[used - 1] = NEVER
            for table, amount in zip((self.cpus, self.mem, self.gpus), amounts):
                row = table[node]
                row[at:used - 1] = row[at + 1:used] - amount
                row[used - 1] = 0

    def settle(self, now: int) -> None:
        """Set column 0 to ``now``; a release at or before now (a job past its limit, being
        killed) is taken to come one step of the grid from now, and its row put in order."""
        self.times[:, 0] = now
        overdue = self.times[:, 1:] <= now
        late = np.flatnonzero(overdue.any(axis=1))
        if not len(late):
            return
        self._changed(late.tolist())
        times = self.times[late]
        times[:, 1:][overdue[late]] = now + self.resolution
        order = np.argsort(times, axis=1, kind="stable")
        self.times[late] = np.take_along_axis(times, order, axis=1)
        for table in (self.cpus, self.mem, self.gpus):
            each = np.diff(table[late], axis=1, prepend=0)  # what each release gives back
            table[late] = np.cumsum(np.take_along_axis(each, order, axis=1), axis=1)

    def _widen(self) -> None:
        never = np.full((self.nodes, 1), NEVER, dtype=np.int64)
        self.times = np.hstack([self.times, never])
        self.cpus, self.mem, self.gpus = (np.hstack([t, np.zeros_like(never)]) for t in (self.cpus, self.mem, self.gpus))

    def _fill(self, running: Mapping[int, Holding]) -> None:
        """The whole table at once, in a few array operations (the first cycle's)."""
        self.ready = ReadyColumns()
        rows = self._hold(list(running.items()))
        rows = rows[rows[:, 1] < NEVER]
        order = np.lexsort((rows[:, 1], rows[:, 0]))  # by node, then time
        node, when = rows[order, 0], rows[order, 1]
        per_node = np.bincount(node, minlength=self.nodes)
        first = np.cumsum(per_node) - per_node  # where each node's rows begin
        column = np.arange(len(node)) - first[node] + 1
        width = 1 + int(per_node.max(initial=0))
        self.times = np.full((self.nodes, width), NEVER, dtype=np.int64)
        self.times[:, 0] = -1
        self.times[node, column] = when
        tables = []
        for field in (2, 3, 4):
            values = rows[order, field]
            running_total = np.cumsum(values)
            before_node = running_total[first[node]] - values[first[node]]
            table = np.zeros((self.nodes, width), dtype=np.int64)
            table[node, column] = running_total - before_node
            tables.append(table)
        self.cpus, self.mem, self.gpus = tables


class ReadyColumns:
    """Per request, each node's first column of the table at which what is free now, plus what
    the releases up to that column give back, covers the request (-1: none does); the node's
    ready time is that column's time.  Kept with the table from one cycle to the next (the
    request's key names it: equal keys, equal requests), and worked out again only for the
    nodes whose rows changed (:meth:`mark`) or whose free resources did.

    A cycle's copy of the table marks the nodes it changes as its own: the next copy starts
    again from the kept table, so they are worked out again then."""

    def __init__(self) -> None:
        self._columns: dict = {}  # key -> columns by node
        self._requests: dict = {}  # key -> the request
        self._stale: set[int] = set()
        self._copy_changed: set[int] = set()  # by the current copy: not in the kept table
        self._free_seen: np.ndarray | None = None  # free resources (CPUs, memory, GPUs by node) at the last copy
        self._check_free = False
        self.copies = 0

    def mark(self, nodes: Iterable[int], by_copy: bool = False) -> None:
        nodes = set(nodes)
        self._stale |= nodes
        if by_copy:
            self._copy_changed |= nodes

    def new_copy(self) -> int:
        """A new cycle's copy is made: what the last one changed is stale, and free resources
        are compared with those last seen.  Returns the copy's number: only the latest may
        use the kept columns."""
        self._stale |= self._copy_changed
        self._copy_changed = set()
        self._check_free = True
        self.copies += 1
        return self.copies

    def columns(self, free, table: "Releases", requests: dict) -> dict:
        """The columns of each request in ``requests`` (key -> request), on ``table`` (the
        latest copy) with ``free`` resources now."""
        if self._check_free:
            seen, now = self._free_seen, np.stack((free.cpu, free.mem, free.gpu))
            if seen is None or seen.shape != now.shape:
                self._columns, self._requests = {}, {}
            else:
                self._stale.update(np.flatnonzero((seen != now).any(axis=0)).tolist())
            self._free_seen, self._check_free = now, False
        if self._stale and self._columns:
            nodes = np.fromiter(self._stale, dtype=np.int64, count=len(self._stale))
            for key, cols in zip(self._columns, _first_fits(free, table, list(self._requests.values()), nodes)):
                self._columns[key][nodes] = cols
        self._stale = set()
        new = {key: req for key, req in requests.items() if key not in self._columns}
        if new:
            self._columns.update(zip(new, _first_fits(free, table, list(new.values()))))
            self._requests.update(new)
        return {key: self._columns[key] for key in requests}


def _first_fits(free, table: Releases, requests: list, nodes: np.ndarray | None = None) -> np.ndarray:
    """Per request and node (of ``nodes``, or every node), the first column at which the
    request fits (-1: none), in one array operation."""
    every = len(table.times)

    def column(i: int) -> np.ndarray:  # requests by node (one column when none depends on the node)
        wanted = [req[i] for req in requests]
        if not all(np.isscalar(w) for w in wanted):
            wanted = [np.broadcast_to(w, every) if nodes is None else np.broadcast_to(w, every)[nodes] for w in wanted]
        return np.array(wanted).reshape(len(requests), -1, 1)
    at = slice(None) if nodes is None else nodes
    fits = ((free.cpu[at, None] + table.cpus[at] >= column(0))
            & (free.mem[at, None] + table.mem[at] >= column(1))
            & (free.gpu[at, None] + table.gpus[at] >= column(2)))
    return np.where(fits.any(axis=2), fits.argmax(axis=2), -1)
