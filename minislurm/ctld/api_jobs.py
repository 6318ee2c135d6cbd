"""The controller's ``/jobs`` routes: submit, list, wait, cancel, requeue, hold, update, and a
job's steps.  Requests arrive checked by :mod:`minislurm.ctld.edge` (see :mod:`.api`)."""

from __future__ import annotations

import json

from aiohttp import web

from minislurm.core.states import JobState
from minislurm.ctld import actions, admission, steps, targets
from minislurm.ctld.controller import Controller
from minislurm.ctld.edge import BODY, CTL, PATH, QUERY, USER, answer_then
from minislurm.ctld.present import full_job, job_columns

MIN_JOB_AGE = 300.0  # seconds a finished job stays visible to squeue


def _ctl(request: web.Request) -> Controller:
    return request.app[CTL]


def _job_id(request: web.Request) -> int:
    return request[PATH]["job_id"]


def _task(request: web.Request) -> int | None:
    """``?task=N``: the action is on task N of array ``job_id`` alone (``scancel 12_3``);
    without it an array's id names every task (see :mod:`minislurm.ctld.targets`)."""
    return request[QUERY].get("task")


async def submit(request: web.Request) -> web.Response:
    if request[BODY].get("spec", {}).get("test_only"):
        return web.json_response(await admission.test_only(_ctl(request), request[USER], request[BODY]))
    ids = await admission.submit(_ctl(request), request[USER], request[BODY])
    return web.json_response({"job_id": ids[0], "job_ids": ids})


async def list_jobs(request: web.Request) -> web.Response:
    """The jobs squeue and scontrol show: filtered here by ids, states, users and partitions.
    With ``fields=a,b,...`` only those keys, as ``columns`` in that order (see job_columns):
    squeue over 10,000 jobs needs a few columns, not every view in full."""
    ctl, q = _ctl(request), request[QUERY]
    await ctl.settled()
    now = ctl.clock()
    ids, states = set(q.get("ids", ())), set(q.get("states", ()))
    users = set(q["user"]) if q.get("user") else None
    parts = set(q["partition"]) if q.get("partition") else None
    shown = now - MIN_JOB_AGE
    jobs = [job for job in (ctl.state.jobs.values() if not ids else
                            (j for j in ctl.state.jobs.values()
                             if j.job_id in ids or j.array_job_id in ids or j.het_job_id in ids))
            if (ids or not job.state.finished or (job.end_time or 0) >= shown)
            and (not states or job.state.name in states) and (users is None or job.user in users)
            and (parts is None or job.partition in parts)]
    if q.get("fields"):
        keys = q["fields"]
        return _json({"now": now, "count": len(jobs), "fields": keys, "columns": job_columns(ctl, jobs, keys)})
    return _json({"jobs": [full_job(ctl, job) for job in jobs], "now": now})


def _json(data: dict) -> web.Response:
    """A JSON reply encoded in one go (no indentation, no key sorting: the fast path)."""
    return web.Response(body=_ENCODE(data).encode(), content_type="application/json")


_ENCODE = json.JSONEncoder(separators=(",", ":")).encode


async def get_job(request: web.Request) -> web.Response:
    ctl = _ctl(request)
    job = ctl.job(_job_id(request))
    await ctl.settled()
    return web.json_response(full_job(ctl, job))


async def why_job(request: web.Request) -> web.Response:
    """Why the job waits: its reason, the last plan's start for it and what holds it there, and
    what-ifs worked out by the same policy on a copy of the state (minislurm.sched.why)."""
    from minislurm.sched import why
    ctl = _ctl(request)
    job = ctl.job(_job_id(request))
    now = ctl.clock()
    out = why.explain(ctl.state, job.job_id, now, ctl.expected, ctl.sched_nodes)
    out["now"] = now
    out["what_if"] = why.what_ifs(ctl.state, job.job_id, now, out["expected_start"]) if job.pending else []
    return web.json_response(out)


async def job_alive(request: web.Request) -> web.Response:
    """The srun that owns an allocation is still there (InactiveLimit)."""
    ctl = _ctl(request)
    job = ctl.job(_job_id(request))
    ctl.may_modify(request[USER], job)
    ctl.running.heard_from(job)
    return web.json_response({"ok": True, "state": job.state.name})


async def wait_job(request: web.Request) -> web.Response:
    """Long poll: answers when the job leaves PENDING (or ends), or after ``timeout`` seconds."""
    ctl = _ctl(request)
    job = ctl.job(_job_id(request))
    if request[USER] == job.user:
        ctl.running.heard_from(job)
    await ctl.settled()
    until = request[QUERY].get("until", "start")
    timeout = request[QUERY].get("timeout", 30.0)
    done = (lambda: job.state is not JobState.PENDING) if until == "start" else (lambda: job.state.finished)
    if not done():
        await ctl.wait_change(job.job_id, timeout)
    return web.json_response(full_job(ctl, job))


def _stop_after_answer(request: web.Request, job) -> None:
    """A running job this request stopped hears of it once the requester has its answer (a
    job that requeues or cancels itself must not be killed waiting for it)."""
    if job is not None:
        answer_then(request, lambda: _ctl(request).running.deliver_ending(job))


async def cancel(request: web.Request) -> web.Response:
    ctl, body = _ctl(request), request[BODY]
    uid = ctl.ids_of(request[USER], body.get("uid", 0), 0)[0]
    for job in await targets.each(ctl, _job_id(request), _task(request), lambda job: actions.cancel(
            ctl, request[USER], uid, job.job_id, body.get("signal"), body.get("target"),
            alone=_task(request) is not None)):
        _stop_after_answer(request, job)
    return web.json_response({"ok": True})


async def requeue(request: web.Request) -> web.Response:
    ctl, body = _ctl(request), request[BODY]
    for job in await targets.each(ctl, _job_id(request), _task(request), lambda job: actions.requeue(
            ctl, request[USER], job.job_id, bool(body.get("hold")))):
        _stop_after_answer(request, job)
    return web.json_response({"ok": True})


async def hold(request: web.Request) -> web.Response:
    ctl, body = _ctl(request), request[BODY]
    await targets.each(ctl, _job_id(request), _task(request), lambda job: actions.hold(
        ctl, request[USER], job.job_id, body.get("kind"), alone=_task(request) is not None))
    return web.json_response({"ok": True})


async def release(request: web.Request) -> web.Response:
    ctl = _ctl(request)
    await targets.each(ctl, _job_id(request), _task(request), lambda job: actions.release(
        ctl, request[USER], job.job_id))
    return web.json_response({"ok": True})


async def update_job(request: web.Request) -> web.Response:
    ctl = _ctl(request)
    await targets.each(ctl, _job_id(request), _task(request), lambda job: actions.update_job(
        ctl, request[USER], job.job_id, request[BODY]))
    return web.json_response({"ok": True})


async def complete_allocation(request: web.Request) -> web.Response:
    """The owner of an interactive allocation (srun outside a job) is done with it."""
    ctl, body = _ctl(request), request[BODY]
    job = ctl.job(_job_id(request))
    ctl.may_modify(request[USER], job)
    if job.state is JobState.PENDING:
        await actions.cancel(ctl, request[USER], ctl.ids_of(request[USER], body.get("uid", 0), 0)[0],
                             job.job_id)
    elif job.state is JobState.RUNNING and not ctl.live[job.job_id].batch:
        await ctl.running.job_ended(job.job_id, job.restart_count, exit_code=body.get("exit_code", 0),
                            signal=body.get("signal", 0))
    return web.json_response({"ok": True})


async def create_step(request: web.Request) -> web.Response:
    return web.json_response(await steps.create(_ctl(request), request[USER], _job_id(request),
                                                request[BODY]))


async def job_usage(request: web.Request) -> web.Response:
    """sstat: what the running job's batch script and steps use now, asked of its nodes."""
    return web.json_response(await steps.usage(_ctl(request), request[USER], _job_id(request)))


async def complete_step(request: web.Request) -> web.Response:
    body = request[BODY]
    await steps.complete(_ctl(request), request[USER], _job_id(request), request[PATH]["step_id"],
                         body.get("exit_code", 0), body.get("signal", 0), body.get("usage"))
    return web.json_response({"ok": True})
