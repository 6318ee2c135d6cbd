"""The controller's HTTP/JSON API: one handler per route (described in ``openapi.json``); the
``/jobs`` routes are in :mod:`.api_jobs`, the others here.

Requests reach a handler only once :mod:`minislurm.ctld.edge` has authenticated them and checked
their path, query and body against the route's schema, so handlers read typed values from
``request[PATH]``, ``request[QUERY]`` and ``request[BODY]`` and raise only :class:`SlurmError`.
"""

from __future__ import annotations

import time

from aiohttp import web

from minislurm.common.auth import DEFAULT_LIFESPAN
from minislurm.core import errors
from minislurm.core.errors import SlurmError
from minislurm.core.views import partition_view
from minislurm.ctld import accounting, actions, dashboard, health, metrics, reservations
from minislurm.ctld.api_jobs import (cancel, complete_allocation, complete_step, create_step, get_job, hold,
                                      job_alive, job_usage, list_jobs, release, requeue, submit, update_job,
                                      wait_job, why_job)
from minislurm.ctld.controller import Controller
from minislurm.ctld.edge import BODY, CTL, METRICS, PATH, PREFIX, QUERY, USER, guard
from minislurm.ctld.present import node_views
from minislurm.ctld.schema import MAX_BODY, ROUTES


def _ctl(request: web.Request) -> Controller:
    return request.app[CTL]


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
    from minislurm.ctld.fairshare import sshare
    return web.json_response(sshare(_ctl(request)))


async def list_associations(request: web.Request) -> web.Response:
    from minislurm.ctld.associations import view
    ctl = _ctl(request)
    return web.json_response({"cluster": ctl.config.cluster_name, "associations": view(ctl.associations())})


async def change_associations(request: web.Request) -> web.Response:
    """sacctmgr add/modify/delete: the operators' (Slurm's "Access/permission denied" to anyone
    else); with ``commit`` the change is in accounts.conf, on disk, before the answer."""
    from minislurm.ctld.associations import change
    ctl, body = _ctl(request), request[BODY]
    if request[USER] not in ctl.operators:
        raise SlurmError(errors.ACCESS_DENIED)
    return web.json_response(change(ctl, body["words"], bool(body.get("commit"))))


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


# -- sdiag -------------------------------------------------------------------------------------
async def diag(request: web.Request) -> web.Response:
    ctl = _ctl(request)
    began = time.perf_counter()
    for _ in range(1000):  # sdiag's "Latency for 1000 calls to gettimeofday()"
        time.time()
    latency = int((time.perf_counter() - began) * 1e6)
    return web.json_response(ctl.stats.report(ctl.clock(), len(ctl.state.pending), len(ctl.state.running),
                                              ctl.agent_calls, latency))


async def diag_reset(request: web.Request) -> web.Response:
    """``sdiag --reset``: an operator's (anyone else: Slurm's "Access/permission denied")."""
    ctl = _ctl(request)
    if request[USER] not in ctl.operators:
        raise SlurmError(errors.ACCESS_DENIED)
    ctl.stats.reset(ctl.clock())
    return web.json_response({"ok": True})


async def metrics_page(request: web.Request) -> web.Response:
    """OpenMetrics (minislurm.ctld.metrics): ``/metrics`` lists the endpoints."""
    ctl, endpoint = _ctl(request), request.path.removeprefix("/metrics").lstrip("/")
    render = {"": metrics.index, "jobs": lambda: metrics.jobs(ctl.state),
              "jobs-users-accts": lambda: metrics.users_and_accounts(ctl.state),
              "nodes": lambda: metrics.nodes(ctl.state), "partitions": lambda: metrics.partitions(ctl.state),
              "scheduler": lambda: metrics.scheduler(ctl.stats, ctl.stats.serving, ctl.agent_calls)}
    text = render[endpoint]()
    kind = "text/plain; charset=utf-8" if not endpoint else metrics.CONTENT_TYPE
    return web.Response(text=text, headers={"Content-Type": kind})


async def dashboard_view(request: web.Request) -> web.Response:
    """What the class dashboard shows (minislurm.ctld.dashboard), one view shared by its viewers."""
    return web.Response(body=await request.app[dashboard.SHARED].get(_ctl(request)), content_type="application/json")


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
    app[dashboard.SHARED] = dashboard.Shared()
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
        ("GET", "/jobs/{job_id}/usage", job_usage), ("GET", "/jobs/{job_id}/why", why_job),
        ("GET", "/nodes", list_nodes), ("POST", "/nodes/update", update_nodes),
        ("POST", "/partitions/update", update_partition),
        ("GET", "/partitions", list_partitions), ("GET", "/acct", acct), ("GET", "/priorities", priorities),
        ("GET", "/shares", shares), ("POST", "/token", token),
        ("GET", "/associations", list_associations), ("POST", "/associations", change_associations),
        ("GET", "/reservations", list_reservations), ("POST", "/reservations", create_reservation),
        ("POST", "/reservations/{name}", update_reservation), ("DELETE", "/reservations/{name}", delete_reservation),
        ("GET", "/diag", diag), ("POST", "/diag/reset", diag_reset), ("GET", "/dashboard/view", dashboard_view),
        ("POST", "/agents/register", agent_register), ("POST", "/agents/job-ended", agent_job_ended),
    ]
    for method, path, handler in routes:
        if (method, path) not in ROUTES:  # every input is checked: no route without a schema
            raise RuntimeError(f"no schema for {method} {path} in minislurm.ctld.schema")
        r.add_route(method, PREFIX + path, handler)
    for path in METRICS:  # where Prometheus scrapes slurmctld: not under the API's prefix
        r.add_route("GET", path, metrics_page)
    for path in dashboard.PAGES:  # the dashboard's page and files (their data: /dashboard/view above)
        if ("GET", path) in ROUTES:  # the edge tells routes apart by their path below /api/v1
            raise RuntimeError(f"{path} is the dashboard's and an API route's")
        r.add_route("GET", path, dashboard.page)
    return app
