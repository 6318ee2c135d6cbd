"""Running one step's tasks on this node for srun, streaming their output back.

The reply to ``POST /steps/launch`` is a stream of JSON lines::

    {"started": [0, 1], "node": "gpu01"}
    {"t": 0, "o": "text from task 0's stdout"}
    {"t": 1, "e": "text from task 1's stderr"}
    {"t": 0, "exit": 0, "sig": 0}

Each task's exit line comes after all of its output.  If srun goes away, the tasks are killed.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

from aiohttp import web

from minislurm.ctld.auth import AuthError
from minislurm.slurmd import env as slurm_env
from minislurm.slurmd.proc import identity_for, spawn

if TYPE_CHECKING:
    from minislurm.slurmd.agent import NodeAgent

CHUNK = 65536


async def _pump(stream: asyncio.StreamReader, task: int, key: str, queue: asyncio.Queue) -> None:
    while True:
        data = await stream.read(CHUNK)
        if not data:
            return
        await queue.put({"t": task, key: data.decode("utf-8", errors="replace")})


async def _task(proc, task: int, queue: asyncio.Queue) -> None:
    await asyncio.gather(_pump(proc.stdout, task, "o", queue), _pump(proc.stderr, task, "e", queue))
    rc = await proc.wait()
    code, sig = (rc, 0) if rc >= 0 else (0, -rc)
    await queue.put({"t": task, "exit": code, "sig": sig})


async def run_step(agent: "NodeAgent", request: web.Request) -> web.StreamResponse:
    body = await request.json()
    try:
        claims = agent.check_credential(body.get("credential", ""))
    except AuthError as exc:
        return web.json_response({"error": str(exc)}, status=401)
    job, step = body["job"], body["step"]
    if claims["job"] != job["job_id"] or claims["step"] != step["step_id"]:
        return web.json_response({"error": "credential does not match the step"}, status=401)
    try:
        who = identity_for(job["user"])
    except PermissionError as exc:
        return web.json_response({"error": str(exc)}, status=400)
    node = agent.name
    i = step["nodes"].index(node)
    base = slurm_env.step_env(job, step, node, body.get("environment", {}), conf=agent.conf,
                              launcher=tuple(body["launcher"]) if body.get("launcher") else None)
    per_task = body.get("gpus_per_task")
    node_gpus = step["step_gpus"].get(node, [])
    procs = agent.step_processes(job["job_id"], claims["inc"], step["step_id"])
    local_job = agent.jobs[job["job_id"]]
    queue: asyncio.Queue = asyncio.Queue()
    waiters = []
    response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
    await response.prepare(request)
    try:
        for local, task in enumerate(step["task_ids"][i]):
            gpus = node_gpus[local * per_task:(local + 1) * per_task] if per_task else None
            env = slurm_env.task_env(base, procid=task, localid=local, gpus=gpus)
            proc = await spawn(body["argv"], env, body.get("cwd") or job["submit_dir"], who,
                               stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            procs.procs.append(proc)
            local_job.roots.procs.append(proc)
            waiters.append(asyncio.create_task(_task(proc, task, queue)))
        await response.write((json.dumps({"started": step["task_ids"][i], "node": node}) + "\n").encode())
        remaining = len(waiters)
        while remaining:
            item = await queue.get()
            if "exit" in item:
                remaining -= 1
            await response.write((json.dumps(item) + "\n").encode())
        await response.write_eof()
    except asyncio.CancelledError:
        await procs.stop(0)  # srun is gone: so are its tasks
        raise
    except ConnectionResetError:
        await procs.stop(0)
        return response
    except OSError as exc:
        await response.write((json.dumps({"error": f"launch failed: {exc}"}) + "\n").encode())
        await procs.stop(0)
    finally:
        for w in waiters:
            if not w.done():
                w.cancel()
        agent.step_done(job["job_id"], step["step_id"])
    return response
