"""The promises of a backfill cycle: whole nodes held for a higher-priority job from its
planned start for its whole time limit (:class:`~minislurm.sched.plan.Plan` makes them), kept
in one sorted array so that "what is promised on node n around time t" is a binary search."""

from __future__ import annotations

import numpy as np

NEVER = (1 << 40) - 1  # "no time": later than any real time, and below 2**40 (see Promises)
LAST = np.iinfo(np.int64).max  # the key of the entry past the last promise (node 2**23 - 1)


class Promises:
    """Whole nodes promised for [start, end), sorted by node and then start.

    ``key`` is ``node * 2**40 + start`` (``node << 40 | start``; every time is below 2**40): one
    sorted integer per promise, so "the promises on node n around time t" is a binary search.
    Promises on one node never overlap."""

    def __init__(self) -> None:
        self._keep(np.array([LAST], dtype=np.int64), np.array([NEVER], dtype=np.int64))

    def __len__(self) -> int:
        return len(self.key)

    def add(self, nodes: np.ndarray, start: int, end: int) -> None:
        keys = np.sort(nodes << 40 | start)
        key, _, _, ends = self.padded
        end = min(end, NEVER)
        if len(keys) == 1:  # most promises: one node, and joining arrays is cheaper than np.insert
            at = int(key.searchsorted(keys[0]))
            self._keep(np.concatenate((key[:at], keys, key[at:])), np.concatenate((ends[:at], (end,), ends[at:])))
        else:
            at = np.searchsorted(key, keys)
            self._keep(np.insert(key, at, keys), np.insert(ends, at, end))

    def _keep(self, key: np.ndarray, end: np.ndarray) -> None:
        """``padded``: the arrays with one more entry past the last promise, on no real node,
        so that a search may look one entry before or after where it lands without a bounds
        check (one before the first is that last one); ``key``, ``node``, ``start`` and
        ``end`` leave it out."""
        self.padded = key, key >> 40, key & NEVER, end
        self.key, self.node, self.start, self.end = (a[:-1] for a in self.padded)

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
        at = np.searchsorted(self.key, nodes << 40 | clipped, side="right") - 1
        inside = (at >= 0) & (self.node[at] == nodes) & (self.end[at] > clipped)
        return np.where(inside, run_end[at], times)

    def held_at(self, when: int) -> np.ndarray:
        """The nodes promised at ``when``."""
        return self.node[(self.start <= when) & (self.end > when)]
