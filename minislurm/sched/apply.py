"""Where a decision becomes state: a pass's result applied, and a run lost with its node.

:func:`~minislurm.sched.schedule.schedule` only reads the cluster and returns what it
decided; :func:`apply` makes that the cluster's state.  Like Kubernetes' scheduler, which
decides in one cycle and binds in another, minislurm keeps the two apart, and every caller
applies a pass through this one function: the controller (which then saves the jobs and
launches them), the simulator (which then times their ends), and the lab models.  So a rule
about what a decision does -- a dependency that can never be met cancels a
``--kill-on-invalid-dep`` job, a waiting job shows the reason the pass gave it, an array task
takes its own id as it starts -- is written once.

:func:`requeue_or_fail` is the other rule both the controller and the simulator apply: what
happens to a running job when a node under it is lost.  Both it and ``scontrol requeue`` go
through :func:`requeue`, which takes a heterogeneous job back to the queue whole.
"""

from __future__ import annotations

from dataclasses import dataclass

from minislurm.core.job import Job
from minislurm.core.state import ClusterState
from minislurm.core.states import DependencyOutcome, JobState, Reason
from minislurm.sched.schedule import PassResult


@dataclass(frozen=True)
class Started:
    """A start applied: the job (read its id here: an array task takes its own id as it
    starts) and the key the pass knew it by."""

    job: Job
    key: int
    backfilled: bool


@dataclass(frozen=True)
class Applied:
    """What :func:`apply` changed, for the caller's own bookkeeping (saving, launching, timing)."""

    started: tuple[Started, ...]
    cancelled: tuple[Job, ...]  # --kill-on-invalid-dep jobs whose dependency can never be met
    settled: tuple[Job, ...]  # jobs whose dependency the pass settled (cancelled ones included)


def apply(state: ClusterState, result: PassResult) -> Applied:
    """Apply one pass: settled dependencies (and what they cancel), reasons, then starts."""
    now = result.now
    state.settle_dependencies(result.settled)
    settled = tuple(state.jobs[job_id] for job_id in result.settled)
    cancelled = []
    for job_id, outcome in result.settled.items():
        job = state.jobs[job_id]
        if outcome == DependencyOutcome.NEVER and job.kill_on_invalid_dep and job.pending:
            state.finish(job, JobState.CANCELLED, now, reason=Reason.DEPENDENCY_NEVER)
            cancelled.append(job)
    for job_id, reason in result.reasons.items():
        job = state.jobs[job_id]
        if job.pending:
            job.reason = reason
    started = []
    for start in result.starts:
        job = state.jobs[start.job_id]
        state.start(job, start.alloc, now)
        started.append(Started(job, start.job_id, start.backfilled))
    return Applied(tuple(started), tuple(cancelled), settled)


def requeue(state: ClusterState, job: Job, now: float, hold: str | None = None) -> list[Job]:
    """Back to PENDING with the same id (:meth:`ClusterState.requeue`).  A heterogeneous job
    goes back whole, every component with it, so that they start together again (Slurm 22.05
    requeues every component of one, by its leader's id or when a node under any of them is
    lost).  The caller records each run that ended first.  Returns the jobs requeued."""
    parts = state.het_components(job)
    for c in parts:
        state.requeue(c, now, hold=hold)
    return parts


def requeue_or_fail(state: ClusterState, job: Job, now: float, *, batch: bool = True) -> JobState:
    """A node under the running ``job`` was lost: Slurm requeues a batch job that may be
    requeued (same id, restart count + 1, eligible again after the requeue delay) and ends any
    other NODE_FAIL; a heterogeneous job's components share that fate, which its leader's
    script (``batch``) and ``--requeue`` decide.  The caller records the runs that ended first.
    Returns PENDING or NODE_FAIL."""
    parts = state.het_components(job)
    if batch and parts[0].requeue:
        requeue(state, job, now)
        return JobState.PENDING
    for c in parts:
        if c.state is JobState.RUNNING:  # (a component that ended alone keeps its end)
            state.finish(c, JobState.NODE_FAIL, now, exit_code=1, reason=Reason.NODE_DOWN)
    return JobState.NODE_FAIL


__all__ = ["Applied", "Started", "apply", "requeue", "requeue_or_fail"]
