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
a full pass every ``bf_interval``; the simulator does the same on its clock.  An allocation
that srun or salloc asks for is first tried on its own (:mod:`minislurm.sched.allocation`).

Nothing here changes the :class:`~minislurm.core.state.ClusterState` it reads (a caller that
runs many passes keeps its own :class:`~minislurm.sched.order.QueueOrder` and
:class:`~minislurm.sched.releases.Releases`): the pass returns a frozen :class:`PassResult`,
and :func:`minislurm.sched.apply.apply` -- the one place a decision becomes state, for the
controller, the simulator and the labs alike -- applies it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from minislurm.core.deps import Dependency
from minislurm.core.job import Job
from minislurm.core.state import ClusterState
from minislurm.core.states import Reason
from minislurm.sched import backfill, hetjob
from minislurm.sched.eligibility import blocked_reason, required_nodes
from minislurm.sched.order import QueueOrder, priority_order
from minislurm.sched.releases import Releases
from minislurm.sched.select.cons_tres import request
from minislurm.sched.shortcuts import Shortcuts
from minislurm.sched.work import Pass, Start

__all__ = ["PassResult", "Start", "priority_order", "schedule"]


def _in_meta_record(job: Job) -> bool:
    """Slurm keeps an array's pending tasks in one record until a task is split off from it:
    one that is held or was requeued has a record (and a reason) of its own."""
    return job.array_job_id is not None and job.pending and job.hold is None and job.restart_count == 0


def _reasons(work: Pass, order: list[Job], every_reason: bool) -> dict[int, str]:
    """The reason each pending job is given: what the pass found for the jobs it reached, and
    with ``every_reason`` what the others would be told (a hold, a dependency... or
    ``Priority``: a job the pass never reached waits behind those it did).

    The tasks still in an array's record share that record's reason, the one its first task
    got (Slurm shows ``Resources`` for all of them, never ``Priority`` for those behind the
    first: they are one job to its scheduler)."""
    state, now, started = work.state, work.now, work.started
    found = {j: r for j, r in work.reason.items() if j not in started}
    if every_reason:
        for job in order:
            if job.job_id not in started and job.job_id not in found:
                found[job.job_id] = blocked_reason(job, state, now) or Reason.PRIORITY
    leads: dict[int, int] = {}  # array job id -> its record's first pending task
    for job_id in list(found):
        job = state.jobs[job_id]
        if not _in_meta_record(job):
            continue
        array = job.array_job_id
        if array not in leads:
            tasks = (state.jobs[t] for t in state.array_tasks[array] if t not in started)
            leads[array] = min((t for t in tasks if _in_meta_record(t)), key=lambda t: t.array_task_id).job_id
        lead = leads[array]
        if lead != job_id:
            found[job_id] = found.get(lead) or blocked_reason(state.jobs[lead], state, now) or Reason.PRIORITY
    return found


def _het_job(work: Pass, job: Job, blocked_parts: set[str], withheld: np.ndarray | None) -> None:
    """A heterogeneous job, at the first of its components the main stage reaches: every
    component starts now or none does (:mod:`.hetjob`); if none, each waits with the same
    reason, and blocks its partition as any job that did not fit."""
    parts = work.state.het_components(job)
    why = hetjob.blocked(work, parts)
    if why is None and not any(c.partition in blocked_parts for c in parts):
        placed = hetjob.place_together(work, parts, withheld)
        if placed is not None:
            for c, alloc in placed:
                work.start(c, alloc, backfilled=False)
            return
        why = Reason.RESOURCES
        blocked_parts.update(c.partition for c in parts)
    for c in parts:
        work.reason[c.job_id] = why or Reason.PRIORITY


_NOTHING: Mapping = MappingProxyType({})


@dataclass(frozen=True)
class PassResult:
    """What one pass decided; :func:`minislurm.sched.apply.apply` makes it the cluster's state."""

    now: float
    starts: tuple[Start, ...]
    # The pending reason of each job the pass reached (every pending job's with every_reason).
    reasons: Mapping[int, str] = field(default_factory=dict)
    expected_start: Mapping[int, float] = field(default_factory=dict)  # what squeue --start shows
    planned_nodes: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    # Dependencies found final this pass: OK, NEVER, or the narrower Dependency left.
    settled: Mapping[int, str | Dependency] = field(default_factory=dict)
    queued: int = 0  # the queue's length
    reached: int = 0  # how many jobs the main stage looked at
    tested: int = 0  # how many backfill tested

    def __post_init__(self):
        for name in ("reasons", "expected_start", "planned_nodes", "settled"):  # read-only, as the rest
            given = getattr(self, name)
            object.__setattr__(self, name, MappingProxyType(given) if given else _NOTHING)


def main_stage(work: Pass, order: list[Job]) -> None:
    """Slurm's main scheduler over ``order``: each job starts now where it fits, until a job
    that does not fit blocks the rest of its partition (see the module's docstring)."""
    state = work.state
    blocked_parts: set[str] = set()
    failed_resv: set[str] = set()
    withheld: np.ndarray | None = None  # -w nodes of jobs that could not start
    n_parts = len(state.partitions)
    for job in order:
        if len(blocked_parts) >= n_parts:
            break
        work.reached += 1
        if job.het_job_id is not None:
            if job.job_id not in work.reason and job.job_id not in work.started:
                _het_job(work, job, blocked_parts, withheld)
            continue
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


def schedule(state: ClusterState, now: float, *, backfill_cycle: bool = True,
             promise_all: bool = True, queue_order: QueueOrder | None = None,
             releases: Releases | None = None, every_reason: bool = False, shortcuts: bool = True) -> PassResult:
    """Run one pass at time ``now``.  ``backfill_cycle=False`` runs the main stage only;
    ``promise_all=False``: the caller needs only the decisions (the simulator), so a pass
    where no node has room for any queued job (and no dependency to settle) ends at once, and
    backfill stops once nothing more could start (see backfill.run); ``queue_order``: the
    caller's :class:`~minislurm.sched.order.QueueOrder`, kept between passes, and ``releases``
    its :class:`~minislurm.sched.releases.Releases` (the running jobs' side of the plan);
    ``every_reason``: the reasons of the jobs the pass did not reach too (a lab's small queue;
    the controller and the simulator keep what the last pass that reached a job told it);
    ``shortcuts=False``: backfill searches every job it tests, without the speed-ups of
    :mod:`~minislurm.sched.shortcuts` (the decisions are the same).
    """
    work = Pass(state, now)
    queue_order = queue_order or QueueOrder()
    order = queue_order.kept(state)
    if not promise_all and not work.settled and not work.free.open_now(state.nodes.usable, queue_order.floor).any():
        return PassResult(now, (), _reasons(work, order, every_reason), queued=len(order))
    main_stage(work, order)

    result_expected: dict[int, float] = {}
    planned: dict[int, tuple[int, ...]] = {}
    policy = state.config.sched.policy
    if backfill_cycle and policy in ("conservative", "easy") and len(work.started) < len(order):
        speedups = Shortcuts(enabled=shortcuts, decisions_only=not promise_all, floor=queue_order.floor,
                             shortest=queue_order.shortest, columns=queue_order.columns)
        result_expected, planned = backfill.run(work, order, easy=(policy == "easy"), releases=releases,
                                                 shortcuts=speedups)

    return PassResult(now, tuple(work.starts), _reasons(work, order, every_reason), result_expected, planned,
                      work.settled, len(order), work.reached, work.tested)
