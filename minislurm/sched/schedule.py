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

Nothing here changes the :class:`~minislurm.core.state.ClusterState` it reads (a caller that
runs many passes keeps its own :class:`~minislurm.sched.order.QueueOrder` and
:class:`~minislurm.sched.releases.Releases`): the caller
applies :attr:`PassResult.starts` and records :attr:`PassResult.settled` with
:meth:`~minislurm.core.state.ClusterState.settle_dependencies`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from minislurm.core.job import Dependency, Job
from minislurm.core.state import ClusterState
from minislurm.core.states import Reason
from minislurm.sched import backfill
from minislurm.sched.eligibility import blocked_reason, required_nodes
from minislurm.sched.order import QueueOrder, priority_order
from minislurm.sched.releases import Releases
from minislurm.sched.select.cons_tres import request
from minislurm.sched.work import Pass, Start

__all__ = ["PassResult", "Reasons", "Start", "priority_order", "schedule"]


class Reasons(Mapping):
    """The pending reason of every job pending at the pass.

    Reasons the pass worked out are stored; for jobs it never reached (deep in a blocked
    queue) the reason is derived on request, so a pass does not pay for a long queue.
    """

    def __init__(self, state: ClusterState, now: float, queue: list[Job], started: set[int]):
        self._state, self._now = state, now
        self._queue, self._started = queue, started  # the pass's queue, filtered when asked
        self.known: dict[int, str] = {}
        self._leads: dict[int, int] = {}  # array job id -> its record's first pending task

    def __getitem__(self, job_id: int) -> str:
        if job_id in self.known:
            return self.known[job_id]
        job = self._state.jobs[job_id]
        if not job.pending:
            raise KeyError(job_id)
        lead = self.lead(job_id)
        if lead is not None and lead != job_id:
            return self[lead]
        return blocked_reason(job, self._state, self._now) or Reason.PRIORITY

    def lead(self, job_id: int) -> int | None:
        """The first task (by task id) still in the array record ``job_id`` is in, if it is in one."""
        job = self._state.jobs[job_id]
        if not _in_meta_record(job) or job_id in self._started:
            return None
        array = job.array_job_id
        if array not in self._leads:
            tasks = (self._state.jobs[t] for t in self._state.array_tasks[array] if t not in self._started)
            self._leads[array] = min((t for t in tasks if _in_meta_record(t)),
                                     key=lambda t: t.array_task_id).job_id
        return self._leads[array]

    def __iter__(self) -> Iterator[int]:
        return (j.job_id for j in self._queue if j.job_id not in self._started)

    def __len__(self) -> int:
        return len(self._queue) - len(self._started)


def _in_meta_record(job: Job) -> bool:
    """Slurm keeps an array's pending tasks in one record until a task is split off from it:
    one that is held or was requeued has a record (and a reason) of its own."""
    return job.array_job_id is not None and job.pending and job.hold is None and job.restart_count == 0


def _one_reason_per_array(reasons: Reasons) -> None:
    """The tasks still in an array's record share that record's reason, the one its first
    task got (Slurm shows ``Resources`` for all of them, never ``Priority`` for those behind
    the first: they are one job to its scheduler)."""
    for job_id in list(reasons.known):
        lead = reasons.lead(job_id)
        if lead is not None and lead != job_id:
            reasons.known[job_id] = reasons[lead]


@dataclass
class PassResult:
    now: float
    starts: list[Start]
    reasons: Reasons
    expected_start: dict[int, float] = field(default_factory=dict)  # what squeue --start shows
    planned_nodes: dict[int, tuple[int, ...]] = field(default_factory=dict)
    # Dependencies found final this pass: OK, NEVER, or the narrower Dependency left.
    settled: dict[int, str | Dependency] = field(default_factory=dict)


def schedule(state: ClusterState, now: float, *, backfill_cycle: bool = True,
             promise_all: bool = True, queue_order: QueueOrder | None = None,
             releases: Releases | None = None) -> PassResult:
    """Run one pass at time ``now``.  ``backfill_cycle=False`` runs the main stage only;
    ``promise_all=False``: the caller needs only the decisions (the simulator), so a pass
    where no node has room for any queued job (and no dependency to settle) ends at once, and
    backfill stops once nothing more could start (see backfill.run); ``queue_order``: the
    caller's :class:`~minislurm.sched.order.QueueOrder`, kept between passes, and ``releases``
    its :class:`~minislurm.sched.releases.Releases` (the running jobs' side of the plan).
    """
    work = Pass(state, now)
    queue_order = queue_order or QueueOrder()
    order = queue_order(state)
    if not promise_all and not work.settled and not work.free.open_now(state.nodes.usable, queue_order.floor).any():
        return PassResult(now, [], Reasons(state, now, order, set()))
    blocked_parts: set[str] = set()
    failed_resv: set[str] = set()
    withheld: np.ndarray | None = None  # -w nodes of jobs that could not start
    n_parts = len(state.partitions)
    for job in order:
        if len(blocked_parts) >= n_parts:
            break
        work.reached += 1
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
                                                 promise_all=promise_all, floor=queue_order.floor,
                                                 columns=queue_order.columns, releases=releases)

    reasons = Reasons(state, now, order, set(work.started))
    reasons.known = {j: r for j, r in work.reason.items() if j not in work.started}
    _one_reason_per_array(reasons)
    return PassResult(now, work.starts, reasons, result_expected, planned, work.settled)
