"""Priority plugins (Slurm's ``PriorityType``): the QueueSort stage's key.

``priority/basic`` fixes a FIFO priority at submission; ``priority/multifactor`` (Slurm's
default) recomputes a weighted sum of factors every ``PriorityCalcPeriod``.
Held jobs always have priority 0.
"""

from __future__ import annotations

from minislurm.core.job import Job
from minislurm.core.state import ClusterState
from minislurm.sched.priority import basic, multifactor


def initial(job: Job, state: ClusterState, now: float, fairshare: dict | None = None) -> int:
    """The priority a job gets when it is submitted."""
    if job.hold:
        return 0
    if job.fixed_priority is not None:
        return job.fixed_priority
    if state.config.priority.type == "priority/basic":
        return basic.priority(job)
    return multifactor.priority(job, state, now, fairshare)


def recompute(state: ClusterState, now: float, fairshare: dict | None = None) -> dict[int, int]:
    """Every pending job's priority now (multifactor only changes; basic never does).  The
    caller records them with :meth:`ClusterState.set_priorities`."""
    return {job.job_id: initial(job, state, now, fairshare) for job in state.pending.values()}
