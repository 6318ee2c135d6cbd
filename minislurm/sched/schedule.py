"""One scheduling pass: the stages in order, and what the pass decided.

    sort (priority)  ->  filter (eligibility, node filter)  ->  place now (select/cons_tres)
                     ->  backfill: reserve for the blocked, start what fits in the gaps

The main stage is Slurm's main scheduler (sched/builtin): strict priority order, and once a
job in a partition cannot start, nothing behind it in that partition may start either
(it gets ``Priority``; the job that did not fit gets ``Resources``).  Two kinds of job do not
block their partition (slurmctld's ``_schedule``): one whose ``-w`` list covers its node count
only withholds those nodes from the rest of the pass, and one in an advance reservation only
blocks later jobs of the same reservation.  The backfill stage is
:mod:`minislurm.sched.backfill`.  The live controller runs a main-only pass on every event and
a full pass every ``bf_interval``; the simulator does the same on its clock.

Nothing here changes the :class:`~minislurm.core.state.ClusterState` it reads: the caller
applies :attr:`PassResult.starts` and records :attr:`PassResult.settled` with
:meth:`~minislurm.core.state.ClusterState.settle_dependencies`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from minislurm.core.job import Allocation, Dependency, Job
from minislurm.core.state import ClusterState
from minislurm.core.states import Reason
from minislurm.sched import backfill, depend
from minislurm.sched.eligibility import blocked_reason, node_filter, required_nodes
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
    # Dependencies found final this pass: "ok", "never", or the narrower Dependency left.
    settled: dict[int, str | Dependency] = field(default_factory=dict)


def priority_order(state: ClusterState) -> list[Job]:
    """Slurm's evaluation order: reservation jobs, PriorityTier, priority, submit time, id.

    The sorted queue is kept between passes: new jobs are inserted in place, and only when
    :meth:`ClusterState.reprioritized` says the order may have changed is it sorted again.
    Jobs that left the queue since are skipped.
    """
    tiers = {name: p.priority_tier for name, p in state.partitions.items()}

    def key(j: Job):
        return (j.reservation is None, -tiers.get(j.partition, 0), -j.priority, j.submit_time, j.job_id)

    cached = state.order_cache
    if cached is None or cached[0] != state.order_epoch:
        state.order_cache = cached = (state.order_epoch, sorted(state.pending.values(), key=key))
    else:
        for job in state.order_new:
            if job.job_id in state.pending:
                bisect.insort(cached[1], job, key=key)
    state.order_new.clear()
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
        self.array_started: dict[int, int] = {}  # array job id -> tasks started this pass
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


def schedule(state: ClusterState, now: float, *, backfill_cycle: bool = True,
             promise_all: bool = True) -> PassResult:
    """Run one pass at time ``now``.  ``backfill_cycle=False`` runs the main stage only;
    ``promise_all=False`` lets backfill stop once nothing more could start (see backfill.run).
    """
    work = Pass(state, now)
    order = priority_order(state)
    blocked_parts: set[str] = set()
    failed_resv: set[str] = set()
    withheld: np.ndarray | None = None  # -w nodes of jobs that could not start
    n_parts = len(state.partitions)
    for job in order:
        if len(blocked_parts) >= n_parts:
            break
        why = work.blocked(job)
        if why is not None:
            work.reason[job.job_id] = why
            continue
        if job.reservation in failed_resv or (job.reservation is None and job.partition in blocked_parts):
            work.reason[job.job_id] = Reason.PRIORITY
            continue
        req = request(job, state.nodes)
        required = required_nodes(job, state)
        candidates = work.free.fits(req) & work.allowed(job)
        if withheld is not None:
            candidates &= ~withheld
        alloc = work.free.place(job, req, candidates, required)
        if alloc is not None:
            work.start(job, alloc, backfilled=False)
            continue
        work.reason[job.job_id] = work.why_not_now(job, required, withheld)
        if required is not None and len(required) >= job.num_nodes:
            withheld = np.zeros(len(state.nodes), dtype=bool) if withheld is None else withheld
            withheld[required] = True
        elif job.reservation is not None:
            failed_resv.add(job.reservation)
        else:
            blocked_parts.add(job.partition)

    result_expected: dict[int, float] = {}
    planned: dict[int, tuple[int, ...]] = {}
    policy = state.config.sched.policy
    if backfill_cycle and policy in ("conservative", "easy") and len(work.started) < len(order):
        result_expected, planned = backfill.run(work, order, easy=(policy == "easy"),
                                                 promise_all=promise_all)

    reasons = Reasons(state, now, set(work.started))
    reasons.known = {j: r for j, r in work.reason.items() if j not in work.started}
    return PassResult(now, work.starts, reasons, result_expected, planned, work.settled)
