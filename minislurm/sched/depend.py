"""Job dependencies (``-d``): is each condition met, still waiting, or impossible for good?

``after`` waits for the other job to start (or be cancelled), ``afterany`` for it to end,
``afterok``/``afternotok`` for it to end well/badly, ``aftercorr`` for the same-index task of
another array to end well, ``singleton`` until no other job of the same name and user runs
and none submitted earlier still pends.  "Once a job dependency fails ... the dependent job will never be
run, even if the preceding job is requeued."
"""

from __future__ import annotations

from collections.abc import Mapping

from minislurm.core.job import Job
from minislurm.core.states import JobState

OK, WAIT, NEVER = "ok", "wait", "never"


def _one(kind: str, target: Job) -> str:
    state = target.state
    if kind == "after":
        started = state is not JobState.PENDING or target.start_time is not None
        return OK if started else WAIT
    if not state.finished:
        return WAIT
    good = state is JobState.COMPLETED and target.exit_code == 0
    if kind in ("afterany",):
        return OK
    if kind in ("afterok", "aftercorr"):
        return OK if good else NEVER
    if kind == "afternotok":
        return NEVER if good else OK
    return NEVER


def _targets(job_id: int, jobs: Mapping[int, Job], array_tasks: Mapping[int, list[int]]) -> list[Job]:
    """A dependency on an array's id means every task of the array."""
    tasks = array_tasks.get(job_id)
    if tasks:
        return [jobs[t] for t in tasks if t in jobs]
    return [jobs[job_id]] if job_id in jobs else []


def _corresponding(job: Job, targets: list[Job]) -> list[Job]:
    """``aftercorr``: the task of the other array with this task's index, when there is one;
    otherwise the whole target, as slurmctld's ``_test_job_dependency_common`` does."""
    if job.array_task_id is not None:
        same = [t for t in targets if t.array_task_id == job.array_task_id]
        if same:
            return same
    return targets


def _singleton_blocked(job: Job, jobs: Mapping[int, Job]) -> bool:
    """Another job of this name and user is running or suspended (whatever its id), or was
    submitted earlier and still pends: slurmctld's ``_find_singleton_job``; the man page:
    "only one job by that name and owned by that user can be running or suspended"."""
    for other in jobs.values():
        if other is job or other.name != job.name or other.user != job.user:
            continue
        if other.state in (JobState.RUNNING, JobState.SUSPENDED):
            return True
        if other.state is JobState.PENDING and other.job_id < job.job_id:
            return True
    return False


def status(job: Job, jobs: Mapping[int, Job], array_tasks: Mapping[int, list[int]]) -> str:
    """OK, WAIT or NEVER for the job's whole dependency expression."""
    dep = job.dependency
    if dep is None:
        return OK
    results = []
    for kind, ids in dep.terms:
        if kind == "singleton":
            results.append(WAIT if _singleton_blocked(job, jobs) else OK)
            continue
        for job_id in ids:
            targets = _targets(job_id, jobs, array_tasks)
            if not targets:  # purged from memory: Slurm treats it as satisfied
                results.append(OK)
                continue
            if kind == "aftercorr":
                targets = _corresponding(job, targets)
            each = [_one(kind, t) for t in targets]
            results.append(NEVER if NEVER in each else WAIT if WAIT in each else OK)
    if dep.any_of:
        return OK if OK in results else WAIT if WAIT in results else NEVER
    return NEVER if NEVER in results else WAIT if WAIT in results else OK
