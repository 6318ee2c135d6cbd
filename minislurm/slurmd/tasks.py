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

from minislurm.common.auth import AuthError
from minislurm.slurmd import env as slurm_env
from minislurm.slurmd.proc import ProcessSet
from minislurm.slurmd.spawn import identity_for, spawn

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


def step_of(claims: dict) -> dict:
    """The step's layout, from its credential alone."""
    tasks = claims["tasks"]
    return {"step_id": claims["step"], "nodes": claims["nodes"], "task_ids": tasks,
            "tasks_per_node": [len(t) for t in tasks], "ntasks": sum(len(t) for t in tasks),
            "step_gpus": claims["gpus"], "cpus_per_task": claims.get("cpus_per_task")}


async def run_step(agent: "NodeAgent", request: web.Request) -> web.StreamResponse:
    """Start this node's tasks of a step as the credential says: its user, its tasks, its GPUs.
    The request body adds only what is the user's own business: the command, its environment
    and working directory, and how to split the step's GPUs among the tasks."""
    body = await request.json()
    try:
        claims = agent.check_credential(body.get("credential", ""))
        who = identity_for(claims["user"], claims["uid"], claims["gid"])
    except AuthError as exc:
        return web.json_response({"error": str(exc)}, status=401)
    except PermissionError as exc:
        return web.json_response({"error": str(exc)}, status=403)
    trusted = {"job_id": claims["job"], "inc": claims["inc"], "restart_count": claims["inc"],
               "user": claims["user"], "uid": claims["uid"], "gid": claims["gid"]}
    job, step, node = {**body["job"], **trusted}, step_of(claims), agent.name
    argv = [str(a) for a in body["argv"]]
    if not argv:
        raise ValueError("no command to run")
    environment = {str(k): str(v) for k, v in body.get("environment", {}).items()}
    base = slurm_env.step_env(job, step, node, environment, conf=agent.conf,
                              launcher=tuple(body["launcher"]) if body.get("launcher") else None)
    cwd = str(body.get("cwd") or job["submit_dir"])
    per_task = body.get("gpus_per_task")
    per_task = per_task if isinstance(per_task, int) and per_task > 0 else None
    node_gpus = step["step_gpus"].get(node, [])
    my_tasks = step["task_ids"][step["nodes"].index(node)]
    try:
        local_job = agent.runs.admit_step(claims)
    except AuthError as exc:
        return web.json_response({"error": str(exc)}, status=401)
    procs = local_job.steps.setdefault(step["step_id"], ProcessSet())
    queue: asyncio.Queue = asyncio.Queue()
    waiters = []
    response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
    await response.prepare(request)
    try:
        for local, task in enumerate(my_tasks):
            gpus = node_gpus[local * per_task:(local + 1) * per_task] if per_task else None
            env = slurm_env.task_env(base, procid=task, localid=local, gpus=gpus)
            proc = (await spawn(argv, env, cwd, who, stdout=asyncio.subprocess.PIPE,
                                stderr=asyncio.subprocess.PIPE)).proc
            procs.procs.append(proc)
            local_job.roots.procs.append(proc)
            waiters.append(asyncio.create_task(_task(proc, task, queue)))
        await response.write((json.dumps({"started": my_tasks, "node": node}) + "\n").encode())
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
        agent.step_done(local_job, step["step_id"])
    return response
