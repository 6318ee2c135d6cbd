"""The working memory of one pass, shared by its two stages (:mod:`.schedule`'s main stage and
:mod:`.backfill`), which both depend on this module and not on each other: what is still free,
what was started, and the reason each job is given.  It lives for one pass and is thrown away."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from minislurm.core.job import Allocation, Job
from minislurm.core.state import ClusterState
from minislurm.core.states import Reason
from minislurm.sched import depend
from minislurm.sched.eligibility import blocked_reason, node_filter
from minislurm.sched.select.cons_tres import FreeResources, request


@dataclass(frozen=True, slots=True)
class Start:
    job_id: int
    alloc: Allocation
    backfilled: bool = False


class Pass:
    """The working memory of one pass: what is free, what was started, what each job is told."""

    def __init__(self, state: ClusterState, now: float):
        self.state, self.now = state, now
        self.free = FreeResources(state.nodes)
        self.starts: list[Start] = []
        self.started: dict[int, Job] = {}
        self.reason: dict[int, str] = {}
        self.array_started: dict[int, int] = {}  # array job id -> tasks started this pass
        self.reached = 0  # how far into the queue the main stage went (no reason is known beyond)
        self.tested = 0  # how many jobs backfill tested (its depth, as sdiag reports it)
        # Every dependency tested once, on the state before this pass starts anything.
        self.deps, self.settled = depend.sweep(state)
        self._bases: dict[str, np.ndarray] = {}

    def allowed(self, job: Job, honour_reservations: bool = True) -> np.ndarray:
        base = self._bases.get(job.partition)
        if base is None:
            base = self._bases[job.partition] = self.state.partition_mask(job.partition) & self.state.nodes.usable
        return node_filter(job, self.state, self.now, base, honour_reservations)

    def blocked(self, job: Job) -> str | None:
        """:func:`blocked_reason`, told what this pass already knows."""
        return blocked_reason(job, self.state, self.now, self.deps, self.array_started)

    def start(self, job: Job, alloc: Allocation, backfilled: bool) -> None:
        self.free.take(alloc)
        self.starts.append(Start(job.job_id, alloc, backfilled))
        self.started[job.job_id] = job
        if job.array_job_id is not None:
            self.array_started[job.array_job_id] = self.array_started.get(job.array_job_id, 0) + 1

    def why_not_now(self, job: Job, required: np.ndarray | None, withheld: np.ndarray | None) -> str:
        """``Resources``, unless only an advance reservation stands in the way."""
        return Reason.RESERVED_FOR_OTHER if self.reserved_for_other(job, required, withheld) else Reason.RESOURCES

    def reserved_for_other(self, job: Job, required: np.ndarray | None,
                           withheld: np.ndarray | None = None) -> bool:
        """Would the free nodes take the job now, but for advance reservations it may not use?
        (Slurm 22.05 then says ``ReqNodeNotAvail, May be reserved for other job``, also to a
        ``-w`` job and to one queued behind a higher-priority job.)"""
        if not self.state.reservations or job.reservation is not None:
            return False
        free = self.free.fits(request(job, self.state.nodes))
        if withheld is not None:
            free = free & ~withheld

        def enough(mask: np.ndarray) -> bool:
            return (required is None or mask[required].all()) and mask.sum() >= job.num_nodes
        return enough(free & self.allowed(job, False)) and not enough(free & self.allowed(job))


