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
    fills the rest of a row); ``given[r, node, c]``: how much of resource ``r`` (CPUs, memory,
    GPUs) the releases up to column ``c`` give back in all (0 past the last); ``used[node]``:
    how many of its columns are in use, column 0 included."""

    def __init__(self, nodes: int = 0, resolution: float = 1):
        self.nodes, self.resolution = nodes, max(1, int(resolution))
        self.times = np.full((nodes, 1), -1, dtype=np.int64)  # column 0: set to now by the plan
        self.given = np.zeros((3, nodes, 1), dtype=np.int64)
        self.used = [1] * nodes
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
        other.nodes, other.used = self.nodes, self.used.copy()
        other.times, other.given = self.times.copy(), self.given.copy()
        other.ready, other._a_copy = self.ready, self.ready.new_copy()
        return other

    def first_fits(self, free, requests: dict) -> np.ndarray:
        """Per request (key -> request; a row each, in their order), each node's first column
        at which what is ``free`` now and what the releases up to it give back cover it (-1:
        none): the kept :class:`ReadyColumns`, unless a later copy has taken them over."""
        if self._a_copy and self._a_copy != self.ready.copies:
            self.ready = ReadyColumns()
            self._a_copy = self.ready.new_copy()
        return self.ready.columns(free, self, requests)

    def _changed(self, nodes) -> None:
        self.ready.mark(nodes, by_copy=bool(self._a_copy))

    def rows(self, jobs: Iterable[Holding]) -> np.ndarray:
        """One row per node a job holds: (node, its release time on the grid, cpus, memory,
        gpus).  Built from plain lists and converted once: there may be thousands of jobs."""
        nodes: list[int] = []
        when: list[int] = []
        cpus: list[int] = []
        mem: list[int] = []
        gpus: list[int] = []
        for job in jobs:
            alloc = job.alloc
            nodes += alloc.nodes
            # (grid per time, not grid_all: a cycle's start gives one or two, where numpy costs more)
            when += [self.grid(job.start_time + job.time_limit)] * len(alloc.nodes)
            cpus += alloc.cpus
            mem += alloc.mem
            gpus += map(len, alloc.gpus)
        return np.array((nodes, when, cpus, mem, gpus), dtype=np.int64).T

    def add(self, rows: np.ndarray) -> None:
        """Each row's release into its node's row of the table, in time order (a job without
        a time limit never gives anything back: it has no release)."""
        nodes = rows[:, 0].tolist()
        self._changed(nodes)
        for node, when, amounts in zip(nodes, rows[:, 1].tolist(), rows[:, 2:, None]):
            if when >= NEVER:
                continue
            used = self.used[node]
            if used == self.times.shape[1]:  # the row is full: one more column for every node
                self._widen()
            times, given = self.times[node], self.given[:, node]
            at = int(times[:used].searchsorted(when, side="right"))
            times[at + 1:used + 1] = times[at:used].copy()
            times[at] = when
            given[:, at + 1:used + 1] = given[:, at:used] + amounts
            given[:, at:at + 1] = given[:, at - 1:at] + amounts
            self.used[node] = used + 1

    def _take_out(self, job_id: int) -> None:
        """A job's releases out of the table.  Of several releases at one time any may go:
        what all of them give back by then is the same."""
        rows = self._held.pop(job_id)[3]
        nodes = rows[:, 0].tolist()
        self._changed(nodes)
        for node, when, amounts in zip(nodes, rows[:, 1].tolist(), rows[:, 2:, None]):
            if when >= NEVER:
                continue
            used = self.used[node]
            times, given = self.times[node], self.given[:, node]
            at = int(times[:used].searchsorted(when, side="left"))
            times[at:used - 1] = times[at + 1:used].copy()
            times[used - 1] = NEVER
            given[:, at:used - 1] = given[:, at + 1:used] - amounts
            given[:, used - 1] = 0
            self.used[node] = used - 1

    def settle(self, now: int) -> None:
        """Set column 0 to ``now``; a release at or before now (a job past its limit, being
        killed) is taken to come one step of the grid from now, and its row put in order."""
        self.times[:, 0] = now
        if self.times.shape[1] == 1:
            return
        late = (self.times[:, 1] <= now).nonzero()[0]  # (a row is in order: its first release tells)
        if not len(late):
            return
        self._changed(late.tolist())
        times = self.times[late]
        times[:, 1:][times[:, 1:] <= now] = now + self.resolution
        order = np.argsort(times, axis=1, kind="stable")
        self.times[late] = np.take_along_axis(times, order, axis=1)
        each = np.diff(self.given[:, late], axis=2, prepend=0)  # what each release gives back
        self.given[:, late] = np.cumsum(np.take_along_axis(each, order[None], axis=2), axis=2)

    def _widen(self) -> None:
        self.times = np.hstack([self.times, np.full((self.nodes, 1), NEVER, dtype=np.int64)])
        self.given = np.concatenate([self.given, np.zeros((3, self.nodes, 1), dtype=np.int64)], axis=2)

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
        self.used = (per_node + 1).tolist()
        values = rows[order, 2:].T  # by resource
        running_total = np.cumsum(values, axis=1)
        before_node = running_total[:, first[node]] - values[:, first[node]]
        self.given = np.zeros((3, self.nodes, width), dtype=np.int64)
        self.given[:, node, column] = running_total - before_node


class ReadyColumns:
    """Per request, each node's first column of the table at which what is free now, plus what
    the releases up to that column give back, covers the request (-1: none does); the node's
    ready time is that column's time.  Kept with the table from one cycle to the next (the
    request's key names it: equal keys, equal requests), and worked out again only for the
    nodes whose rows changed (:meth:`mark`) or whose free resources did.

    A cycle's copy of the table marks the nodes it changes as its own: the next copy starts
    again from the kept table, so they are worked out again then."""

    def __init__(self) -> None:
        self._rows: dict = {}  # request key -> its row of _wanted and _first
        self._wanted: np.ndarray | None = None  # [request, resource, node]: what it asks of the node
        self._first: np.ndarray | None = None  # [request, node]: the first column that covers it
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

    def columns(self, free, table: "Releases", requests: dict) -> np.ndarray:
        """The columns of each request in ``requests`` (key -> request), a row each in their
        order, on ``table`` (the latest copy) with ``free`` resources now."""
        have = np.array((free.cpu, free.mem, free.gpu))
        if self._check_free:
            seen = self._free_seen
            if seen is None or seen.shape != have.shape:
                self._rows, self._wanted, self._first = {}, None, None
            else:
                self._stale.update((seen != have).any(axis=0).nonzero()[0].tolist())
            self._free_seen, self._check_free = have, False
        if self._stale and self._rows:
            nodes = np.fromiter(self._stale, dtype=np.int64, count=len(self._stale))
            self._first[:, nodes] = _first_fits(have[:, nodes], table.given[:, nodes], self._wanted[:, :, nodes])
        self._stale = set()
        new = [key for key in requests if key not in self._rows]
        if new:
            every = have.shape[1]
            wanted = np.array([[np.broadcast_to(amount, every) for amount in requests[key]] for key in new])
            first = _first_fits(have, table.given, wanted)
            self._rows.update(zip(new, range(len(self._rows), len(self._rows) + len(new))))
            self._wanted = wanted if self._wanted is None else np.concatenate([self._wanted, wanted])
            self._first = first if self._first is None else np.concatenate([self._first, first])
        return self._first[[self._rows[key] for key in requests]]


def _first_fits(have: np.ndarray, given: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Per request and node, the first column at which what the node ``have``s now
    ([resource, node]) and what the releases up to the column have ``given`` back
    ([resource, node, column]) cover what the request ``wanted`` ([request, resource, node]);
    -1 where none does.  One array operation for them all."""
    fits = ((have[:, :, None] + given)[None] >= wanted[..., None]).all(axis=1)  # [request, node, column]
    return np.where(fits.any(axis=2), fits.argmax(axis=2), -1)
