"""An allocation asked for by ``srun`` or ``salloc`` is tried the moment it arrives.

slurmctld tries to start such a job inside the request itself (``job_allocate``), before any
scheduling pass, if no pending job that could run in its partition has a *higher* priority: one
of equal priority does not stop it.  The main scheduler, by contrast, goes in strict order and
stops a partition at its first job that does not fit.  So on a partition whose queue is blocked
by jobs of the same priority, ``srun -N1 true`` starts at once while a batch job sent at the
same moment waits for the next pass (both seen on the twin, Slurm 22.05: srun started in
25-37 ms behind three pending GPU jobs of its own priority; with ``--nice`` it waited for the
backfill cycle, about 1 s).
"""

from __future__ import annotations

from minislurm.core.job import Job
from minislurm.core.state import ClusterState
from minislurm.sched.eligibility import blocked_reason
from minislurm.sched.schedule import PassResult, main_stage
from minislurm.sched.work import Pass


def outranked(job: Job, state: ClusterState, now: float) -> bool:
    """Is a pending job that could run now, in the job's partition (and in a reservation if,
    and only if, the job is in one), of higher priority?"""
    for other in state.pending.values():
        if other is job or other.priority <= job.priority or other.partition != job.partition:
            continue
        if (other.reservation is None) != (job.reservation is None):
            continue
        if blocked_reason(other, state, now) is None:
            return True
    return False


def try_at_once(state: ClusterState, job: Job, now: float) -> PassResult:
    """The job started now, as the main scheduler would place it, or nothing started (the
    next pass gives it its reason)."""
    if outranked(job, state, now):
        return PassResult(now, ())
    work = Pass(state, now)
    main_stage(work, [job])
    return PassResult(now, tuple(work.starts))
