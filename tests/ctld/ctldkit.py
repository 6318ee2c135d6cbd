"""An in-process controller for tests of its logic: a fake clock, fake node agents, a temporary store.

The controller is the daemon's own (:class:`~minislurm.ctld.controller.Controller`, its SQLite
store in a temporary directory); only its two edges are replaced:

* time: :class:`JumpingLoop` is an event loop whose clock jumps to the next timer whenever
  nothing else is ready (and no store commit is in flight), so SlurmdTimeout, a time limit or
  a requeue delay pass in microseconds, and the controller's ``clock`` is that loop's;
* the agents: :class:`FakeAgents` stands where the controller's RPC client does and answers
  ``/ping``, ``/jobs/launch``, ``/jobs/terminate`` and ``/jobs/signal`` as node agents would;
  a batch job "runs" for the seconds a test gives it and its end reaches the controller
  through ``job_ended``, as an agent's ``POST /agents/job-ended`` does.  A node can crash (its
  jobs die, it answers nothing) or be cut off (its jobs go on, it answers nothing).

``run(test, tmp_path)`` runs ``await test(Harness)`` on such a loop.  The live suites
(tests/live) keep testing the real daemons end to end; this is for the controller's rules.
"""

from __future__ import annotations

import asyncio
import math
import selectors
from dataclasses import dataclass, field

from minislurm.cluster.confgen import apply_settings, lab_config
from minislurm.common.auth import Signer
from minislurm.ctld import admission, health
from minislurm.ctld.controller import Controller

EPOCH = 1_767_225_600.0  # 2026-01-01: the fake clock starts here


class _JumpingSelector(selectors.DefaultSelector):
    """Waits for real I/O only while a thread works for the loop; otherwise a wait for the
    next timer returns at once, with the loop's clock moved on to it."""

    loop: "JumpingLoop"

    def select(self, timeout=None):
        if self.loop.threads_busy:
            return super().select(0.05 if timeout is None else min(timeout, 0.05))
        ready = super().select(0)
        if ready or not timeout:
            return ready
        # To the next timer exactly (now + timeout can round below it at these magnitudes).
        self.loop.now = max(self.loop.now + timeout, self.loop._scheduled[0]._when)
        return []


class JumpingLoop(asyncio.SelectorEventLoop):
    def __init__(self):
        selector = _JumpingSelector()
        super().__init__(selector)
        selector.loop = self
        self.now = EPOCH
        self.threads_busy = 0
        # A timer is due when its time is below now + resolution: at these magnitudes a float's
        # step is about 2e-7 s, so the default resolution (1e-9) would never let one fall due.
        self._clock_resolution = 1e-6

    def time(self) -> float:
        return self.now

    def run_in_executor(self, executor, func, *args):
        future = super().run_in_executor(executor, func, *args)
        self.threads_busy += 1

        def done(_):
            self.threads_busy -= 1
        future.add_done_callback(done)
        return future


@dataclass
class FakeNode:
    name: str
    addr: str
    alive: bool = True  # answers the controller
    busy: bool = False  # its heartbeat answers for a slow agent loop: alive, no job list
    running: dict[tuple[int, int], asyncio.TimerHandle | None] = field(default_factory=dict)
    launches: list[tuple[int, int]] = field(default_factory=list)
    terminated: list[tuple[int, int]] = field(default_factory=list)  # stops it was told of
    signals: list[dict] = field(default_factory=list)


class FakeAgents:
    """The node agents as the controller sees them through its RPC client."""

    def __init__(self):
        self.ctl: Controller | None = None
        self.nodes: dict[str, FakeNode] = {}
        self.by_addr: dict[str, FakeNode] = {}
        self.runtime: dict[int, tuple[float, int]] = {}  # job (or array) id -> (seconds, exit code); default: forever
        self.refuse: dict[str, dict] = {}  # node name -> its answer to every launch (a broken node)

    def attach(self, ctl: Controller) -> None:
        self.ctl = ctl
        for name in ctl.state.nodes.names:
            node = self.nodes.get(name) or FakeNode(name, f"{name}:6818")
            self.nodes[name] = self.by_addr[node.addr] = node

    async def register_all(self) -> None:
        for node in self.nodes.values():
            if node.alive:
                await self.register(node.name)

    async def register(self, name: str) -> None:
        node = self.nodes[name]
        cfg = self.ctl.state.nodes.configs[self.ctl.state.nodes.index[name]]
        await health.register(self.ctl, {"name": name, "addr": node.addr, "cpus": cfg.cpus,
                                         "memory": cfg.real_memory, "gpus": cfg.gpus,
                                         "jobs": [list(k) for k in node.running]})

    # -- the RPC client's interface ------------------------------------------------------
    async def call(self, addr: str, path: str, payload: dict | None = None, timeout: float | None = None):
        node = self.by_addr.get(addr)
        if node is None or not node.alive:
            await asyncio.sleep(timeout or 5.0)  # a silent address answers nothing, after the timeout
            return None
        if path == "/ping" and node.busy:
            return {"busy": 3.0}
        if path == "/ping":
            return {"jobs": [list(k) for k in node.running], "finished": []}
        key = (payload["job_id"], payload["inc"])
        if path == "/jobs/launch":
            node.launches.append(key)
            if node.name in self.refuse:
                return self.refuse[node.name]
            job = self.ctl.state.jobs.get(key[0])
            array = job.array_job_id if job is not None else None  # an array's tasks run as it was told
            seconds, code = self.runtime.get(key[0], self.runtime.get(array, (math.inf, 0)))
            loop = asyncio.get_running_loop()
            node.running[key] = None if seconds == math.inf else loop.call_later(
                seconds, lambda: self.ctl.spawn(self._ended(node, key, code, 0)))
            return {"ok": True}
        if path == "/jobs/terminate":
            node.terminated.append(key)
            if key in node.running:
                self.ctl.spawn(self._ended(node, key, 0, 15))
            return {"ok": True}
        if path == "/jobs/signal":
            node.signals.append(payload)
            return {"ok": True}
        raise AssertionError(f"no agent route {path}")

    async def close(self) -> None:
        pass

    async def _ended(self, node: FakeNode, key: tuple[int, int], code: int, sig: int) -> None:
        handle = node.running.pop(key, None)
        if handle is not None:
            handle.cancel()
        if node.alive:
            await self.ctl.running.job_ended(key[0], key[1], exit_code=code, signal=sig)

    # -- what a test does to nodes ---------------------------------------------------------
    def crash(self, name: str) -> None:
        """The node dies: its jobs with it, and it answers nothing."""
        node = self.nodes[name]
        node.alive = False
        for handle in node.running.values():
            if handle is not None:
                handle.cancel()
        node.running.clear()

    def cut_off(self, name: str) -> None:
        """The node is unreachable, its jobs run on (a network partition)."""
        self.nodes[name].alive = False

    def reconnect(self, name: str) -> None:
        self.nodes[name].alive = True


class Harness:
    def __init__(self, tmp_path, *, config=None, nodes: int = 2, gpus: int = 4, cpus: int = 8, **settings):
        self.tmp_path = tmp_path
        self.config = config or lab_config(nodes, gpus, cpus, 64_000)
        apply_settings(self.config, settings)
        self.agents = FakeAgents()
        self.ctl: Controller | None = None

    async def start(self) -> Controller:
        """A controller on the store in tmp_path (a restart when one ran there before)."""
        loop = asyncio.get_running_loop()
        self.ctl = Controller(self.config, self.tmp_path / "state", Signer(b"k" * 32), operators={"root"},
                              clock=loop.time, rpc=self.agents)
        self.agents.attach(self.ctl)
        await self.ctl.start()
        return self.ctl

    async def stop(self) -> None:
        await self.ctl.stop()

    async def submit(self, user: str = "alice", *, seconds: float = math.inf, exit_code: int = 0,
                     batch: bool = True, components: list[dict] | None = None, **spec) -> int:
        """sbatch: one batch job that runs ``seconds`` on its agent, then exits ``exit_code``
        (``batch=False``: the allocation an srun or salloc asks for, with no script to launch;
        ``components``: the options of a heterogeneous job's later components, as ``#SBATCH
        hetjob`` separates them, the script being the leader's)."""
        (job_id, *_) = await admission.submit(self.ctl, user, {
            "spec": spec, "script": "#!/bin/sh\ntrue\n" if batch else None, "environment": {"PATH": "/usr/bin"},
            "work_dir": "/tmp", "batch": batch, **({"components": components} if components else {})})
        self.agents.runtime[job_id] = (seconds, exit_code)
        return job_id

    def job(self, job_id: int):
        return self.ctl.state.jobs[job_id]

    async def until(self, predicate, within: float = 600.0, step: float = 0.05) -> float:
        """Let fake time pass until ``predicate()``; the fake seconds it took."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        while not predicate():
            if loop.time() - start > within:
                raise AssertionError(f"not within {within} fake seconds")
            await asyncio.sleep(step)
        return loop.time() - start


def run(test, tmp_path, **settings):
    """Run ``await test(harness)`` on a fake clock: a started controller, agents registered."""
    loop = JumpingLoop()

    async def main():
        h = Harness(tmp_path, **settings)
        await h.start()
        await h.agents.register_all()
        try:
            return await asyncio.wait_for(test(h), 86_400)  # a fake day at most
        finally:
            await h.stop()

    try:
        return loop.run_until_complete(main())
    finally:
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
