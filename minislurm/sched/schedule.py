"""One scheduling pass: the stages in order, and what the pass decided.

    sort (priority)  ->  filter (eligibility, node filter)  ->  place now (select/cons_tres)
                     ->  backfill: reserve for the blocked, start what fits in the gaps

The main stage is Slurm's main scheduler (sched/builtin): strict priority order, and once a
job in a partition cannot start, nothing behind it in that partition may start either
(it gets ``Priority``; the job that did not fit gets ``Resources``).  The backfill stage is
:mod:`minislurm.sched.backfill`.  The live controller runs a main-only pass on every event and
a full pass every ``bf_interval``; the simulator does the same on its clock.

Nothing here changes the :class:`~minislurm.core.state.ClusterState` it reads: the caller
applies :attr:`PassResult.starts` itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from minislurm.core.job import Allocation, Job
from minislurm.core.state import ClusterState
from minislurm.core.states import Reason
from minislurm.sched import backfill
from minislurm.sched.eligibility import blocked_reason, node_filter
from minislurm.sched.select.cons_tres import FreeResources, request


@dataclass(frozen=True, slots=True)
class Start:
    job_id: int
    alloc: Allocation
    backfilled: bool = False


class Reasons(Mapping):
    """The pending reason of every job pending at the pass.

    Reasons the pass worked out are stored; for jobs it never reached (deep in a blocked
    queue) the reason is derived on request, so a pass does not pay for a long queue.
    """

    def __init__(self, state: ClusterState, now: float, started: set[int]):
        self._state, self._now = state, now
        self._ids = [j for j in state.pending if j not in started]
        self.known: dict[int, str] = {}

    def __getitem__(self, job_id: int) -> str:
        if job_id in self.known:
            return self.known[job_id]
        job = self._state.jobs[job_id]
        if not job.pending:
            raise KeyError(job_id)
        return blocked_reason(job, self._state, self._now) or Reason.PRIORITY

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


@dataclass
class PassResult:
    now: float
    starts: list[Start]
    reasons: Reasons
    expected_start: dict[int, float] = field(default_factory=dict)  # what squeue --start shows
    planned_nodes: dict[int, tuple[int, ...]] = field(default_factory=dict)


def priority_order(state: ClusterState) -> list[Job]:
    """Slurm's evaluation order: reservation jobs, PriorityTier, priority, submit time, id.

    The sorted queue is kept between passes until :meth:`ClusterState.reprioritized` says
    the order may have changed; jobs that left the queue since are skipped.
    """
    cached = state.order_cache
    if cached is None or cached[0] != state.order_epoch:
        tiers = {name: p.priority_tier for name, p in state.partitions.items()}
        jobs = sorted(
            state.pending.values(),
            key=lambda j: (j.reservation is None, -tiers.get(j.partition, 0), -j.priority, j.submit_time, j.job_id),
        )
        state.order_cache = cached = (state.order_epoch, jobs)
    pending = state.pending
    order = [j for j in cached[1] if j.job_id in pending]
    if len(order) < len(cached[1]) // 2:
        state.order_cache = (state.order_epoch, order)
    return order


class Pass:
    """The working memory of one pass: what is free, what was started, what each job is told."""

    def __init__(self, state: ClusterState, now: float):
        self.state, self.now = state, now
        self.free = FreeResources(state.nodes)
        self.starts: list[Start] = []
        self.started: dict[int, Job] = {}
        self.reason: dict[int, str] = {}
        self._bases: dict[str, np.ndarray] = {}

    def allowed(self, job: Job, honour_reservations: bool = True) -> np.ndarray:
        base = self._bases.get(job.partition)
        if base is None:
            base = self._bases[job.partition] = self.state.partition_mask(job.partition) & self.state.nodes.usable
        return node_filter(job, self.state, self.now, base, honour_reservations)

    def start(self, job: Job, alloc: Allocation, backfilled: bool) -> None:
        self.free.take(alloc)
        self.starts.append(Start(job.job_id, alloc, backfilled))
        self.started[job.job_id] = job

    def why_not_now(self, job: Job) -> str:
        """``Resources``, unless only an advance reservation stands in the way."""
        if self.state.reservations and job.reservation is None:
            fits = self.free.fits(request(job, self.state.nodes)) & self.allowed(job, False)
            if fits.sum() >= job.num_nodes:
                return Reason.RESERVED_FOR_OTHER
        return Reason.RESOURCES


def schedule(state: ClusterState, now: float, *, backfill_cycle: bool = True,
             promise_all: bool = True) -> PassResult:
    """Run one pass at time ``now``.  ``backfill_cycle=False`` runs the main stage only;
    ``promise_all=False`` lets backfill stop once nothing more could start (see backfill.run).
    """
    work = Pass(state, now)
    order = priority_order(state)
    blocked_parts: set[str] = set()
    n_parts = len(state.partitions)
    for job in order:
        if len(blocked_parts) >= n_parts:
            break
        why = blocked_reason(job, state, now)
        if why is not None:
            work.reason[job.job_id] = why
            continue
        if job.partition in blocked_parts:
            work.reason[job.job_id] = Reason.PRIORITY
            continue
        req = request(job, state.nodes)
        candidates = work.free.fits(req) & work.allowed(job)
        alloc = work.free.place(job, req, candidates)
        if alloc is not None:
            work.start(job, alloc, backfilled=False)
            continue
        work.reason[job.job_id] = work.why_not_now(job)
        blocked_parts.add(job.partition)

    result_expected: dict[int, float] = {}
    planned: dict[int, tuple[int, ...]] = {}
    policy = state.config.sched.policy
    if backfill_cycle and policy in ("conservative", "easy") and len(work.started) < len(order):
        result_expected, planned = backfill.run(work, order, easy=(policy == "easy"),
                                                 promise_all=promise_all)

    reasons = Reasons(state, now, set(work.started))
    reasons.known = {j: r for j, r in work.reason.items() if j not in work.started}
    return PassResult(now, work.starts, reasons, result_expected, planned)
