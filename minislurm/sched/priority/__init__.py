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
    if state.config.priority.type == "priority/basic":
        return basic.priority(job)
    return multifactor.priority(job, state, now, fairshare)


def update(state: ClusterState, now: float, fairshare: dict | None = None) -> None:
    """Recompute every pending job's priority (multifactor only; basic never changes)."""
    basic_type = state.config.priority.type == "priority/basic"
    for job in state.pending.values():
        if job.hold:
            job.priority = 0
        elif basic_type:
            job.priority = basic.priority(job)
        else:
            job.priority = multifactor.priority(job, state, now, fairshare)
    state.reprioritized()
