"""Admission: a job request becomes queued jobs (``sbatch``, ``srun`` and ``salloc`` outside a
job), or a will-run answer (``sbatch --test-only``).  The request is built into jobs by
:func:`minislurm.sched.submit.build_jobs`, through the template a replayed trace record goes
through too (:func:`~minislurm.sched.submit.job_template`); they are committed before the
client hears its job ids, and only then queued.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minislurm.core import errors
from minislurm.core.errors import SlurmError
from minislurm.core.job import Job
from minislurm.core.spec import spec_from_dict
from minislurm.core.states import JobState, Reason
from minislurm.ctld import accounting
from minislurm.ctld.jobs import Live
from minislurm.sched import priority
from minislurm.sched.submit import NeverRuns, build_jobs
from minislurm.sched.willrun import will_run

if TYPE_CHECKING:
    from minislurm.ctld.controller import Controller


async def submit(ctl: "Controller", user: str, request: dict) -> list[int]:
    """Validate, commit, queue.  Returns the job's id (an array's: the array's own)."""
    ctl.check_saving()
    ctl.check_user(user)
    check_script_size(ctl, request.get("script"))
    now = ctl.clock()
    spec = spec_from_dict(request.get("spec", {}))
    batch = bool(request.get("batch", True))
    owner = ctl.job_owner(user, spec.extra.get("uid"))  # root's --uid
    if owner != user:
        ctl.check_user(owner)
    uid, gid = ctl.ids_of(owner, int(request.get("uid", 0)), int(request.get("gid", 0)))
    if request.get("components"):
        return await _submit_het(ctl, owner, user, request, spec, now, uid, gid)
    try:
        jobs = build_jobs(spec, ctl.state, first_id=ctl.state.next_job_id, user=owner, now=now,
                          default_name=request.get("default_name") or ("sbatch" if batch else "srun"),
                          who=ctl.requester(owner, submitter=user))
    except NeverRuns as exc:
        ctl.state.used_job_ids(exc.job.job_id)
        await _never_runs(ctl, exc.job, Live.from_request(request, batch, uid, gid), now)
        raise
    ctl.state.used_job_ids(jobs[0].shown_id)  # an array takes one id; its tasks, theirs as they start
    ctl.stats.submitted += 1
    fairshare = ctl.fairshare.for_jobs(jobs[:1], now) if ctl.fairshare else None  # one user, one account
    lives = [Live.from_request(request, batch, uid, gid) for _ in jobs]
    await _queue(ctl, jobs, lives, now, fairshare)
    return [jobs[0].shown_id]


async def _queue(ctl: "Controller", jobs: list[Job], lives: list[Live], now: float, fairshare) -> None:
    """Prioritise, save and account the new jobs; commit; only then queue them."""
    for job, live in zip(jobs, lives):
        job.priority = priority.initial(job, ctl.state, now, fairshare)
        if job.hold:  # a held job says so at once, and still does after a restart
            job.reason = Reason.held(job.hold)
        ctl.live[job.job_id] = live
        ctl.save_job(job)
        accounting.record_job(ctl, job)
    ctl.store.put_meta("next_job_id", ctl.state.next_job_id)
    await ctl.store.commit()
    for job in jobs:
        ctl.state.add(job)
    if len(jobs) == 1 and not lives[0].batch and jobs[0].het_job_id is None:
        ctl.allocate_at_once(jobs[0])  # srun or salloc: tried before any pass, as Slurm does
    ctl.request_pass()


async def _submit_het(ctl: "Controller", owner: str, user: str, request: dict, first, now: float,
                      uid: int, gid: int) -> list[int]:
    """A heterogeneous job: one job per component, ids leader, leader+1, ..., each built as
    any job is; all are queued or none.  Only the leader runs the batch script (on its first
    node); the others are allocations that its steps use (``srun --het-group``)."""
    specs = [first, *(spec_from_dict(c) for c in request["components"])]
    if any(s.array is not None for s in specs):
        raise SlurmError(errors.HETJOB_UNSUPPORTED + " as job arrays")
    leader = ctl.state.next_job_id
    jobs: list[Job] = []
    try:
        for offset, spec in enumerate(specs):
            job, = build_jobs(spec, ctl.state, first_id=leader + offset, user=owner, now=now,
                              default_name=request.get("default_name") or "sbatch",
                              who=ctl.requester(owner, submitter=user))
            job.het_job_id, job.het_job_offset = leader, offset
            jobs.append(job)
    except NeverRuns:
        ctl.state.used_job_ids(leader + len(jobs))
        ctl.store.put_meta("next_job_id", ctl.state.next_job_id)
        await ctl.store.commit()
        raise
    ctl.state.used_job_ids(jobs[-1].job_id)
    ctl.stats.submitted += 1
    fairshare = ctl.fairshare.for_jobs(jobs[:1], now) if ctl.fairshare else None
    lives = [Live.from_request(request, offset == 0, uid, gid) for offset in range(len(jobs))]
    for live in lives[1:]:
        live.script = None
    await _queue(ctl, jobs, lives, now, fairshare)
    return [leader]


async def test_only(ctl: "Controller", user: str, request: dict) -> dict:
    """``sbatch --test-only``: the will-run answer for a job that is never queued (it uses
    up a job id, as in Slurm)."""
    ctl.check_saving()
    ctl.check_user(user)
    check_script_size(ctl, request.get("script"))
    now = ctl.clock()
    job_id = ctl.state.next_job_id
    try:
        job = build_jobs(spec_from_dict(request.get("spec", {})), ctl.state, first_id=job_id, user=user,
                         now=now, who=ctl.requester(user))[0]
    except NeverRuns:
        found = None
    else:
        found = will_run(ctl.state, job, now)
    ctl.state.used_job_ids(job_id)
    ctl.store.put_meta("next_job_id", ctl.state.next_job_id)
    await ctl.store.commit()
    if found is None:
        raise SlurmError(errors.NODE_CONFIG_UNAVAILABLE)
    start, nodes, cpus = found
    return {"job_id": job_id, "start": start, "nodes": nodes, "cpus": cpus, "partition": job.partition}


def check_script_size(ctl: "Controller", script: str | None) -> None:
    """SchedulerParameters=max_script_size (bytes, 4 MB by default): slurmctld refuses a larger
    script with ESLURM_PATHNAME_TOO_LONG, before anything else about the job."""
    if not script or len(script) * 4 <= ctl.config.sched.max_script_size:
        return  # (quick: no character takes more than 4 bytes)
    try:
        size = len(script.encode("utf-8", "surrogateescape"))  # the bytes sbatch read
    except UnicodeEncodeError:
        size = len(script.encode("utf-8", "surrogatepass"))
    if size > ctl.config.sched.max_script_size:
        raise SlurmError(errors.PATHNAME_TOO_LONG)


async def _never_runs(ctl: "Controller", job: Job, live: Live, now: float) -> None:
    """As slurmctld does: the refused request keeps its job id and a FAILED record (exit code
    1, no nodes), so ``sacct`` lists it and the next job's id skips one."""
    ctl.live[job.job_id] = live
    job.state, job.reason, job.exit_code = JobState.FAILED, Reason.BAD_CONSTRAINTS, 1
    job.start_time = job.end_time = now
    accounting.record_job(ctl, job)
    del ctl.live[job.job_id]
    ctl.store.put_meta("next_job_id", ctl.state.next_job_id)
    await ctl.store.commit()
