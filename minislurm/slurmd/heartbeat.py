"""The agent's heartbeat: the controller's pings answered on a path of their own.

A ping asks only "are you there, and what do you run?", so its answer must not wait behind the
work the agent does for its jobs on its event loop (starting and watching tasks, relaying
their input, reading /proc for their usage): on a loaded machine that queue can be seconds
long, and a node whose answer comes after SlurmdTimeout is set DOWN though nothing failed.
So each agent process answers pings from a thread of its own, with its own event loop and
port (``GET /ping/NODE``), for every node it hosts; the answer is read from the agents' state
as it is (a snapshot: the main loop changes it, this thread only reads).  The node's other
routes stay where they were.  Like slurmd, which answers each request in a thread of its
own, a node whose jobs keep its main loop busy still answers at once.

A crashed or cut-off virtual node answers nothing here either (``agent.offline``, or it is no
longer hosted), as its own port does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from typing import TYPE_CHECKING

from aiohttp import web

from minislurm.common.auth import AuthError

if TYPE_CHECKING:
    from minislurm.slurmd.agent import NodeAgent

log = logging.getLogger("minislurm.slurmd")


def host_readings() -> dict:
    """What slurmd reports of its machine with every answer, for ``scontrol show node``'s
    ``CPULoad`` (the 1-minute load average) and ``FreeMem`` (MB available, /proc/meminfo).
    Virtual nodes on one machine all report that machine's."""
    out: dict = {}
    try:
        out["cpu_load"] = round(os.getloadavg()[0], 2)
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            kb = next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:"))
        out["free_mem"] = kb // 1024
    except (OSError, StopIteration, ValueError, IndexError):
        pass
    return out


def ping_answer(agent: "NodeAgent") -> dict:
    """The jobs the node runs (for fencing), the ends it has not yet reported and the host's
    load and free memory.  Safe from another thread: each collection is copied in one step
    before it is read."""
    runs = list(agent.runs.live.values())
    return {"jobs": [[j.job_id, j.inc] for j in runs if j.alive()],
            "finished": [[j, i, c, s] for (j, i), (c, s) in list(agent.unreported.items())], **host_readings()}


class Heartbeat:
    """One thread, one port, for the pings of every node in ``agents`` (name -> agent, the
    host's own dict: a node booted again is found under its name)."""

    def __init__(self, agents: dict[str, "NodeAgent"], bind: str):
        self.agents, self.bind = agents, bind
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)

    def start(self) -> int:
        self._thread.start()
        self._ready.wait(30)
        if not self.port:
            raise RuntimeError("the heartbeat thread did not start")
        return self.port

    def stop(self) -> None:
        if self._loop is not None and self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(5)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self._listen())
        self._ready.set()
        self._loop.run_forever()

    async def _listen(self) -> None:
        app = web.Application()
        app.router.add_get("/ping/{node}", self._ping)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.bind, 0, reuse_address=True)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    async def _ping(self, request: web.Request) -> web.Response:
        agent = self.agents.get(request.match_info["node"])
        if agent is None or agent.offline:
            raise web.HTTPNotFound()  # as its closed port would, it says nothing useful
        try:
            if not agent.signer.verify(request.headers.get("Authorization", "").removeprefix("Bearer ")).get("ctld"):
                raise AuthError("not the controller")
        except AuthError as exc:
            raise web.HTTPUnauthorized(text=json.dumps({"error": str(exc)}), content_type="application/json")
        return web.json_response(ping_answer(agent))
