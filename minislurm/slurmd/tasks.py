"""Running one step's tasks for srun, streaming their output back: on this node, or on a tree of
nodes (Slurm's TreeWidth fan-out), so srun opens a few connections, not one per node.

The reply to ``POST /steps/launch`` is a stream of JSON lines::

    {"started": [0, 1], "node": "gpu01"}
    {"t": 0, "o": "text from task 0's stdout"}
    {"t": 1, "e": "text from task 1's stderr"}
    {"t": 0, "exit": 0, "sig": 0}
    {"usage": {"cpu": 1.5, "rss": 61440, "ntasks": 2, "tasks": {"0": {"cpu": 0.8, "rss": 30720}, ...},
               "gpu_note": "no real GPU"}, "node": "gpu01"}
    {"node": "gpu01", "done": true}

Each task's exit line comes after all of its output, and a node's ``done`` after its tasks'
exits.  A body with ``tree`` (node names, this node first) asks for those nodes' tasks too: the
nodes this process hosts (virtual nodes, :mod:`minislurm.slurmd.host`) start theirs here, the
others are split into at most ``tree_width`` runs, each passed on to its first node at the
address the credential binds; their lines come back through this stream, with ``{"node": N,
"failed": why}`` for a node that refused and ``{"node": N, "lost": why}`` for one whose line
went dead.  Every node checks the credential for itself.  If srun goes away, the tasks (and the
connections passed on, and so their tasks) are killed.  The tasks' stdin (pipes fed by srun, or
task 0's pseudo-terminal with ``--pty``) is wired as :mod:`minislurm.slurmd.stdin` says;
``output_file``, ``error_file`` and ``input_file`` (``srun -o %t.out``) are each task's own
files, opened by the launcher as the user.
"""

from __future__ import annotations

import asyncio
import codecs
import functools
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Awaitable, Callable

import aiohttp
from aiohttp import web

from minislurm.common.auth import AuthError
from minislurm.core import rlimits
from minislurm.core.layout import span_requests, task_gpus, tree_spans
from minislurm.slurmd import env as slurm_env
from minislurm.slurmd.proc import ProcessSet
from minislurm.core.patterns import expand_pattern
from minislurm.slurmd.spawn import Identity, Stdio, identity_for, spawn
from minislurm.slurmd.stdin import StepInput, Wiring
from minislurm.slurmd.usage import Meter

if TYPE_CHECKING:
    from minislurm.slurmd.agent import NodeAgent

CHUNK = 65536
Emit = Callable[[dict], Awaitable[None]]


async def _pump(stream: asyncio.StreamReader, task: int, key: str, queue: asyncio.Queue) -> None:
    text = codecs.getincrementaldecoder("utf-8")(errors="replace")  # a character split between reads stays whole
    while True:
        data = await stream.read(CHUNK)
        chunk = text.decode(data, final=not data)
        if chunk:
            await queue.put({"t": task, key: chunk})
        if not data:
            return


EPILOG_WAIT = 5.0  # seconds a task epilog may run before it is killed (slurmstepd's bound)


async def _task(proc, task: int, outputs: dict[str, asyncio.StreamReader], queue: asyncio.Queue,
                meter: Meter, epilog: Callable[[], Awaitable[str]] | None = None) -> None:
    """Relay the task's output (``o``, ``e``: none when it goes to /dev/null), then its exit,
    after its epilog has run (srun hears of the exit only then) and what it made slurmstepd say."""
    await asyncio.gather(*(_pump(stream, task, key, queue) for key, stream in outputs.items()))
    meter.take(search=False)  # its output is closed: it is exiting, its CPU time (nearly) final
    rc = await proc.wait()
    if epilog is not None and (said := await epilog()):
        await queue.put({"t": task, "e": said})
    code, sig = (rc, 0) if rc >= 0 else (0, -rc)
    await queue.put({"t": task, "exit": code, "sig": sig})


async def task_epilog(path: str, env: dict[str, str], cwd: str, who, node: str) -> str:
    """``srun --task-epilog``: run as the task's user, in its folder, with its environment and
    ``SLURM_SCRIPT_CONTEXT=epilog_task``, once the task has exited; its output is dropped and
    after EPILOG_WAIT seconds it is killed.  Returns slurmstepd's lines for the task's stderr
    ("" when it ran and exited 0), worded as 22.05's on the twin (``status`` is the raw wait
    status: 1024 for exit 4, 9 for a kill); the task's own exit code stays as it was."""
    error = f"slurmstepd-{node}: error: "
    if not (path.startswith("/") and os.path.isfile(path) and os.stat(path).st_mode & 0o111):
        return f"{error}Could not run user task_epilog [{path}]: access denied\n{error}TaskEpilog failed status=-1\n"
    try:
        started = await spawn([path], {**env, "SLURM_SCRIPT_CONTEXT": "epilog_task"}, cwd, who)
    except OSError:
        return f"{error}TaskEpilog failed status=-1\n"
    try:
        rc = await asyncio.wait_for(started.proc.wait(), EPILOG_WAIT)
    except asyncio.TimeoutError:
        await ProcessSet([started.proc]).stop(0)
        rc = -9
    status = rc << 8 if rc >= 0 else -rc
    return f"{error}TaskEpilog failed status={status}\n" if status else ""


def step_of(claims: dict) -> dict:
    """The step's layout, from its credential alone."""
    tasks = claims["tasks"]
    return {"step_id": claims["step"], "nodes": claims["nodes"], "task_ids": tasks,
            "tasks_per_node": [len(t) for t in tasks], "ntasks": sum(len(t) for t in tasks),
            "step_gpus": claims["gpus"], "node_cpus": claims.get("cpus"), "cpus_per_task": claims.get("cpus_per_task")}


def _files_of(body: dict, job: dict, step: dict, node: str, cwd: str) -> Callable[[int], Stdio | None]:
    """Each task's own ``srun -o/-e/-i`` files on this node (names with ``%t``, ``%n`` or ``%N``,
    expanded here as slurmstepd does; relative to the step's working directory), for the
    launcher to open as the user; a stream not named is relayed to srun.  The first task of this node
    to name a file truncates it (unless ``--open-mode=append``), the others append to it."""
    names = {key: body.get(f"{key}_file") for key in ("output", "error", "input")}
    for key, value in names.items():
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{key} must be a file name")
    if not any(names.values()):
        return lambda task: None
    append = body.get("open_mode") == "append"
    index = step["nodes"].index(node)
    opened: set[str] = set()

    def path(pattern: str | None, task: int) -> str:
        if not pattern:
            return ""
        name = expand_pattern(pattern, job_id=job["job_id"], job_name=job.get("name", ""), user=job["user"],
                              array_job_id=job.get("array_job_id"), array_task_id=job.get("array_task_id"),
                              node=node, node_index=index, step_id=step["step_id"], task_id=task,
                              restart_count=job.get("restart_count", 0))
        return name if name.startswith("/") else f"{cwd.rstrip('/')}/{name}"

    def files(task: int) -> Stdio:
        out, err, inp = (path(names[k], task) for k in ("output", "error", "input"))
        first = not ({out, err} - {""}) & opened
        opened.update({out, err} - {""})
        return Stdio(inp or None, out, err, "step-append" if append or not first else "step-truncate")
    return files


@dataclass
class _Launch:
    """What a launch request asks of every node it names, worked out once for all the nodes of
    this process that it names (hundreds of virtual nodes: see :func:`_tree`)."""
    who: Identity
    job: dict
    step: dict
    argv: list[str]
    environment: dict[str, str]
    common: dict[str, str]  # slurm_env.step_common
    cwd: str
    per_task: int | None
    wiring: Wiring
    epilog: str

    @classmethod
    def of(cls, body: dict, claims: dict, conf: str | None) -> "_Launch":
        who = identity_for(claims["user"], claims["uid"], claims["gid"])
        trusted = {"job_id": claims["job"], "inc": claims["inc"], "restart_count": claims["inc"],
                   "user": claims["user"], "uid": claims["uid"], "gid": claims["gid"]}
        job, step = {**body["job"], **trusted}, step_of(claims)
        argv = [str(a) for a in body["argv"]]
        if not argv:
            raise ValueError("no command to run")
        environment = {str(k): str(v) for k, v in body.get("environment", {}).items()}
        # Only the limits a task would not inherit anyway: the others would cost every task the
        # launcher's start instead of the shell's.
        environment = {**rlimits.without_sent(environment), **rlimits.changes(environment)}
        epilog = body.get("task_epilog") or ""
        if not isinstance(epilog, str):
            raise ValueError("task_epilog must be a file name")
        common = slurm_env.step_common(job, step, environment, conf=conf,
                                       launcher=tuple(body["launcher"]) if body.get("launcher") else None)
        per_task = body.get("gpus_per_task")
        per_task = per_task if isinstance(per_task, int) and per_task > 0 else None
        return cls(who, job, step, argv, environment, common, str(body.get("cwd") or job["submit_dir"]), per_task,
                   Wiring.of(body), epilog)


def _admit(agent: "NodeAgent", body: dict, shared: dict | None = None) -> Callable[[Emit], Awaitable[None]]:
    """Check the request for this node (the credential, the user, the run: AuthError or
    PermissionError; a malformed body: ValueError, KeyError, TypeError) and return what runs
    its tasks.  ``shared``: where the nodes of one request keep their :class:`_Launch`."""
    claims = agent.check_credential(body.get("credential", ""))
    launch = (shared or {}).get(agent.conf)
    if launch is None:
        launch = _Launch.of(body, claims, agent.conf)
        if shared is not None:
            shared[agent.conf] = launch
    who, job, step, node, argv, cwd = launch.who, launch.job, launch.step, agent.name, launch.argv, launch.cwd
    epilog, per_task, wiring = launch.epilog, launch.per_task, launch.wiring
    base = slurm_env.step_env(job, step, node, launch.environment, common=launch.common)
    node_gpus = step["step_gpus"].get(node, [])
    my_tasks = step["task_ids"][step["nodes"].index(node)]
    files = _files_of(body, job, step, node, cwd)
    local_job = agent.runs.admit_step(claims)

    async def run(emit: Emit) -> None:
        """Start this node's tasks as the credential says (its user, its tasks, its GPUs) and
        emit their lines until all have exited.  The body adds only what is the user's own
        business: the command, its environment and working directory, and how to split the
        GPUs among the tasks."""
        procs = local_job.steps.setdefault(step["step_id"], ProcessSet())
        queue: asyncio.Queue = asyncio.Queue()
        waiters = []
        meter = local_job.meters[step["step_id"]] = Meter(procs, tasks=my_tasks, gpus=node_gpus,
                                                            node_gpus=agent.gpus)
        step_input = StepInput() if wiring.any_input(my_tasks) else None
        local_job.notices[step["step_id"]] = queue
        if step_input:
            local_job.inputs[step["step_id"]] = step_input
        try:
            for local, task in enumerate(my_tasks):
                env = slurm_env.task_env(base, procid=task, localid=local, gpus=task_gpus(node_gpus, local, per_task))
                proc, outputs, failed = await wiring.start(argv, env, cwd, who, task, step_input, files(task))
                if failed:  # slurmstepd's line; the task exits 1
                    await queue.put({"t": task, "e": f"slurmstepd-{node}: error: {failed}\n"})
                procs.procs.append(proc)
                local_job.roots.procs.append(proc)
                after = functools.partial(task_epilog, epilog, env, cwd, who, node) if epilog else None
                waiters.append(asyncio.create_task(_task(proc, task, outputs, queue, meter, after)))
            await emit({"started": my_tasks, "node": node})
            remaining = len(waiters)
            while remaining:
                item = await queue.get()
                if "exit" in item:
                    remaining -= 1
                await emit(item)
            await emit({"usage": meter.stop(), "node": node})
            await emit({"node": node, "done": True})
        except (asyncio.CancelledError, ConnectionResetError):
            await procs.stop(0)  # srun is gone: so are its tasks
            raise
        except OSError as exc:
            await emit({"error": f"launch failed: {exc}", "node": node})
            await procs.stop(0)
        finally:
            for w in waiters:
                if not w.done():
                    w.cancel()
            meter.stop()
            local_job.meters.pop(step["step_id"], None)
            local_job.notices.pop(step["step_id"], None)
            if step_input:
                local_job.inputs.pop(step["step_id"], None)
                step_input.abort()
            agent.step_done(local_job, step["step_id"])
    return run


async def run_step(agent: "NodeAgent", request: web.Request) -> web.StreamResponse:
    body = await request.json()
    try:
        run = _tree(agent, body) if "tree" in body else _admit(agent, body)
    except AuthError as exc:
        return web.json_response({"error": str(exc)}, status=401)
    except PermissionError as exc:
        return web.json_response({"error": str(exc)}, status=403)
    response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
    await response.prepare(request)
    try:
        await run(_Lines(response).emit)
        await response.write_eof()
    except ConnectionResetError:
        pass
    return response


class _Lines:
    """The reply's lines, written together when several are made in one turn of the event loop
    (a launch of hundreds of nodes makes four lines a node: a write each cost more than the
    lines).  Every line's producer waits until its line is written, and learns if it could not
    be (srun has gone)."""

    def __init__(self, response: web.StreamResponse):
        self.response = response
        self.pending: list[str] = []
        self.batch: asyncio.Future | None = None
        self.lock = asyncio.Lock()  # batches in the order they were made

    async def emit(self, item: dict) -> None:
        self.pending.append(json.dumps(item) + "\n")
        if self.batch is None:
            self.batch = asyncio.ensure_future(self._write())
            self.batch.add_done_callback(lambda done: done.cancelled() or done.exception())  # seen, if by no one else
        await asyncio.shield(self.batch)

    async def _write(self) -> None:
        await asyncio.sleep(0)  # the lines the other producers make in this turn
        lines, self.pending, self.batch = self.pending, [], None
        async with self.lock:
            await self.response.write("".join(lines).encode())


async def _sibling(agent: "NodeAgent", body: dict, emit: Emit, shared: dict) -> None:
    try:
        run = _admit(agent, body, shared)
    except (AuthError, PermissionError, ValueError, KeyError, TypeError, IndexError) as exc:
        await emit({"node": agent.name, "failed": str(exc)})
        return
    await run(emit)


async def _pass_on(session: aiohttp.ClientSession, addr: str | None, request: bytes, nodes: list[str],
                   emit: Emit) -> None:
    """Hand ``nodes`` to the first one's agent and relay its stream; a node left unfinished
    when the stream ends is reported lost (srun then waits for the controller's verdict)."""
    finished: set[str] = set()
    try:
        if addr is None:
            raise OSError("no address for this node in the credential")
        async with session.post(f"http://{addr}/steps/launch", data=request,
                                headers={"Content-Type": "application/json"}) as r:
            if r.status != 200:
                why = (await r.json(content_type=None) or {}).get("error", f"HTTP {r.status}")
                for node in nodes:
                    await emit({"node": node, "failed": why})
                return
            async for line in r.content:
                item = json.loads(line)
                if item.get("done") or "failed" in item or "lost" in item:
                    finished.add(item["node"])
                await emit(item)
        why = "the connection closed"
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError, ValueError) as exc:
        why = str(exc) or type(exc).__name__
    for node in nodes:
        if node not in finished:
            await emit({"node": node, "lost": why})


def _tree(agent: "NodeAgent", body: dict) -> Callable[[Emit], Awaitable[None]]:
    """What runs the tasks of every node of ``body["tree"]`` (the credential checked here first:
    a request that is not the step's gets nothing started and nothing passed on)."""
    tree = [str(n) for n in body["tree"]]
    addrs = agent.check_credential(body.get("credential", "")).get("addrs") or {}
    here = [agent.siblings[n] for n in tree if n in agent.siblings]
    elsewhere = [n for n in tree if n not in agent.siblings]
    width = body.get("tree_width")
    width = width if isinstance(width, int) and width > 0 else 50

    async def run(emit: Emit) -> None:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=10)) as session:
            shared: dict = {}
            work = [asyncio.create_task(_sibling(a, body, emit, shared)) for a in here]
            request = span_requests(body) if elsewhere else None
            work += [asyncio.create_task(_pass_on(session, addrs.get(span[0]), request(span), span, emit))
                     for span in tree_spans(elsewhere, width)]
            try:
                await asyncio.gather(*work)
            finally:
                for w in work:
                    w.cancel()
                await asyncio.gather(*work, return_exceptions=True)
    return run
