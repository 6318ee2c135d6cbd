"""The controller's HTTP/JSON API: one handler per route (described in ``openapi.json``).

Requests reach a handler only once :mod:`minislurm.ctld.edge` has authenticated them and checked
their path, query and body against the route's schema, so handlers read typed values from
``request[PATH]``, ``request[QUERY]`` and ``request[BODY]`` and raise only :class:`SlurmError`.
"""

from __future__ import annotations

import json
import math

from aiohttp import web

from minislurm.common.auth import DEFAULT_LIFESPAN
from minislurm.core import errors
from minislurm.core.errors import SlurmError
from minislurm.core.states import JobState
from minislurm.core.views import partition_view
from minislurm.ctld import accounting, actions, health, reservations, steps
from minislurm.ctld.controller import Controller
from minislurm.ctld.edge import BODY, CTL, PATH, PREFIX, QUERY, USER, guard
from minislurm.ctld.present import full_job, job_columns, node_views
from minislurm.ctld.schema import MAX_BODY, ROUTES

MIN_JOB_AGE = 300.0  # seconds a finished job stays visible to squeue


def _ctl(request: web.Request) -> Controller:
    return request.app[CTL]


def _job_id(request: web.Request) -> int:
    return request[PATH]["job_id"]


# -- jobs ----------------------------------------------------------------------------------
async def submit(request: web.Request) -> web.Response:
    if request[BODY].get("spec", {}).get("test_only"):
        return web.json_response(await _ctl(request).test_only(request[USER], request[BODY]))
    ids = await _ctl(request).submit(request[USER], request[BODY])
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
                            (j for j in ctl.state.jobs.values() if j.job_id in ids or j.array_job_id in ids))
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


async def cancel(request: web.Request) -> web.Response:
    ctl, body = _ctl(request), request[BODY]
    await actions.cancel(ctl, request[USER], ctl.ids_of(request[USER], body.get("uid", 0), 0)[0],
                         _job_id(request),
                         body.get("signal"), body.get("target"))
    return web.json_response({"ok": True})


async def requeue(request: web.Request) -> web.Response:
    body = request[BODY]
    await actions.requeue(_ctl(request), request[USER], _job_id(request), bool(body.get("hold")))
    return web.json_response({"ok": True})


async def hold(request: web.Request) -> web.Response:
    body = request[BODY]
    await actions.hold(_ctl(request), request[USER], _job_id(request), body.get("kind"))
    return web.json_response({"ok": True})


async def release(request: web.Request) -> web.Response:
    await actions.release(_ctl(request), request[USER], _job_id(request))
    return web.json_response({"ok": True})


async def update_job(request: web.Request) -> web.Response:
    await actions.update_job(_ctl(request), request[USER], _job_id(request), request[BODY])
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


# -- nodes, partitions, accounting, priorities ------------------------------------------------
async def list_nodes(request: web.Request) -> web.Response:
    return web.json_response({"nodes": node_views(_ctl(request))})


async def update_nodes(request: web.Request) -> web.Response:
    body = request[BODY]
    await actions.update_node(_ctl(request), request[USER], body["names"], body.get("state"),
                              body.get("reason"))
    return web.json_response({"ok": True})


async def update_partition(request: web.Request) -> web.Response:
    body = request[BODY]
    await actions.update_partition(_ctl(request), request[USER], body["name"], body.get("max_time"))
    return web.json_response({"ok": True})


async def list_partitions(request: web.Request) -> web.Response:
    ctl = _ctl(request)
    return web.json_response({"partitions": [partition_view(ctl.state, p) for p in ctl.state.partitions]})


async def acct(request: web.Request) -> web.Response:
    ctl, q = _ctl(request), request[QUERY]
    users = q.get("user") or []  # sacct -u alice,bob
    rows = accounting.query(ctl, job_ids=q.get("jobs") or None, user=users[0] if len(users) == 1 else None,
                            since=q.get("since"), duplicates=q.get("duplicates") == "1")
    return web.json_response({"records": [r for r in rows if not users or r["user"] in users]})


async def priorities(request: web.Request) -> web.Response:
    from dataclasses import asdict

    from minislurm.sched.priority import multifactor
    ctl = _ctl(request)
    book = ctl.fairshare
    fs = book.factors(ctl.clock()) if book else {}
    rows = [asdict(multifactor.factors(j, ctl.state, ctl.clock(), fs)) for j in ctl.state.pending.values()]
    return web.json_response({"type": ctl.config.priority.type, "factors": rows})


async def shares(request: web.Request) -> web.Response:
    from dataclasses import asdict
    ctl = _ctl(request)
    book = ctl.fairshare
    rows = [asdict(r) for r in book.rows(ctl.clock())] if book else []
    for r in rows:
        r.update({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()})
    parents = {a.account: a.parent for a in book.tree.nodes.values() if a.user is None} if book else {}
    return web.json_response({"shares": rows, "parents": parents})


# -- tokens, config, reservations -----------------------------------------------------------
async def token(request: web.Request) -> web.Response:
    ctl, body = _ctl(request), request[BODY]
    user = body.get("username") or request[USER]
    if user != request[USER] and request[USER] not in ctl.operators:
        raise SlurmError(errors.ACCESS_DENIED)
    lifespan = int(body.get("lifespan") or DEFAULT_LIFESPAN)
    return web.json_response({"token": ctl.signer.user_token(user, lifespan), "user": user})


async def config(request: web.Request) -> web.Response:
    from minislurm.ctld.config_view import config_view
    return web.json_response(config_view(_ctl(request)))


async def list_reservations(request: web.Request) -> web.Response:
    ctl = _ctl(request)
    nodes = ctl.state.nodes
    return web.json_response({"reservations": [
        {**reservations.to_dict(r), "cpus": sum(int(nodes.cap_cpu[nodes.index[n]]) for n in r.nodes)}
        for r in ctl.state.reservations.values()]})


def _operator(request: web.Request) -> Controller:
    """Reservations are the operators' (Slurm says "Invalid user id" to anyone else)."""
    ctl = _ctl(request)
    if request[USER] not in ctl.operators:
        raise SlurmError(reservations.INVALID_USER)
    return ctl


async def create_reservation(request: web.Request) -> web.Response:
    ctl = _operator(request)
    return web.json_response({"name": await reservations.create(ctl, request[BODY], request[USER])})


async def update_reservation(request: web.Request) -> web.Response:
    ctl = _operator(request)
    await reservations.update(ctl, request[PATH]["name"], request[BODY])
    return web.json_response({"ok": True})


async def delete_reservation(request: web.Request) -> web.Response:
    ctl = _operator(request)
    await reservations.delete(ctl, request[PATH]["name"])
    return web.json_response({"ok": True})


# -- agents ------------------------------------------------------------------------------------
async def agent_register(request: web.Request) -> web.Response:
    body = request[BODY]
    if body["name"] != request[USER] or body["name"] not in _ctl(request).state.nodes.index:
        raise SlurmError(errors.INVALID_NODE_NAME)
    return web.json_response(await health.register(_ctl(request), body))


async def agent_job_ended(request: web.Request) -> web.Response:
    body, ctl = request[BODY], _ctl(request)
    job = ctl.state.jobs.get(body["job_id"])
    if body.get("usage") and job is not None and job.restart_count == body["inc"]:
        ctl.run_of(job).batch_usage = body["usage"]
    fresh = await ctl.running.job_ended(body["job_id"], body["inc"], exit_code=body.get("exit_code", 0),
                                signal=body.get("signal", 0))
    return web.json_response({"ok": True, "fresh": fresh})


async def ping(request: web.Request) -> web.Response:
    ctl = _ctl(request)
    return web.json_response({"ok": True, "cluster": ctl.config.cluster_name, "since": ctl.started_at})


async def openapi(request: web.Request) -> web.Response:
    """This API's OpenAPI 3 description."""
    from minislurm.ctld.openapi import build
    return web.json_response(build(request.app, PREFIX))


def make_app(ctl: Controller) -> web.Application:
    app = web.Application(middlewares=[guard], client_max_size=MAX_BODY)
    app[CTL] = ctl
    r = app.router
    routes = [
        ("GET", "/ping", ping), ("GET", "/openapi.json", openapi), ("GET", "/config", config),
        ("POST", "/jobs", submit), ("GET", "/jobs", list_jobs), ("GET", "/jobs/{job_id}", get_job),
        ("GET", "/jobs/{job_id}/wait", wait_job), ("POST", "/jobs/{job_id}/cancel", cancel),
        ("POST", "/jobs/{job_id}/requeue", requeue), ("POST", "/jobs/{job_id}/hold", hold),
        ("POST", "/jobs/{job_id}/release", release), ("POST", "/jobs/{job_id}/update", update_job),
        ("POST", "/jobs/{job_id}/complete", complete_allocation), ("POST", "/jobs/{job_id}/alive", job_alive),
        ("POST", "/jobs/{job_id}/steps", create_step),
        ("POST", "/jobs/{job_id}/steps/{step_id}/complete", complete_step),
        ("GET", "/jobs/{job_id}/usage", job_usage),
        ("GET", "/nodes", list_nodes), ("POST", "/nodes/update", update_nodes),
        ("POST", "/partitions/update", update_partition),
        ("GET", "/partitions", list_partitions), ("GET", "/acct", acct), ("GET", "/priorities", priorities),
        ("GET", "/shares", shares), ("POST", "/token", token),
        ("GET", "/reservations", list_reservations), ("POST", "/reservations", create_reservation),
        ("POST", "/reservations/{name}", update_reservation), ("DELETE", "/reservations/{name}", delete_reservation),
        ("POST", "/agents/register", agent_register), ("POST", "/agents/job-ended", agent_job_ended),
    ]
    for method, path, handler in routes:
        if (method, path) not in ROUTES:  # every input is checked: no route without a schema
            raise RuntimeError(f"no schema for {method} {path} in minislurm.ctld.schema")
        r.add_route(method, PREFIX + path, handler)
    return app
