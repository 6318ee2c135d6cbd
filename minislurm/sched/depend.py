"""Job dependencies (``-d``): is each condition met, still waiting, or impossible for good?

``after`` waits for the other job to start (or be cancelled), ``afterany`` for it to end,
``afterok``/``afternotok`` for it to end well/badly, ``singleton`` for every earlier job of the
same name and user to end.  "Once a job dependency fails ... the dependent job will never be
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


def status(job: Job, jobs: Mapping[int, Job], array_tasks: Mapping[int, list[int]]) -> str:
    """OK, WAIT or NEVER for the job's whole dependency expression."""
    dep = job.dependency
    if dep is None:
        return OK
    results = []
    for kind, ids in dep.terms:
        if kind == "singleton":
            earlier = any(
                o.name == job.name and o.user == job.user and o.job_id < job.job_id and not o.state.finished
                for o in jobs.values()
            )
            results.append(WAIT if earlier else OK)
            continue
        for job_id in ids:
            targets = _targets(job_id, jobs, array_tasks)
            if not targets:  # purged from memory: Slurm treats it as satisfied
                results.append(OK)
                continue
            each = [_one(kind, t) for t in targets]
            results.append(NEVER if NEVER in each else WAIT if WAIT in each else OK)
    if dep.any_of:
        return OK if OK in results else WAIT if WAIT in results else NEVER
    return NEVER if NEVER in results else WAIT if WAIT in results else OK
