"""The class dashboard: the live cluster in a browser, read only, served by the controller.

    GET /dashboard                   the page (static HTML, CSS and JavaScript in ``static/``)
    GET /api/v1/dashboard/view       what it shows, as one JSON view (a user token, as every route)

The page holds no data, so it is served to anyone; it reads the view with the token that
``minislurm dashboard`` puts in its link (after ``#``: a fragment never reaches a server's logs)
and asks again every second.  The view is built from what the controller already keeps, each
piece from the one place the commands read it:

* the nodes as ``sinfo`` sees them (:func:`~minislurm.ctld.present.node_views`), each GPU with
  the running job that holds it (the job's allocation);
* the queue in the order the scheduler tries it (``priority_order``), with ``squeue``'s reasons,
  ``minislurm why``'s meaning of each, and ``squeue --start``'s expected starts;
* the last backfill cycle's plan: running jobs until their time limits, the promises (expected
  start and planned nodes, ``ctl.expected`` and ``ctl.sched_nodes``), advance reservations;
* ``sshare``'s rows per account (:func:`~minislurm.ctld.fairshare.sshare`);
* recent events: nodes down or drained (``sinfo -R``) and runs lost to a node failure or
  requeued (``sacct -D``'s NODE_FAIL and REQUEUED records).

A view is shared for :data:`SHARED_FOR` seconds, so a class of viewers costs the controller
one build per half second, whatever their number.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

from aiohttp import web

from minislurm.core.hostlist import compress
from minislurm.core.states import JobState
from minislurm.ctld import accounting
from minislurm.ctld.fairshare import sshare
from minislurm.ctld.present import node_views
from minislurm.sched.order import priority_order
from minislurm.sched.why import meaning

if TYPE_CHECKING:
    from minislurm.ctld.controller import Controller

STATIC = Path(__file__).with_name("static")
PAGES = {"/dashboard": ("dashboard.html", "text/html"), "/dashboard/dashboard.js": ("dashboard.js", "text/javascript"),
         "/dashboard/dashboard.css": ("dashboard.css", "text/css")}
# Only this server's own files, scripts and styles: the page cannot load anything from elsewhere.
POLICY = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors *"
QUEUE_ROWS = 50  # the queue's first jobs are listed; the rest are counted (by reason)
EVENTS = 30
LOST = (JobState.NODE_FAIL.name, JobState.REQUEUED.name)
SHARED_FOR = 0.5  # seconds one built view answers every viewer


def view(ctl: "Controller") -> dict:
    """Everything the page shows, at the controller's ``now``."""
    now = ctl.clock()
    nodes = node_views(ctl)
    return {"cluster": ctl.config.cluster_name, "now": now, "nodes": _nodes(ctl, nodes), "running": _running(ctl),
            "queue": _queue(ctl), "plan": _plan(ctl), "shares": _shares(ctl), "events": _events(ctl, nodes)}


def _nodes(ctl: "Controller", views: list[dict]) -> list[dict]:
    """Each node's sinfo state and, per GPU, the id of the running job holding it (or None)."""
    holder = [[None] * v["gpus"] for v in views]
    for job in ctl.state.running.values():
        for n, gpus in zip(job.alloc.nodes, job.alloc.gpus):
            for g in gpus:
                holder[n][g] = job.job_id
    return [{"name": v["name"], "state": v["state"], "not_responding": "NOT_RESPONDING" in v["flags"],
             "reason": v["reason"], "gpus": holder[i]} for i, v in enumerate(views)]


def _end(start: float, length: float) -> float | None:
    """When something that starts at ``start`` and lasts ``length`` ends (None: never)."""
    return None if length == math.inf else start + length


def _running(ctl: "Controller") -> dict[int, dict]:
    """The running jobs, by id: whose they are, and their nodes (as indices into ``nodes``)
    from their start to their time limit."""
    return {job.job_id: {"id": job.display_id, "name": job.name, "user": job.user, "nodes": list(job.alloc.nodes),
                         "start": job.start_time, "end": _end(job.start_time, job.time_limit)}
            for job in ctl.state.running.values()}


def _queue(ctl: "Controller") -> dict:
    """The pending jobs in the order the scheduler tries them: the first :data:`QUEUE_ROWS`
    in full, and how many wait for each reason."""
    order = priority_order(ctl.state, ctl.queue_order)  # the controller's memo of the sorted queue
    reasons: dict[str, int] = {}
    for job in order:
        reasons[job.reason] = reasons.get(job.reason, 0) + 1
    names = ctl.state.nodes.names
    rows = [{"job_id": job.job_id, "id": job.display_id, "name": job.name, "user": job.user, "account": job.account,
             "priority": job.priority, "reason": job.reason, "meaning": meaning(job.reason),
             "nodes": job.num_nodes, "gpus": job.num_nodes * job.shape.gpus, "expected_start": ctl.expected.get(job.job_id),
             "planned_nodes": compress(names[n] for n in ctl.sched_nodes.get(job.job_id, ()))}
            for job in order[:QUEUE_ROWS]]
    return {"pending": len(order), "reasons": reasons, "jobs": rows}


def _plan(ctl: "Controller") -> dict:
    """The last backfill cycle's promises (the running jobs' bars are in ``running``) and the
    advance reservations, each on node indices from ``start`` to ``end`` (None: never)."""
    jobs, index = ctl.state.jobs, ctl.state.nodes.index
    promises = []
    for job_id, start in ctl.expected.items():
        job = jobs.get(job_id)
        if job is None or not job.pending or job_id not in ctl.sched_nodes:
            continue
        promises.append({"job_id": job_id, "id": job.display_id, "name": job.name, "user": job.user,
                         "nodes": list(ctl.sched_nodes[job_id]), "start": start, "end": _end(start, job.time_limit)})
    reservations = [{"name": r.name, "nodes": [index[n] for n in r.nodes if n in index], "start": r.start,
                     "end": None if r.end == math.inf else r.end} for r in ctl.state.reservations.values()]
    return {"promises": promises, "reservations": reservations}


def _shares(ctl: "Controller") -> list[dict]:
    """sshare's account rows (no user rows, no root): shares and usage, both normalised, and
    Fair Tree's LevelFS (their ratio against the siblings')."""
    keep = ("account", "norm_shares", "effective_usage", "level_fs")
    return [{k: r[k] for k in keep} for r in sshare(ctl)["shares"] if r["user"] is None and r["account"] != "root"]


def _events(ctl: "Controller", nodes: list[dict]) -> list[dict]:
    """The latest node troubles (sinfo -R: a node down or drained, by whom, since when) and lost
    runs (sacct -D: a run ended NODE_FAIL or REQUEUED, with the node it ran on), newest first."""
    events = [{"time": v.get("reason_time"), "kind": "node", "node": v["name"], "state": v["state"],
               "text": v["reason"], "by": v.get("reason_user")} for v in nodes if v["reason"]]
    touched = [j.job_id for j in ctl.state.jobs.values() if j.restart_count or j.state is JobState.NODE_FAIL]
    if touched:
        for r in accounting.query(ctl, job_ids=touched, duplicates=True):
            if r["step"] is None and r["state"] in LOST:
                events.append({"time": r["end"], "kind": "job", "job": r["display_id"], "state": r["state"],
                               "text": r["name"], "node": r["nodes"], "by": r["user"]})
    events.sort(key=lambda e: e["time"] or 0, reverse=True)
    return events[:EVENTS]


# -- the routes ----------------------------------------------------------------------------------
class Shared:
    """The last view built, encoded, and when (see :data:`SHARED_FOR`)."""

    def __init__(self) -> None:
        self.body, self.at = b"", -SHARED_FOR

    async def get(self, ctl: "Controller") -> bytes:
        if time.monotonic() - self.at >= SHARED_FOR:
            await ctl.settled()  # commit, then tell: the view shows only what is on disk
            began = time.perf_counter()
            data = view(ctl)
            data["build_ms"] = round((time.perf_counter() - began) * 1000, 1)
            self.body, self.at = json.dumps(data, separators=(",", ":")).encode(), time.monotonic()
        return self.body


async def page(request: web.Request) -> web.Response:
    """One of the page's files, read from the package (they are small)."""
    name, kind = PAGES[request.path]
    return web.Response(body=(STATIC / name).read_bytes(), content_type=kind, charset="utf-8",
                        headers={"Content-Security-Policy": POLICY, "Cache-Control": "no-cache"})


SHARED = web.AppKey("dashboard", Shared)
