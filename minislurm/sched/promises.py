"""The promises of a backfill cycle: whole nodes held for a higher-priority job from its
planned start for its whole time limit (:class:`~minislurm.sched.plan.Plan` makes them), kept
in one sorted array so that "what is promised on node n around time t" is a binary search."""

from __future__ import annotations

import bisect

import numpy as np

NEVER = (1 << 40) - 1  # "no time": later than any real time, and below 2**40 (see Promises)
LAST = np.iinfo(np.int64).max  # the key of the entry past the last promise (node 2**23 - 1)


class Promises:
    """Whole nodes promised for [start, end), sorted by node and then start.

    ``key`` is ``node * 2**40 + start`` (``node << 40 | start``; every time is below 2**40): one
    sorted integer per promise, so "the promises on node n around time t" is a binary search.
    Promises on one node never overlap.  A cycle makes promises one at a time and reads them
    less often, so they are kept in plain sorted lists, as arrays only when read; and per
    node, as ``(start, end)`` lists (:meth:`first_fit` walks one node's)."""

    def __init__(self) -> None:
        self._keys: list[int] = []  # sorted
        self._ends: list[int] = []  # in the keys' order
        self._arrays: tuple | None = None  # (padded, unpadded), until the next promise
        self.on: dict[int, list[tuple[int, int]]] = {}  # node -> its promises, by start

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, nodes: np.ndarray, start: int, end: int) -> None:
        start, end = int(start), min(int(end), NEVER)
        for node in nodes.tolist():
            key = node << 40 | start
            at = bisect.bisect_left(self._keys, key)
            self._keys.insert(at, key)
            self._ends.insert(at, end)
            bisect.insort(self.on.setdefault(node, []), (start, end))
        self._arrays = None

    def _read(self) -> tuple:
        """``padded``: the arrays with one more entry past the last promise, on no real node,
        so that a search may look one entry before or after where it lands without a bounds
        check (one before the first is that last one); ``key``, ``node``, ``start`` and
        ``end`` leave it out."""
        if self._arrays is None:
            key = np.array(self._keys + [LAST], dtype=np.int64)
            padded = key, key >> 40, key & NEVER, np.array(self._ends + [NEVER], dtype=np.int64)
            self._arrays = padded, tuple(a[:-1] for a in padded)
        return self._arrays

    @property
    def padded(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return self._read()[0]

    @property
    def key(self) -> np.ndarray:
        return self._read()[1][0]

    @property
    def node(self) -> np.ndarray:
        return self._read()[1][1]

    @property
    def start(self) -> np.ndarray:
        return self._read()[1][2]

    @property
    def end(self) -> np.ndarray:
        return self._read()[1][3]

    def first_fit(self, node: int, t: int, duration: int) -> int:
        """The first time from ``t`` on that ``node`` has no promise for ``duration`` seconds
        (NEVER if none): ``t`` itself, or the end of a promise."""
        for start, end in self.on.get(node, ()):
            if end <= t:
                continue
            if start >= min(t + duration, NEVER):
                break
            t = end  # the promise overlaps: try from its end
        return t

    def free_until(self, now: int, nodes: int) -> np.ndarray:
        """Per node, when the first promise not yet over at ``now`` begins (NEVER if none)."""
        until = np.full(nodes, NEVER, dtype=np.int64)
        live = self.end > now
        node = self.node[live]
        first = np.flatnonzero(np.r_[True, node[1:] != node[:-1]]) if len(node) else node
        until[node[first]] = self.start[live][first]  # sorted by node, then start
        return until

    def first_unpromised(self, times: np.ndarray) -> np.ndarray:
        """For ``times[..., n]`` on node n, the first time from then on that no promise on n
        covers (promises that follow one another without a gap are crossed together)."""
        if not len(self):
            return times
        nodes = np.broadcast_to(np.arange(times.shape[-1]), times.shape)
        clipped = np.minimum(times, NEVER)
        # Runs of promises end to end on one node: each promise's run ends where its run's last one does.
        joined = np.r_[False, (self.node[1:] == self.node[:-1]) & (self.start[1:] == self.end[:-1])]
        run = np.cumsum(~joined) - 1
        run_end = np.maximum.reduceat(self.end, np.flatnonzero(~joined))[run]
        at = self.key.searchsorted(nodes << 40 | clipped, side="right") - 1
        inside = (at >= 0) & (self.node[at] == nodes) & (self.end[at] > clipped)
        return np.where(inside, run_end[at], times)

    def held_within(self, start: int, end: int) -> np.ndarray:
        """The nodes promised at some time in [start, end)."""
        return self.node[(self.start < end) & (self.end > start)]
