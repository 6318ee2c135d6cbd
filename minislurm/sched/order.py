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
    """The sorted queue kept from one pass to the next (see the module's docstring).

    It also keeps :attr:`floor`, the least CPUs, memory and GPUs per node that any job it has
    held since the last sort asks for: no node with less than that free can start any of them
    (backfill stops there).  A job that leaves never raises it, so it stays a safe bound."""

    def __init__(self) -> None:
        self._epoch: int | None = None
        self._sorted: list[Job] = []
        self._ids: set[int] = set()
        self.floor: tuple[int, int, int] = (0, 0, 0)

    def __call__(self, state: ClusterState) -> list[Job]:
        pending = state.pending
        key = sort_key(state)
        if self._epoch != state.order_epoch:
            self._epoch = state.order_epoch
            self._sorted = sorted(pending.values(), key=key)
            self._ids = set(pending)
            self.floor = smallest_request(self._sorted)
            return list(self._sorted)
        gone, new = self._ids - pending.keys(), pending.keys() - self._ids
        for job_id in gone:
            self._remove(state.jobs.get(job_id), job_id, key)
        for job_id in new:
            bisect.insort(self._sorted, pending[job_id], key=key)
            self._ids.add(job_id)
        if new:
            self.floor = smallest_request([pending[j] for j in new], self.floor)
        return list(self._sorted)

    def _remove(self, job: Job | None, job_id: int, key) -> None:
        """Take a job that left the queue out of the sorted list: found by its key (unchanged
        while the order's epoch is), else by a walk."""
        self._ids.discard(job_id)
        if job is not None:
            at = bisect.bisect_left(self._sorted, key(job), key=key)
            if at < len(self._sorted) and self._sorted[at].job_id == job_id:
                del self._sorted[at]
                return
        for at, held in enumerate(self._sorted):
            if held.job_id == job_id:
                del self._sorted[at]
                return


def smallest_request(jobs, floor: tuple[int, int, int] | None = None) -> tuple[int, int, int]:
    """The least CPUs, memory and GPUs per node any of ``jobs`` asks for (each taken alone:
    a lower bound for every one of them), and no more than ``floor``.  A whole-node job
    (``--exclusive``, ``--mem=0``) counts as asking for nothing of what it takes whole."""
    cpu, mem, gpu = floor if floor is not None else (1 << 62, 1 << 62, 1 << 62)
    for job in jobs:
        shape = job.shape
        whole = job.exclusive
        cpu = min(cpu, 0 if whole else shape.cpus)
        mem = min(mem, 0 if whole or shape.mem == -1 else shape.mem)
        gpu = min(gpu, 0 if whole else shape.gpus)
    if not jobs and floor is None:
        return (0, 0, 0)
    return cpu, mem, gpu


def priority_order(state: ClusterState, memory: QueueOrder | None = None) -> list[Job]:
    """The pending jobs in evaluation order; ``memory`` saves sorting again between passes."""
    return (memory or QueueOrder())(state)
