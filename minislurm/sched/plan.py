"""The backfill plan (Slurm's "node space"): what every node can host over time.

Built at the start of a backfill cycle from the running jobs' *time limits* (not their real
run times, which no scheduler knows), on a grid of ``bf_resolution`` seconds
(:class:`~minislurm.sched.releases.Releases`).  Two things make a node unable to take a job
at time ``t``:

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

import heapq
from collections.abc import Iterable

import numpy as np

from minislurm.sched.promises import NEVER, Promises
from minislurm.sched.releases import Holding, Releases
from minislurm.sched.select.cons_tres import FreeResources, Request


class Plan:
    def __init__(self, free: FreeResources, releases: Releases, now: float):
        self.free = free
        self.now = int(now)
        self.table = releases.copy()  # this cycle's: starts go into it, the kept one is not touched
        self.table.settle(self.now)
        self.grid, self.grid_all = self.table.grid, self.table.grid_all
        self.promises = Promises()
        self._ready_cache: dict = {}
        self._allowed_ready_cache: dict = {}  # (request key, nodes allowed) -> ready_on's answer
        self.releases_version = 0  # changes with every start
        self._room_checked: tuple | None = None  # ((releases_version, floor, shortest), nodes open now, any)
        self.one_node: OneNodeStarts | None = None  # see keep_one_node_starts

    def keep_one_node_starts(self) -> None:
        """Answer a one-node job's earliest start from :class:`OneNodeStarts` (the same answer,
        for less: most jobs of a cycle ask what an earlier one asked, a few promises ago)."""
        self.one_node = OneNodeStarts(self)

    def ready_times(self, key, req: Request) -> np.ndarray:
        """For each node, the first time running jobs leave room for ``req`` (NEVER if never);
        ``key`` names the request (equal keys, equal requests) for reuse within the cycle."""
        hit = self._ready_cache.get(key)
        if hit is None:
            self.ready_times_many([(key, req)])
            hit = self._ready_cache[key]
        return hit

    def ready_on(self, key, req: Request, allowed: np.ndarray) -> np.ndarray:
        """:meth:`ready_times` with NEVER on the nodes not ``allowed``: what
        :meth:`earliest_start` is given.  Kept until the next start, as most jobs of a cycle
        ask what an earlier one asked, on the same nodes (the answer must not be changed)."""
        cache_key = (key, allowed.tobytes())
        hit = self._allowed_ready_cache.get(cache_key)
        if hit is None:
            hit = self._allowed_ready_cache[cache_key] = np.where(allowed, self.ready_times(key, req), NEVER)
        return hit

    def ready_times_many(self, requests: list[tuple]) -> None:
        """:meth:`ready_times` for many ``(key, req)`` pairs at once; the answers are kept, for
        :meth:`ready_times` to return (each node's first column that fits is kept with the
        table: :class:`~minislurm.sched.releases.ReadyColumns`)."""
        todo = {key: req for key, req in requests if key not in self._ready_cache}
        if not todo:
            return
        columns = self.table.first_fits(self.free, todo)
        times = self.table.times[np.arange(len(self.table.times)), columns]  # -1: the last column, never read
        self._ready_cache.update(zip(todo, np.where(columns >= 0, times, NEVER)))

    def add_running(self, job: Holding) -> None:
        """A job started in this cycle (its ``start_time`` the plan's now): it holds its
        resources until its limit."""
        self.table.add(self.table.rows([job]))
        self._ready_cache, self._allowed_ready_cache = {}, {}
        self.releases_version += 1
        if self.one_node is not None:
            self.one_node = OneNodeStarts(self)

    def reserve(self, nodes: Iterable[int], start: int, end: int) -> None:
        """Promise whole nodes for [start, end)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        self.promises.add(nodes, start, end)
        checked = self._room_checked
        if checked is not None and checked[2] and start < self.now + checked[0][2]:  # too soon: not open now
            checked[1][nodes] = False
            self._room_checked = checked[:2] + (bool(checked[1].any()),)

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
        if k == 1 and self.one_node is not None:
            return self.one_node.earliest_start(ready, duration)
        nodes = (ready < NEVER).nonzero()[0]
        if len(nodes) < k:
            return None
        if not len(self.promises):
            times = ready[nodes]
            start = int(np.partition(times, k - 1)[k - 1])
            return start, nodes[times <= start][:k]
        if k == 1:  # the earliest window of any node: when each closes does not matter
            node, first = self._windows(ready, nodes, duration, closes=False)
            if not len(node):
                return None
            start = int(first.min())
            return start, node[first == start].min(keepdims=True)
        node, first, last = self._windows(ready, nodes, duration)
        if len(node) < k:
            return None
        order, times, count = self._sweep(first, last)
        hit = np.flatnonzero(count >= k)
        if not len(hit):
            return None
        start = int(times[order[hit[0]]])
        inside = (first <= start) & (last >= start)
        return start, np.unique(node[inside])[:k]

    def start_now(self, open_now: np.ndarray, k: int, duration: int) -> np.ndarray | None:
        """The nodes :meth:`earliest_start` would choose if its answer is "now", else None.
        ``open_now``: the nodes the job may use that have its request free now (those whose
        ready time is now: the running jobs' releases all come later).

        A job that gets no promise when it cannot start (under EASY, once its partition has
        one) needs only this yes-or-no, and it costs far less: no ready times are worked out,
        and only the nodes open now are checked against the promises on them."""
        nodes = open_now.nonzero()[0]
        p = self.promises
        if len(nodes) >= k and len(p):
            # Blocked: the last promise on the node beginning before the job would end, ends after now.
            key, on, _, ends = p.padded
            before = key.searchsorted(nodes << 40 | min(self.now + duration, NEVER)) - 1
            nodes = nodes[(on[before] != nodes) | (ends[before] <= self.now)]
        return nodes[:k] if len(nodes) >= k else None

    def _windows(self, ready: np.ndarray, nodes: np.ndarray, duration: int,
                 closes: bool = True) -> tuple[np.ndarray, ...]:
        """Each usable window as (node, first start, last start): a job of ``duration`` may
        start on ``node`` at any time in [first, last] without touching a promise.  A node's
        windows never overlap, since promises on one node never do.  ``closes=False``: only
        (node, first start)."""
        p = self.promises
        if not len(p):
            never = np.full(len(nodes), NEVER, dtype=np.int64)
            return (nodes, ready[nodes], never) if closes else (nodes, ready[nodes])
        # Candidate starts: when a node becomes ready, and when each promise on it ends.
        later = (p.end > ready[p.node]) & (p.end < NEVER)
        node = np.concatenate((nodes, p.node[later]))
        first = np.concatenate((ready[nodes], p.end[later]))
        # A candidate is blocked if a promise on its node overlaps [first, first + duration);
        # otherwise it stays usable until the next promise on the node begins.
        key, on, begins, ends = p.padded
        after = key.searchsorted(node << 40 | np.minimum(first + duration, NEVER))
        keep = (on[after - 1] != node) | (ends[after - 1] <= first)
        if not closes:
            return node[keep], first[keep]
        last = np.where(on[after] == node, begins[after] - duration, NEVER)
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

    def room_now(self, usable: np.ndarray, floor: tuple[int, int, int] = (0, 0, 0), shortest: int = 1) -> bool:
        """Could any job at all start now?  Not if every usable node has less than ``floor``
        (the least CPUs, memory and GPUs any queued job asks of a node) free, or is promised
        before ``shortest`` seconds from now (the shortest time limit of any queued job, on
        the grid: each would still be running then).  The nodes open now are kept until the
        next start; a promise that begins that soon closes its nodes."""
        key = (self.releases_version, floor, shortest)
        if self._room_checked is None or self._room_checked[0] != key:
            open_ = self.free.open_now(usable, floor)
            open_[self.promises.held_within(self.now, self.now + shortest)] = False
            self._room_checked = (key, open_, bool(open_.any()))
        return self._room_checked[2]


_PAST = (NEVER, NEVER)  # past the last node in order of ready time


class OneNodeStarts:
    """A one-node job's earliest start, found by looking at as few nodes as possible.

    A node's first start for a job (:meth:`Promises.first_fit`) is never before its ready time,
    so the nodes are looked at in order of ready time, each one's first start kept in a heap,
    until the heap's least is no later than the next node's ready time.  What was found is kept
    per ``ready`` and duration until a job starts (which changes the ready times); a promise
    only makes its node's kept start stale, and a stale start is worked out again when it
    comes to the top.  Ties go to the lowest-numbered node: the answer is the one of
    :meth:`Plan.earliest_start`'s search over every node."""

    def __init__(self, plan: Plan):
        self.promises = plan.promises
        # ready -> (the nodes in order of ready time, their ready times, every node's ready time)
        self._order: dict[bytes, tuple[list[int], list[int], list[int]]] = {}
        self._searches: dict[tuple[bytes, int], list] = {}  # (ready, duration) -> [next in order, heap]
        self._single = np.arange(len(plan.table.times)).reshape(-1, 1)  # [n]: the array [n], made once

    def earliest_start(self, ready: np.ndarray, duration: int) -> tuple[int, np.ndarray] | None:
        key = ready.tobytes()
        order = self._order.get(key)
        if order is None:
            nodes = ready.argsort(kind="stable")
            nodes = nodes[: ready[nodes].searchsorted(NEVER)]
            order = self._order[key] = (nodes.tolist(), ready[nodes].tolist(), ready.tolist())
        search = self._searches.get((key, duration))
        if search is None:
            search = self._searches[key, duration] = [0, []]
        nodes, times, ready_at = order
        at, heap = search
        on, first_fit = self.promises.on, self.promises.first_fit
        while True:  # heap entries: (first start, node, promises on the node when worked out)
            ahead = (times[at], nodes[at]) if at < len(nodes) else _PAST
            if heap and heap[0] < ahead:  # (no node is both in the heap and ahead)
                start, node, seen = heap[0]
                promised = len(on.get(node, ()))
                if seen == promised:
                    break  # up to date, and no node can start earlier
                heapq.heapreplace(heap, (first_fit(node, ready_at[node], duration), node, promised))
            elif ahead is _PAST:
                start = NEVER
                break
            else:
                node = ahead[1]
                heapq.heappush(heap, (first_fit(node, ahead[0], duration), node, len(on.get(node, ()))))
                at += 1
        search[0] = at
        return None if start >= NEVER else (start, self._single[node])
