"""What users and operators do to jobs and nodes: scancel, scontrol requeue/hold/release/update.

Each action checks permission first (a user may act on their own jobs; an operator on any),
then Slurm's preconditions, each failure raising :class:`SlurmError` with Slurm's text, so a
refused request changes nothing.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from minislurm.core import errors
from minislurm.core.errors import SlurmError
from minislurm.core.states import JobState, Reason
from minislurm.ctld import accounting

if TYPE_CHECKING:
    from minislurm.core.job import Job
    from minislurm.ctld.controller import Controller


def refuse_component(job: Job) -> None:
    """A heterogeneous job is cancelled or signalled as a whole, by its leader's id (Slurm
    22.05 refuses a pending job's later component; minislurm any)."""
    if job.het_job_id is not None and job.het_job_offset:
        raise SlurmError(errors.NOT_WHOLE_HET_JOB)


def in_record(job: Job) -> bool:
    """A pending array task still in its array's record (its key is negative until it takes
    an id of its own)."""
    return job.job_id < 0


async def cancel(ctl: "Controller", user: str, uid: int, job_id: int, signal: int | None = None,
                 target: str | None = None, alone: bool = False) -> Job | None:
    """scancel.  With ``signal`` (``-s``, ``-b``, ``-f``) the job is only signalled: its steps by
    default, the batch script's process tree with ``-b``, everything with ``-f``.  ``alone``:
    the task was named by itself (``A_2``): if it waits in its array's record beside others, it
    leaves no record at all, as on 22.05 (sacct never shows it).

    Returns a running job whose stop is saved but not yet told: the caller answers its
    requester, then tells the agents (``ctl.running.deliver_ending``), as slurmctld replies
    before it signals the job."""
    job = ctl.job(job_id)
    ctl.may_modify(user, job)
    if job.state.finished:
        raise SlurmError(errors.ALREADY_DONE)
    refuse_component(job)
    if signal is not None and target is not None:
        if job.state is not JobState.RUNNING:
            if signal in (9, 15) and target == "steps":  # plain SIGTERM/SIGKILL: cancel
                return await cancel(ctl, user, uid, job_id)
            raise SlurmError(errors.JOB_PENDING)
        await ctl.running.signal_job(job_id, signal, target=target)
        return
    live = ctl.live[job_id]
    if alone and in_record(job) and ctl.state.in_record_beside(job):
        ctl.forget_task(job)
        await ctl.commit()
        return None
    if job.state is JobState.PENDING:
        for c in ctl.state.het_components(job):  # a heterogeneous job's: all of them
            ctl.live[c.job_id].cancelled_by = uid
            ctl.state.finish(c, JobState.CANCELLED, ctl.clock())
            ctl.stats.ended(JobState.CANCELLED)
            accounting.record_job(ctl, c)
            ctl.save_job(c)
        await ctl.commit(wake=(job_id,))
        return
    if live.ending and live.ending[0] == JobState.CANCELLED.name:
        await ctl.store.settled()  # already being cancelled: acknowledged once that is saved
        return None
    live.cancelled_by = uid
    await ctl.running.decide_stop(job, JobState.CANCELLED, Reason.NONE)
    return job


async def requeue(ctl: "Controller", user: str, job_id: int, hold: bool = False) -> Job | None:
    """scontrol requeue[hold]; a running job is returned to be told after the answer, as by
    :func:`cancel`.  A heterogeneous job is requeued whole, by its leader's id only (Slurm
    22.05 refuses a component's, pending or not, before anything else)."""
    job = ctl.job(job_id)
    ctl.may_modify(user, job)
    if job.het_job_offset:
        raise SlurmError(errors.NOT_HET_JOB_LEADER)
    if not ctl.live[job_id].batch:
        raise SlurmError(errors.BATCH_ONLY)
    if not job.requeue:
        raise SlurmError(errors.DISABLED)
    if job.state is JobState.PENDING:
        raise SlurmError(errors.JOB_PENDING)
    hold_kind = "user" if hold else None
    if job.state is JobState.RUNNING:
        await ctl.running.decide_stop(job, JobState.REQUEUED, hold_kind)
        return job
    for c in ctl.state.het_components(job):  # the run that ended is recorded REQUEUED, its steps as they ended
        accounting.record_job(ctl, c, state=JobState.REQUEUED, batch=False)
    requeue_now(ctl, job, hold_kind)
    await ctl.commit(wake=tuple(c.job_id for c in ctl.state.het_components(job)))
    return None


def requeue_now(ctl: "Controller", job, hold: str | None) -> None:
    """A finished (or just stopped) job goes back to PENDING with the same id, a heterogeneous
    job with every component (:func:`minislurm.sched.apply.requeue`); the caller commits it and
    wakes its waiters (``ctl.commit(wake=...)``)."""
    from minislurm.sched import apply
    for c in ctl.state.het_components(job):
        ctl.running.forget_run(c)
    for c in apply.requeue(ctl.state, job, ctl.clock(), hold=hold):
        ctl.live[c.job_id].next_step = 0
        accounting.record_job(ctl, c)
        ctl.save_job(c)


async def hold(ctl: "Controller", user: str, job_id: int, kind: str | None = None, alone: bool = False) -> None:
    """``scontrol hold`` (an operator's is an admin hold: only an operator releases it) and
    ``uhold``.  A running job may be held too: the hold applies if it is requeued.  ``alone``:
    the task was named by itself (``A_3``): held, it leaves its array's record with its own id,
    as on 22.05."""
    job = ctl.job(job_id)
    ctl.may_modify(user, job)
    if job.state not in (JobState.PENDING, JobState.RUNNING):
        raise SlurmError(errors.ALREADY_DONE)
    if kind == "admin" and user not in ctl.operators:  # only an operator's hold is an admin hold
        raise SlurmError(errors.ACCESS_DENIED)
    held = _with_components(ctl, job)
    for c in held:
        ctl.state.hold(c, kind or ("admin" if user in ctl.operators else "user"))
    if alone and in_record(job):
        key = job.job_id
        ctl.state.split_off(job)
        ctl.moved(key, job)
        accounting.record_job(ctl, job)
    for c in held:
        ctl.save_job(c)
    await ctl.commit()


async def release(ctl: "Controller", user: str, job_id: int) -> None:
    from minislurm.sched import priority
    job = ctl.job(job_id)
    ctl.may_modify(user, job)
    if job.state not in (JobState.PENDING, JobState.RUNNING):
        raise SlurmError(errors.ALREADY_DONE)
    if job.hold == "admin" and user not in ctl.operators:
        raise SlurmError(errors.ACCESS_DENIED)
    for c in _with_components(ctl, job):
        c.hold = None  # its priority is worked out as for a job not held
        ctl.state.release(c, priority.initial(c, ctl.state, ctl.clock(), _fairshare(ctl)))
        ctl.save_job(c)
    await ctl.commit()


def _with_components(ctl: "Controller", job: Job) -> list[Job]:
    """The jobs scontrol hold and release act on: a heterogeneous job's leader names every
    component still pending or running (as on 22.05), any other job only itself."""
    if job.het_job_offset:
        return [job]
    return [c for c in ctl.state.het_components(job) if c.state in (JobState.PENDING, JobState.RUNNING)]


def _fairshare(ctl: "Controller") -> dict | None:
    """The fair-share factors a job's new priority counts, as the periodic recalculation
    does (its association was made when it was submitted or recovered)."""
    return ctl.fairshare.factors(ctl.clock()) if ctl.fairshare else None


def _nice(text: str) -> int:
    """A Nice= value (the API's schema made it a short string): an integer within Slurm's range."""
    value = text.strip()
    if not re.fullmatch(r"[+-]?[0-9]{1,10}", value) or abs(int(value)) > 2147483645:
        raise SlurmError("Invalid nice value, must be between -2147483645 and 2147483645")
    return int(value)


def _tres_bind_ok(text: str) -> bool:
    """``gpu:BIND[;gpu:BIND]`` (the only TRES 22.05 binds); empty clears it."""
    from minislurm.core.opthandlers import gpu_bind_problem
    for part in filter(None, text.split(";")):
        kind, sep, rest = part.partition(":")
        if not sep or kind != "gpu" or gpu_bind_problem(rest) is not None:
            return False
    return True


async def update_job(ctl: "Controller", user: str, job_id: int, fields: dict) -> None:
    """``scontrol update JobId=N Key=Value ...`` for TimeLimit, Nice, Name, Partition, Account,
    NumNodes and ArrayTaskThrottle (one task's update changes its array's throttle: every task
    has it).  What only an operator may ask is checked by the rules submission uses
    (:mod:`minislurm.sched.access`), so the two paths agree."""
    from minislurm.core.timefmt import parse_time_limit
    from minislurm.sched import access
    job = ctl.job(job_id)
    ctl.may_modify(user, job)
    if job.state.finished:
        raise SlurmError("Job has already finished")
    who = ctl.requester(job.user, submitter=user)
    changes = {}
    for key, value in fields.items():
        k = key.lower()
        if k == "timelimit":
            try:
                limit = parse_time_limit(value) * 60
            except ValueError:
                raise SlurmError(errors.INVALID_TIME_LIMIT) from None
            access.check_time_limit(limit, job.time_limit, who)
            changes["time_limit"] = limit
        elif k == "nice":
            nice = _nice(value)
            access.check_nice(nice, who, update=True)
            changes["nice"] = nice
        elif k in ("name", "jobname"):
            changes["name"] = value
        elif k == "numnodes":  # a pending job's node count (NumNodes=N or N-M: the minimum here)
            if job.state is not JobState.PENDING:
                raise SlurmError("Requested operation not supported on this system")
            m = re.fullmatch(r"(\d{1,9})(?:-(\d{1,9}))?", value.strip())
            if not m or int(m.group(1)) < 1 or (m.group(2) and int(m.group(2)) < int(m.group(1))):
                raise SlurmError(errors.INVALID_NODE_COUNT)
            changes["num_nodes"] = int(m.group(1))
        elif k == "partition":
            if job.state is not JobState.PENDING:
                raise SlurmError("Job is no longer pending execution")
            if value not in ctl.state.partitions:
                raise SlurmError(errors.INVALID_PARTITION)
            access.check_partition(ctl.state.partitions[value], who)
            changes["partition"] = value
        elif k == "arraytaskthrottle":  # the array's %N: 0 lifts it; a job not of an array ignores it
            if not re.fullmatch(r"[0-9]{1,9}", value.strip()):
                raise SlurmError(errors.BAD_TASK_COUNT)
            if job.array_job_id is not None:
                changes["array_max_running"] = int(value) or None
        elif k == "tresbind":  # checked as 22.05's slurmctld checks it (tres_bind_verify_cmdline)
            if not _tres_bind_ok(value):
                raise SlurmError(errors.INVALID_TRES)
            changes["tres_bind"] = value or None
        elif k == "account":
            if job.state is not JobState.PENDING:
                raise SlurmError("Job is no longer pending execution")
            changes["account"] = access.job_account(value or None, who, ctl.config)
        else:
            raise SlurmError(f"Update of this parameter is not supported: {key}")
    if "account" in changes and job.reservation in ctl.state.reservations:  # still admitted?
        access.check_reservation(ctl.state.reservations[job.reservation], job.user, changes["account"])
    if "tres_bind" in changes:
        ctl.live[job_id].tres_bind = changes.pop("tres_bind")
    ctl.state.update(job, changes)
    if "array_max_running" in changes:
        for task_id in ctl.state.array_tasks[job.array_job_id]:
            ctl.state.update(ctl.state.jobs[task_id], {"array_max_running": changes["array_max_running"]})
            ctl.save_job(ctl.state.jobs[task_id])
    if "time_limit" in changes and job.state is JobState.RUNNING:
        ctl.running.arm_timers(job, ctl.clock())
    if "account" in changes and ctl.fairshare:
        ctl.fairshare.associate([job])
    if changes.keys() & {"nice", "account"} and job.state is JobState.PENDING:
        from minislurm.sched import priority
        ctl.state.set_priorities({job.job_id: priority.initial(job, ctl.state, ctl.clock(), _fairshare(ctl))})
    ctl.save_job(job)
    await ctl.commit()


async def update_partition(ctl: "Controller", user: str, name: str, max_time_min: float | None) -> None:
    """``scontrol update PartitionName=P MaxTime=T`` (operators only).  Kept with the state, as
    slurmctld keeps it, until the configuration is read again."""
    if user not in ctl.operators:
        raise SlurmError("Invalid user id")
    part = ctl.state.partitions.get(name)
    if part is None:
        raise SlurmError(errors.INVALID_PARTITION)
    if max_time_min is not None:
        ctl.state.set_max_time(name, math.inf if max_time_min == "INFINITE" else max_time_min * 60)
        ctl.store.put_meta(f"partition_max_time:{name}", part.max_time)
    await ctl.commit()


async def update_node(ctl: "Controller", user: str, names: list[str], state: str | None, reason: str | None) -> None:
    """``scontrol update NodeName=X State=DOWN|DRAIN|RESUME|UNDRAIN|IDLE Reason=...``."""
    if user not in ctl.operators:  # slurmctld's _slurm_rpc_update_node: ESLURM_USER_ID_MISSING
        raise SlurmError("Invalid user id")
    nodes = ctl.state.nodes
    unknown = [n for n in names if n not in nodes.index]
    if unknown:
        raise SlurmError(errors.INVALID_NODE_NAME)
    want = (state or "").upper()
    if want in ("DOWN", "DRAIN") and not reason:
        raise SlurmError("You must specify a reason when DOWNING or DRAINING a node. Request denied")
    if want not in ("DOWN", "DRAIN", "RESUME", "UNDRAIN", "IDLE", ""):
        raise SlurmError("Invalid node state specified")
    for name in names:
        n = nodes.index[name]
        if want == "DOWN":
            nodes.set_down(n, True, reason)
            ctl.save_node(name, reason_by=user)
            await ctl.running.node_failed(n, reason)
        elif want == "DRAIN":
            nodes.set_drain(n, True, reason)
        elif want in ("RESUME", "IDLE"):
            nodes.set_down(n, False)
            nodes.set_drain(n, False)
        elif want == "UNDRAIN":
            nodes.set_drain(n, False)
        elif reason:
            nodes.reason[n] = reason
        ctl.save_node(name, reason_by=user if reason else None)
    ctl.state.touch()
    await ctl.commit()
