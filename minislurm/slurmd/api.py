"""The node agent's HTTP surface: the controller's routes (``/ping``, ``/jobs/*``, with the
controller's token) and srun's (``/steps/*``, with a step credential), and the server that
answers them (:func:`serve`)."""

from __future__ import annotations

import json
import logging
import os
from typing import TYPE_CHECKING

from aiohttp import web

from minislurm.common.auth import AuthError
from minislurm.slurmd import spool as spooldir
from minislurm.slurmd.heartbeat import host_readings, ping_answer
from minislurm.slurmd.proc import become_subreaper
from minislurm.slurmd.spawn import launcher_python, runs_for_everyone
from minislurm.slurmd.stdin import take_input
from minislurm.slurmd.tasks import run_step

if TYPE_CHECKING:
    from minislurm.slurmd.agent import NodeAgent

log = logging.getLogger("minislurm.slurmd")


def make_app(agent: "NodeAgent") -> web.Application:
    def verify_ctld(request: web.Request) -> None:
        header = request.headers.get("Authorization", "")
        try:
            if not agent.signer.verify(header.removeprefix("Bearer ")).get("ctld"):
                raise AuthError("not the controller")
        except AuthError as exc:
            raise web.HTTPUnauthorized(text=json.dumps({"error": str(exc)}), content_type="application/json")

    async def ping(request):  # a controller's pings come to the heartbeat's port; this is the node's own
        verify_ctld(request)
        return web.json_response({**ping_answer(agent), **host_readings()})

    async def launch(request):
        verify_ctld(request)
        return web.json_response(await agent.launch_batch(await request.json()))

    def served(b: dict) -> dict[str, "NodeAgent"] | None:
        """The nodes a request names (``nodes``: the controller tells a process that hosts many
        once for all of them), those this process serves and reaches; None: this node alone."""
        if "nodes" not in b:
            return None
        return {n: agent.siblings[n] for n in map(str, b["nodes"])
                if n in agent.siblings and not agent.siblings[n].offline}

    async def terminate(request):
        verify_ctld(request)
        b = await request.json()
        args = (int(b["job_id"]), int(b["inc"]), b.get("why"), float(b.get("kill_wait", 30)))
        if (nodes := served(b)) is None:
            return web.json_response(await agent.terminate(*args))
        return web.json_response({"nodes": {n: await a.terminate(*args) for n, a in nodes.items()}})

    async def signal_job(request):
        verify_ctld(request)
        b = await request.json()
        args = (int(b["job_id"]), int(b["inc"]), int(b["signal"]), b.get("target", "steps"))
        if (nodes := served(b)) is None:
            return web.json_response(agent.signal_job(*args))
        return web.json_response({"nodes": {n: a.signal_job(*args) for n, a in nodes.items()}})

    async def usage(request):
        verify_ctld(request)
        b = await request.json()
        return web.json_response(agent.usage(int(b["job_id"]), int(b["inc"])))

    async def step_launch(request):
        return await run_step(agent, request)

    async def step_signal(request):
        b = await request.json()
        try:  # a long step must still take Ctrl-C when its credential has expired
            claims = agent.check_credential(b.get("credential", ""), check_expiry=False)
        except AuthError as exc:
            return web.json_response({"error": str(exc)}, status=401)
        return web.json_response(agent.signal_step(claims, int(b["signal"])))

    async def step_input(request):
        try:
            return web.json_response(await take_input(agent, await request.json()))
        except AuthError as exc:
            return web.json_response({"error": str(exc)}, status=401)
        except PermissionError as exc:
            return web.json_response({"error": str(exc)}, status=403)

    @web.middleware
    async def malformed(request, handler):
        """A malformed request gets a 400 JSON error, never a dead handler or a 500."""
        try:
            return await handler(request)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return web.json_response({"error": f"Malformed request: {exc!r}"}, status=400)

    app = web.Application(client_max_size=16 * 1024 * 1024, middlewares=[malformed])
    app.router.add_get("/ping", ping)
    app.router.add_post("/jobs/launch", launch)
    app.router.add_post("/jobs/terminate", terminate)
    app.router.add_post("/jobs/signal", signal_job)
    app.router.add_post("/jobs/usage", usage)
    app.router.add_post("/steps/launch", step_launch)
    app.router.add_post("/steps/signal", step_signal)
    app.router.add_post("/steps/input", step_input)
    return app


async def serve(agent: "NodeAgent", port: int = 0) -> web.AppRunner:
    spooldir.prepare(agent.spool)
    spooldir.purge(agent.spool)  # this agent knows no run yet: what is there is left over
    if os.geteuid() == 0 and not runs_for_everyone(launcher_python()):
        log.warning("no Python that every user may run (using %s): the jobs of users who may not run it "
                    "will fail to start", launcher_python())
    become_subreaper()
    runner = web.AppRunner(make_app(agent), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, agent.bind, port, reuse_address=True)
    await site.start()
    agent.port = site._server.sockets[0].getsockname()[1]
    agent.background.spawn(agent.register())
    return runner
