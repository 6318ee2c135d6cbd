"""The backfill plan (Slurm's "node space"): what every node can host over time.

Built at the start of a backfill cycle from the running jobs' *time limits* (not their real
run times, which no scheduler knows), on a grid of ``bf_resolution`` seconds.  Two things
make a node unable to take a job at time ``t``:

* running jobs still holding the resources the job needs (they release them at their ends);
* a promise made earlier in this cycle: a reservation for a higher-priority job.  As in
  Slurm, promises take whole nodes.

The plan changes in two ways during a cycle, each an update of what it holds, never a rebuild
from the jobs: :meth:`add_running` (a job backfilled now) and :meth:`reserve` (a promise).
Both only ever take room, so within a cycle a job's earliest start can only move later.

:meth:`Plan.earliest_start` answers "when, at the earliest, can this job have ``k`` nodes for
its whole time limit?" with one vectorised sweep, so a cycle over hundreds of jobs on
thousands of nodes stays fast.  Times are whole seconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Protocol

import numpy as np

from minislurm.core.job import Allocation
from minislurm.sched.promises import NEVER, Promises
from minislurm.sched.select.cons_tres import FreeResources, Request


class Holding(Protocol):
    """What the plan needs of a job that holds resources: when it started, for how long at
    most, and what it holds on which nodes."""

    start_time: float
    time_limit: float
    alloc: Allocation


class Plan:
    def __init__(self, free: FreeResources, running: Iterable[Holding], now: float, resolution: float):
        self.free = free
        self.now = int(now)
        self.resolution = max(1, int(resolution))
        self._releases = _releases(running, self.grid_all)
        self._index()
        self.promises = Promises()
        self._room_checked: tuple | None = None  # ((version, floor), answer) of the last room_now

    def grid(self, t: float) -> int:
        """Round a time up onto the plan's grid; infinite stays NEVER."""
        if t == math.inf or t >= NEVER:
            return NEVER
        return int(math.ceil(t / self.resolution) * self.resolution)

    def grid_all(self, times: np.ndarray) -> np.ndarray:
        """:meth:`grid` for many times at once (the same answers)."""
        with np.errstate(invalid="ignore"):
            on_grid = np.ceil(times / self.resolution) * self.resolution
        return np.where(times >= NEVER, NEVER, on_grid).astype(np.int64)

    def _index(self) -> None:
        """Per node, the release times in order (``release_times[node, 0]`` is now) and what
        is free in addition after each (``freed_cpus``, ``freed_mem``, ``freed_gpus``)."""
        nodes = len(self.free.cpu)
        rows = self._releases.copy()
        overdue = rows[:, 1] <= self.now  # being killed: frees soon
        rows[overdue, 1] = self.now + self.resolution
        order = np.lexsort((rows[:, 1], rows[:, 0]))  # by node, then time
        node, when = rows[order, 0], rows[order, 1]
        per_node = np.bincount(node, minlength=nodes)
        first = np.cumsum(per_node) - per_node  # where each node's rows begin
        column = np.arange(len(node)) - first[node] + 1
        width = 1 + int(per_node.max(initial=0))
        self.release_times = np.full((nodes, width), NEVER, dtype=np.int64)
        self.release_times[:, 0] = self.now
        self.release_times[node, column] = when
        freed = []
        for field in (2, 3, 4):
            values = rows[order, field]
            running_total = np.cumsum(values)
            before_node = running_total[first[node]] - values[first[node]]
            table = np.zeros((nodes, width), dtype=np.int64)
            table[node, column] = running_total - before_node
            freed.append(table)
        self.freed_cpus, self.freed_mem, self.freed_gpus = freed
        self._ready_cache: dict = {}
        self.version = getattr(self, "version", 0) + 1  # changes with every start and promise
        self.releases_version = self.version  # changes with every start

    def ready_times(self, key, req: Request) -> np.ndarray:
        """For each node, the first time running jobs leave room for ``req`` (NEVER if never);
        ``key`` names the request (equal keys, equal requests) for reuse within the cycle."""
        hit = self._ready_cache.get(key)
        if hit is None:
            self.ready_times_many([(key, req)])
            hit = self._ready_cache[key]
        return hit

    def ready_times_many(self, requests: list[tuple]) -> None:
        """:meth:`ready_times` for many ``(key, req)`` pairs in one array operation; the answers
        are kept, for :meth:`ready_times` to return."""
        todo = {key: req for key, req in requests if key not in self._ready_cache}
        if not todo:
            return
        n = len(self.free.cpu)

        def column(i: int) -> np.ndarray:  # requests by node (one column when none depends on the node)
            wanted = [req[i] for req in todo.values()]
            if not all(np.isscalar(w) for w in wanted):
                wanted = [np.broadcast_to(w, n) for w in wanted]
            return np.array(wanted).reshape(len(todo), -1, 1)
        cpu, mem, gpu = column(0), column(1), column(2)
        fits = ((self.free.cpu[:, None] + self.freed_cpus >= cpu)
                & (self.free.mem[:, None] + self.freed_mem >= mem)
                & (self.free.gpu[:, None] + self.freed_gpus >= gpu))
        ready = np.where(fits.any(axis=2), self.release_times[np.arange(n), fits.argmax(axis=2)], NEVER)
        self._ready_cache.update(zip(todo, ready))

    def add_running(self, job: Holding) -> None:
        """A job started in this cycle (its ``start_time`` the plan's now): it holds its
        resources until its limit.  Only its nodes' rows of the index change: each gets its
        release time in order, and what it frees added from there on."""
        rows = _releases([job], self.grid_all)
        for node, when, *amounts in rows.tolist():
            times = self.release_times[node]
            if times[-1] < NEVER:  # the row is full: one more column for every node
                self._widen()
                times = self.release_times[node]
            at = int(np.searchsorted(times, when, side="right"))
            times[at + 1:] = times[at:-1].copy()
            times[at] = when
            for table, amount in zip((self.freed_cpus, self.freed_mem, self.freed_gpus), amounts):
                row = table[node]
                row[at + 1:] = row[at:-1] + amount
                row[at] = row[at - 1] + amount
        self._ready_cache = {}
        self.version += 1
        self.releases_version = self.version

    def _widen(self) -> None:
        never = np.full((len(self.release_times), 1), NEVER, dtype=np.int64)
        self.release_times = np.hstack([self.release_times, never])
        self.freed_cpus, self.freed_mem, self.freed_gpus = (
            np.hstack([t, np.zeros_like(never)]) for t in (self.freed_cpus, self.freed_mem, self.freed_gpus))

    def reserve(self, nodes: Iterable[int], start: int, end: int) -> None:
        """Promise whole nodes for [start, end)."""
        self.promises.add(nodes, start, end)
        self.version += 1

    # -- when can a job start ---------------------------------------------------------------
    def earliest_start(self, ready: np.ndarray, k: int, duration: int,
                       required: np.ndarray | None = None) -> tuple[int, np.ndarray] | None:
        """The first time ``k`` nodes are each ready and unpromised for ``duration`` seconds.

        ``ready`` comes from :meth:`ready_times`, with NEVER for nodes the job may not use.
        ``required`` (``-w`` node indices) must all be among the ``k``.  Returns the start
        and the chosen node indices (lowest-numbered first), or None.
        """
        if required is not None and len(required):
            return self._earliest_with(ready, max(k, len(required)), duration, required)
        nodes = np.flatnonzero(ready < NEVER)
        if len(nodes) < k:
            return None
        if not len(self.promises):
            times = ready[nodes]
            start = int(np.partition(times, k - 1)[k - 1])
            return start, nodes[times <= start][:k]
        node, first, last = self._windows(ready, nodes, duration)
        if len(node) < k:
            return None
        if k == 1:
            start = int(first.min())
            return start, node[first == start].min(keepdims=True)
        order, times, count = self._sweep(first, last)
        hit = np.flatnonzero(count >= k)
        if not len(hit):
            return None
        start = int(times[order[hit[0]]])
        inside = (first <= start) & (last >= start)
        return start, np.unique(node[inside])[:k]

    def start_now(self, ready: np.ndarray, k: int, duration: int) -> np.ndarray | None:
        """The nodes :meth:`earliest_start` would choose if its answer is "now", else None.

        A job that gets no promise when it cannot start (under EASY, once its partition has
        one) needs only this yes-or-no, and it costs far less: only the nodes ready now are
        checked against the promises on them."""
        nodes = np.flatnonzero(ready <= self.now)
        p = self.promises
        if len(nodes) >= k and len(p):
            # Blocked: the last promise on the node beginning before the job would end, ends after now.
            after = np.searchsorted(p.key, nodes << 40 | min(self.now + duration, NEVER), side="left")
            before = np.maximum(after - 1, 0)
            blocked = (after >= 1) & (p.node[before] == nodes) & (p.end[before] > self.now)
            nodes = nodes[~blocked]
        return nodes[:k] if len(nodes) >= k else None

    def _windows(self, ready: np.ndarray, nodes: np.ndarray,
                 duration: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each usable window as (node, first start, last start): a job of ``duration`` may
        start on ``node`` at any time in [first, last] without touching a promise.  A node's
        windows never overlap, since promises on one node never do."""
        p = self.promises
        if not len(p):
            return nodes, ready[nodes], np.full(len(nodes), NEVER, dtype=np.int64)
        # Candidate starts: when a node becomes ready, and when each promise on it ends.
        later = (ready[p.node] < NEVER) & (p.end > ready[p.node]) & (p.end < NEVER)
        node = np.concatenate([nodes, p.node[later]])
        first = np.concatenate([ready[nodes], p.end[later]])
        # A candidate is blocked if a promise on its node overlaps [first, first + duration).
        after = np.searchsorted(p.key, node << 40 | np.minimum(first + duration, NEVER), side="left")
        before = np.maximum(after - 1, 0)
        blocked = (after >= 1) & (p.node[before] == node) & (p.end[before] > first)
        # Otherwise it stays usable until the next promise on the node begins.
        next_ = np.minimum(after, len(p) - 1)
        has_next = (after < len(p)) & (p.node[next_] == node)
        last = np.where(has_next, p.start[next_] - duration, NEVER)
        keep = ~blocked
        return node[keep], first[keep], last[keep]

    @staticmethod
    def _sweep(first: np.ndarray, last: np.ndarray, weight: np.ndarray | None = None):
        """Events in time order (+1 when a window opens, -1 just after it closes, closings
        first at equal times) and the running count of open windows (of ``weight``-ed ones
        only, when given).  Returns (order, event times, count)."""
        times = np.concatenate([first, last + 1])
        steps = np.concatenate([np.ones(len(first), np.int64), -np.ones(len(last), np.int64)])
        order = np.lexsort((steps, times))
        if weight is not None:
            steps = steps * np.concatenate([weight, weight])
        return order, times, np.cumsum(steps[order])

    def _earliest_with(self, ready: np.ndarray, k: int, duration: int,
                       required: np.ndarray) -> tuple[int, np.ndarray] | None:
        """:meth:`earliest_start` for a ``-w`` job: the first time every required node and
        ``k - len(required)`` others are open together."""
        if (ready[required] >= NEVER).any():
            return None
        node, first, last = self._windows(ready, np.flatnonzero(ready < NEVER), duration)
        is_required = np.zeros(len(ready), dtype=np.int64)
        is_required[required] = 1
        order, times, count = self._sweep(first, last)
        _, _, required_count = self._sweep(first, last, is_required[node])
        hit = np.flatnonzero((required_count >= len(required)) & (count - required_count >= k - len(required)))
        if not len(hit):
            return None
        start = int(times[order[hit[0]]])
        inside = (first <= start) & (last >= start)
        others = np.unique(node[inside & (is_required[node] == 0)])[: k - len(required)]
        return start, np.sort(np.concatenate([required, others]))

    def room_now(self, usable: np.ndarray, floor: tuple[int, int, int] = (0, 0, 0)) -> bool:
        """Could any job at all start now?  Not if every usable node is promised now or has
        less than ``floor`` (the least CPUs, memory and GPUs any queued job asks of a node)
        free.  Asked again with nothing changed (no start, no promise), it answers as before."""
        if self._room_checked is not None and self._room_checked[0] == (self.version, floor):
            return self._room_checked[1]
        open_ = self.free.open_now(usable, floor)
        open_[self.promises.held_at(self.now)] = False
        answer = bool(open_.any())
        self._room_checked = ((self.version, floor), answer)
        return answer


def _releases(jobs: Iterable[Holding], grid_all) -> np.ndarray:
    """One row per node a job holds: (node, the time it gives it back, cpus, memory, gpus);
    the time is the job's start plus its limit, put on the grid by ``grid_all``.  Built
    from plain lists and converted once: a cycle may see hundreds of running jobs."""
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
    rows[:, 1] = np.repeat(grid_all(np.array(ends, dtype=np.float64)), per_job)
    return rows
