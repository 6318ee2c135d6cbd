"""The backfill plan (Slurm's "node space"): what every node can host over time.

Built at the start of a backfill cycle from the running jobs' *time limits* (not their real
run times, which no scheduler knows), on a grid of ``bf_resolution`` seconds.  Two things
make a node unable to take a job at time ``t``:

* running jobs still holding the resources the job needs (they release them at their ends);
* a promise made earlier in this cycle: a reservation for a higher-priority job.  As in
  Slurm, reservations take whole nodes.

:meth:`Plan.earliest_start` answers "when, at the earliest, can this job have ``k`` nodes for
its whole time limit?" with one vectorised sweep, so a cycle over hundreds of jobs on
thousands of nodes stays fast.  Times are whole seconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from minislurm.core.job import Job
from minislurm.sched.select.cons_tres import FreeResources, Request

NEVER = (1 << 40) - 1  # "no time": later than any real time, and fits in a 40-bit key
_SHIFT = 40


class Plan:
    def __init__(self, free: FreeResources, running: Iterable[Job], now: float, resolution: float):
        self.free = free
        self.now = int(now)
        self.res = max(1, int(resolution))
        n = len(free.cpu)
        releases: list[list[tuple[int, int, int, int]]] = [[] for _ in range(n)]
        for job in running:
            end = self.grid(job.start_time + job.time_limit)
            if end <= self.now:  # overdue: being killed, frees soon
                end = self.now + self.res
            a = job.alloc
            for node, c, m, g in zip(a.nodes, a.cpus, a.mem, a.gpus):
                releases[node].append((end, c, m, len(g)))
        self._releases = releases
        self._build()
        # Reservations, sorted by key = node << 40 | start; ends run in the same order per node.
        self.r_key = self.r_node = self.r_start = self.r_end = np.zeros(0, dtype=np.int64)

    def grid(self, t: float) -> int:
        """Round a time up onto the plan's grid; infinite stays NEVER."""
        if t == math.inf or t >= NEVER:
            return NEVER
        return int(math.ceil(t / self.res) * self.res)

    def _build(self) -> None:
        """Per node: the release times in order, and what is free after each release."""
        width = 1 + max((len(r) for r in self._releases), default=0)
        n = len(self._releases)
        self.t = np.full((n, width), NEVER, dtype=np.int64)
        self.t[:, 0] = self.now
        self.cum = np.zeros((3, n, width), dtype=np.int64)
        for node, rel in enumerate(self._releases):
            if not rel:
                continue
            rel.sort()
            c = m = g = 0
            for k, (end, dc, dm, dg) in enumerate(rel, 1):
                c, m, g = c + dc, m + dm, g + dg
                self.t[node, k] = end
                self.cum[0, node, k], self.cum[1, node, k], self.cum[2, node, k] = c, m, g
        self._cache: dict = {}

    def ready_times(self, key, req: Request) -> np.ndarray:
        """For each node, the first time running jobs leave room for ``req`` (NEVER if never)."""
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        cpu, mem, gpu = (np.asarray(x)[..., None] if isinstance(x, np.ndarray) else x for x in req)
        ok = ((self.free.cpu[:, None] + self.cum[0] >= cpu)
              & (self.free.mem[:, None] + self.cum[1] >= mem)
              & (self.free.gpu[:, None] + self.cum[2] >= gpu))
        first = ok.argmax(axis=1)
        ready = np.where(ok.any(axis=1), self.t[np.arange(len(first)), first], NEVER)
        self._cache[key] = ready
        return ready

    def add_running(self, job: Job) -> None:
        """A job started now in this cycle: it holds its resources until its limit."""
        end = self.grid(self.now + job.time_limit)
        a = job.alloc
        for node, c, m, g in zip(a.nodes, a.cpus, a.mem, a.gpus):
            self._releases[node].append((end, c, m, len(g)))
        self._build()

    # -- reservations -------------------------------------------------------------------
    def reserve(self, nodes: Iterable[int], start: int, end: int) -> None:
        """Promise whole nodes for [start, end)."""
        keys = np.sort(np.fromiter(nodes, dtype=np.int64) << _SHIFT | start)
        at = np.searchsorted(self.r_key, keys)
        self.r_key = np.insert(self.r_key, at, keys)
        self.r_end = np.insert(self.r_end, at, min(end, NEVER))
        self.r_node, self.r_start = self.r_key >> _SHIFT, self.r_key & NEVER

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
        if not len(self.r_key):
            times = ready[nodes]
            start = int(np.partition(times, k - 1)[k - 1])
            return start, nodes[times <= start][:k]
        c_node, c_time, last = self._windows(ready, nodes, duration)
        if len(c_node) < k:
            return None
        if k == 1:
            start = int(c_time.min())
            return start, c_node[c_time == start].min(keepdims=True)
        order, times, count = self._sweep(c_time, last)
        hit = np.flatnonzero(count >= k)
        if not len(hit):
            return None
        start = int(times[order[hit[0]]])
        inside = (c_time <= start) & (last >= start)
        chosen = np.unique(c_node[inside])[:k]
        return start, chosen

    def _windows(self, ready: np.ndarray, nodes: np.ndarray,
                 duration: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each usable window as (node, first start, last start): a job of ``duration`` may
        start on ``node`` at any time in [first, last] without touching a promise.  A node's
        windows never overlap, since promises on one node never do."""
        if not len(self.r_key):
            return nodes, ready[nodes], np.full(len(nodes), NEVER, dtype=np.int64)
        # Candidate starts: when a node becomes ready, and when each promise on it ends.
        r_node, r_start = self.r_node, self.r_start
        later = (ready[r_node] < NEVER) & (self.r_end > ready[r_node]) & (self.r_end < NEVER)
        c_node = np.concatenate([nodes, r_node[later]])
        c_time = np.concatenate([ready[nodes], self.r_end[later]])
        # A candidate is blocked if a promise on its node overlaps [c, c + duration).
        base = c_node << _SHIFT
        stop = np.minimum(c_time + duration, NEVER)
        j = np.searchsorted(self.r_key, base | stop, side="left")
        prev = j - 1
        has_prev = (prev >= 0) & (r_node[np.maximum(prev, 0)] == c_node)
        blocked = has_prev & (self.r_end[np.maximum(prev, 0)] > c_time)
        # Otherwise it stays usable until the next promise on the node begins.
        jj = np.minimum(j, len(self.r_key) - 1)
        has_next = (j < len(self.r_key)) & (r_node[jj] == c_node)
        last = np.where(has_next, r_start[jj] - duration, NEVER)
        keep = ~blocked
        return c_node[keep], c_time[keep], last[keep]

    @staticmethod
    def _sweep(c_time: np.ndarray, last: np.ndarray, weight: np.ndarray | None = None):
        """Events in time order (+1 when a window opens, -1 just after it closes, closings
        first at equal times) and the running count of open windows (of ``weight``-ed ones
        only, when given).  Returns (order, event times, count)."""
        times = np.concatenate([c_time, last + 1])
        steps = np.concatenate([np.ones(len(c_time), np.int64), -np.ones(len(last), np.int64)])
        order = np.lexsort((steps, times))
        if weight is not None:
            steps = steps * np.concatenate([weight, weight])
        return order, times, np.cumsum(steps[order])

    def _earliest_with(self, ready: np.ndarray, k: int, duration: int,
                       required: np.ndarray) -> tuple[int, np.ndarray] | None:
        """:meth:`earliest_start` for a ``-w`` job: the first time every required node and
        ``k - len(required)`` others are open together."""
        r = len(required)
        if (ready[required] >= NEVER).any():
            return None
        c_node, c_time, last = self._windows(ready, np.flatnonzero(ready < NEVER), duration)
        is_req = np.zeros(len(ready), dtype=np.int64)
        is_req[required] = 1
        order, times, count = self._sweep(c_time, last)
        _, _, req_count = self._sweep(c_time, last, is_req[c_node])
        hit = np.flatnonzero((req_count >= r) & (count - req_count >= k - r))
        if not len(hit):
            return None
        start = int(times[order[hit[0]]])
        inside = (c_time <= start) & (last >= start)
        others = np.unique(c_node[inside & (is_req[c_node] == 0)])[: k - r]
        return start, np.sort(np.concatenate([required, others]))

    def room_now(self, usable: np.ndarray) -> bool:
        """Could any job at all start now?  Not if every usable node is full or promised."""
        open_ = usable & (self.free.cpu > 0)
        if len(self.r_key):
            now_promised = (self.r_start <= self.now) & (self.r_end > self.now)
            open_[self.r_node[now_promised]] = False
        return bool(open_.any())
