"""The order a pass walks the queue in (Slurm's evaluation order): jobs in an advance
reservation first, then higher PriorityTier, higher priority, earlier submit time, lower id.

Sorting a long queue on every pass costs more than the pass itself, so a caller that runs many
passes (the controller, the simulator) keeps a :class:`QueueOrder`: it remembers the sorted
queue between passes, inserts new jobs in place, and sorts again only when
:meth:`ClusterState.reprioritized` says the order may have changed.  The memory is the
caller's; the state is only read.
"""

from __future__ import annotations

import bisect

from minislurm.core.job import Job
from minislurm.core.state import ClusterState


def sort_key(state: ClusterState):
    tiers = {name: p.priority_tier for name, p in state.partitions.items()}

    def key(j: Job):
        return (j.reservation is None, -tiers.get(j.partition, 0), -j.priority, j.submit_time, j.job_id)

    return key


class QueueOrder:
    """The sorted queue kept from one pass to the next (see the module's docstring)."""

    def __init__(self) -> None:
        self._epoch: int | None = None
        self._sorted: list[Job] = []
        self._ids: set[int] = set()

    def __call__(self, state: ClusterState) -> list[Job]:
        pending = state.pending
        key = sort_key(state)
        if self._epoch != state.order_epoch:
            self._epoch = state.order_epoch
            self._sorted = sorted(pending.values(), key=key)
            self._ids = set(pending)
        elif len(pending) > 0:
            for job_id in pending.keys() - self._ids:
                bisect.insort(self._sorted, pending[job_id], key=key)
                self._ids.add(job_id)
        order = [j for j in self._sorted if j.job_id in pending]
        if len(order) < len(self._sorted) // 2:  # forget jobs that left the queue
            self._sorted, self._ids = order, {j.job_id for j in order}
        return order


def priority_order(state: ClusterState, memory: QueueOrder | None = None) -> list[Job]:
    """The pending jobs in evaluation order; ``memory`` saves sorting again between passes."""
    return (memory or QueueOrder())(state)
