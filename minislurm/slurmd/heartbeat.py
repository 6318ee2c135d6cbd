"""The agent's heartbeat: the controller's pings answered by a process of its own.

A ping asks only "are you there, and what do you run?", so its answer must not wait behind the
work the agent does for its jobs on its event loop (starting and watching tasks, relaying their
input, reading /proc for their usage): on a loaded machine that queue can be seconds long, and
a node whose answer comes after SlurmdTimeout is set DOWN though nothing failed.  A thread is
not enough: it needs the interpreter lock, which the busy loop holds.  So each agent process
starts one heartbeat process (``python -m minislurm.slurmd.heartbeat BIND``), which shares no
lock with it, listens on a port of its own (the controller's token alone, as the node's own
``/ping``) and answers for every node its agent hosts: ``GET /ping`` for all of them in one
answer (the controller's ping round makes one request per agent process, not one per node, so
a machine of 256 virtual nodes costs it a few requests a round), ``GET /ping/NODE`` for one.

What it answers with comes from the agent's loop: every :data:`BEAT` seconds the loop writes,
down a pipe, the time it wrote and the machine's readings, and each node it serves with that
node's ping answer (the jobs it runs, the ends it has not reported) when any has changed
since the last beat (hundreds of nodes, four times a second).  So the heartbeat knows which
nodes its agent hosts (a crashed, cut-off or no longer hosted node is absent: 404, as its
closed port would say), and how long ago the loop last beat:

- under :data:`FRESH` seconds: the answer as the loop wrote it;
- up to ``wedged`` seconds (:data:`WEDGED` by default): ``{"busy": AGE}`` and no job list.  The
  agent is alive but slow (its process still writes to the pipe, or the pipe would have closed):
  the controller counts the node as responding but neither fences nor looks for lost jobs on
  a list that old;
- later: 503.  A loop that has not beaten for that long is wedged, and the node goes DOWN
  SlurmdTimeout later, as one that does not answer does.  The bound is generous (a minute,
  against a SlurmdTimeout of seconds) because a starved loop is not a dead one.

It runs at nice -10 (when the agent runs as root, as slurmd does), so on a machine whose CPUs
jobs keep busy the kernel runs it ahead of them: a ping's answer waits for neither the agent's
loop nor the jobs' tasks.  (Slurm does not renice anything; confining jobs to their CPUs is
what cgroups do there, which minislurm does not use.)

It dies with its agent: the pipe's end (EOF) tells it its agent is gone (and the kernel, by
PR_SET_PDEATHSIG, kills it should it miss that), so a kill -9 of the agent closes its heartbeat's
port within a second and its nodes go DOWN SlurmdTimeout after their last answer.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import logging
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from minislurm.slurmd.agent import NodeAgent

log = logging.getLogger("minislurm.slurmd")

BEAT = 0.25  # seconds between the agent loop's beats
FRESH = 2.0  # a beat younger than this is the answer
WEDGED = 60.0  # a loop silent for longer is wedged: its nodes answer nothing


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
    """The jobs the node runs (for fencing) and the ends it has not yet reported."""
    runs = list(agent.runs.live.values())
    return {"jobs": [[j.job_id, j.inc] for j in runs if j.alive()],
            "finished": [[j, i, c, s] for (j, i), (c, s) in list(agent.unreported.items())]}


# -- the agent's side ------------------------------------------------------------------------

class Heartbeat:
    """The heartbeat process of one agent process, fed the answers of the nodes in ``agents``
    (name -> agent, the host's own dict: a node booted again is found under its name)."""

    def __init__(self, agents: dict[str, "NodeAgent"], bind: str, key: bytes, wedged: float | None = None):
        self.agents, self.bind, self.key = agents, bind, key
        self.wedged = WEDGED if wedged is None else wedged
        self.port = 0
        self.proc: asyncio.subprocess.Process | None = None
        self._beating: asyncio.Task | None = None
        self._told: dict | None = None  # the nodes' answers as last written

    async def start(self) -> int:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "minislurm.slurmd.heartbeat", self.bind, str(self.wedged), str(os.getpid()),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        self.proc.stdin.write(self.key.hex().encode() + b"\n")  # never on a command line
        self.beat()
        line = await asyncio.wait_for(self.proc.stdout.readline(), 30)
        if not line.strip().isdigit():
            raise RuntimeError("the heartbeat process did not start")
        self.port = int(line)
        self._beating = asyncio.ensure_future(self._beat_forever())
        return self.port

    def beat(self) -> None:
        """Tell the heartbeat which nodes are served, what each answers, and that the loop runs."""
        if self.proc is None or self.proc.stdin.is_closing():
            return
        beat: dict = {"t": time.monotonic(), "host": host_readings()}  # one reading of the machine for all its nodes
        nodes = {name: ping_answer(a) for name, a in list(self.agents.items()) if not a.offline}
        if nodes != self._told:
            beat["nodes"] = self._told = nodes
        self.proc.stdin.write(json.dumps(beat).encode() + b"\n")

    async def _beat_forever(self) -> None:
        while True:
            await asyncio.sleep(BEAT)
            try:
                self.beat()
                await self.proc.stdin.drain()
            except (ConnectionError, RuntimeError) as exc:  # it died: nodes go silent, as they should
                log.error("the heartbeat process is gone: %s", exc)
                return

    async def stop(self) -> None:
        if self._beating is not None:
            self._beating.cancel()
        if self.proc is not None and self.proc.returncode is None:
            self.proc.stdin.close()  # its EOF: it exits
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except asyncio.TimeoutError:
                self.proc.kill()
                await self.proc.wait()


# -- the heartbeat process -------------------------------------------------------------------

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """The kernel kills this process when the one that started it ends (Linux only; the pipe's
    EOF is the portable way and comes first)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class Answers:
    """What the heartbeat knows: the agent loop's last beat."""

    def __init__(self, wedged: float, clock: Callable[[], float] = time.monotonic):
        self.wedged, self.clock = wedged, clock
        self.beat_at = clock()
        self.nodes: dict[str, dict] = {}
        self.host: dict = {}  # the machine's readings, part of every node's answer

    def take(self, line: bytes) -> None:
        """A beat: its time and readings, and the nodes' answers when they have changed."""
        beat = json.loads(line)
        self.beat_at, self.host = float(beat["t"]), beat.get("host") or {}
        self.nodes = beat.get("nodes", self.nodes)

    def answer(self, node: str) -> tuple[int, dict]:
        """(HTTP status, body) of a ping of ``node``, the caller already known to be the controller."""
        if node not in self.nodes:
            return 404, {"error": f"{node} is not served here"}
        age = self.clock() - self.beat_at
        if age < FRESH:
            return 200, {**self.nodes[node], **self.host}
        if age < self.wedged:
            return 200, {"busy": round(age, 1)}
        return 503, {"error": f"the agent's loop has not run for {age:.0f} s"}

    def answer_all(self) -> tuple[int, dict]:
        """(HTTP status, body) of a ping of every node served: ``{"nodes": {NODE: answer}}``."""
        if not self.nodes:
            return 404, {"error": "no node is served here"}
        first = self.answer(next(iter(self.nodes)))
        if first[0] != 200:  # one loop beats for all its nodes: wedged for one, wedged for all
            return first
        return 200, {"nodes": {node: self.answer(node)[1] for node in self.nodes}}


async def serve(bind: str, key: bytes, wedged: float) -> None:
    from aiohttp import web

    from minislurm.common.auth import AuthError, Signer

    signer, answers = Signer(key), Answers(wedged)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    def controller_only(request: web.Request) -> None:
        try:
            if not signer.verify(request.headers.get("Authorization", "").removeprefix("Bearer ")).get("ctld"):
                raise AuthError("not the controller")
        except AuthError as exc:
            raise web.HTTPUnauthorized(text=json.dumps({"error": str(exc)}), content_type="application/json")

    async def ping_all(request: web.Request) -> web.Response:
        controller_only(request)
        status, body = answers.answer_all()
        return web.json_response(body, status=status)

    async def ping(request: web.Request) -> web.Response:
        controller_only(request)
        status, body = answers.answer(request.match_info["node"])
        return web.json_response(body, status=status)

    app = web.Application()
    app.router.add_get("/ping", ping_all)
    app.router.add_get("/ping/{node}", ping)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, bind, 0, reuse_address=True)
    await site.start()
    sys.stdout.write(f"{site._server.sockets[0].getsockname()[1]}\n")
    sys.stdout.flush()
    while True:
        line = await reader.readline()
        if not line:  # its agent is gone
            break
        try:
            answers.take(line)
        except (ValueError, KeyError, TypeError):
            pass
    await runner.cleanup()


def _line(fd: int) -> bytes:
    """One line read unbuffered, so nothing after it is taken from the pipe the loop reads."""
    got = b""
    while not got.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte:
            break
        got += byte
    return got


NICE = -10  # ahead of the jobs (nice 0) for the CPU: its work is a few answers a second


def main(argv: list[str]) -> int:
    """``BIND WEDGED AGENT_PID``; the key is the first line on stdin."""
    die_with_parent()
    try:
        os.nice(NICE)  # an agent run as root (as slurmd is); any other keeps its own priority
    except OSError:
        pass
    bind, wedged, agent = argv[0], float(argv[1]), int(argv[2])
    if os.getppid() != agent:  # the agent died before the line above
        return 1
    key = bytes.fromhex(_line(sys.stdin.fileno()).decode().strip())
    asyncio.run(serve(bind, key, wedged))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
