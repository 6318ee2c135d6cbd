"""Which jobs a job id names when a user acts on it (scancel, scontrol hold|release|requeue|update).

As in Slurm, an array's own id names the whole array: every task, pending or running
(``scancel 12`` cancels them all); ``12_3`` (the id and ``task``) names one task; any other id
names its one job, a task's own id included.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from minislurm.core import errors
from minislurm.core.errors import SlurmError
from minislurm.core.job import Job

if TYPE_CHECKING:
    from minislurm.ctld.controller import Controller


def named(ctl: "Controller", job_id: int, task: int | None = None) -> list[Job]:
    """The jobs ``job_id`` (with ``task``: ``job_id_task``) names, in task order."""
    tasks = ctl.state.array_tasks.get(job_id)
    if task is not None:
        found = [ctl.state.jobs[t] for t in tasks or () if ctl.state.jobs[t].array_task_id == task]
        if not found:
            raise SlurmError(errors.INVALID_JOB_ID)
        return found
    if tasks:
        return sorted((ctl.state.jobs[t] for t in tasks), key=lambda j: j.array_task_id)
    return [ctl.job(job_id)]


async def each(ctl: "Controller", job_id: int, task: int | None, act: Callable[[Job], Awaitable]) -> list:
    """``act`` on every job named, together: their changes are committed as one (a thousand
    tasks cancel in one commit, not a thousand).  A whole array's action succeeds when it
    succeeds for one of its tasks (those already finished are passed over, as Slurm does);
    otherwise, and for a refusal of permission, the first task's error is the answer.
    Returns what ``act`` returned for each job it succeeded on."""
    jobs = named(ctl, job_id, task)
    if len(jobs) == 1:
        return [await act(jobs[0])]
    outcomes = await asyncio.gather(*(act(job) for job in jobs), return_exceptions=True)
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    for failure in failures:
        if not isinstance(failure, SlurmError):
            raise failure  # a bug, never hidden behind a task that succeeded
    denied = [f for f in failures if f.message == errors.ACCESS_DENIED]
    if denied:
        raise denied[0]
    if len(failures) == len(jobs):
        raise failures[0]
    return [o for o in outcomes if not isinstance(o, BaseException)]
