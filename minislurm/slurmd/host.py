"""Virtual nodes: one agent process that is many nodes (as Slurm's multiple-slurmd mode is, for
testing a large cluster on a few machines).

Each hosted node is a whole :class:`~minislurm.slurmd.agent.NodeAgent` of its own: its name, port,
CPUs, memory, GPU indices, spool, runs and token, registering and answering the controller as a
node with an agent process of its own would; the controller cannot tell them apart.  What they
share is the process, its event loop and its children (the reaping of orphans looks at every
hosted node's processes, not one node's).

The controller's pings for all its nodes are answered by one heartbeat process it starts
(:mod:`minislurm.slurmd.heartbeat`), told at once of each node that crashes, is cut off or
boots; the process collects the orphans of all its nodes once a second.

A single hosted node can fail while its siblings keep running.  The cluster writes the faults
file (one ``NAME crashed`` or ``NAME cut`` per line) and sends SIGHUP; each host then applies
the lines that name its nodes:

- ``crashed``: the node goes as a power cut takes it: its jobs are killed at once, its port
  closes, and it says nothing more.  A node no longer listed boots again: a new agent on the
  same port, with a new boot time and no memory of past runs, which registers by itself.
- ``cut``: the node is cut off the network: its port closes and it stops talking to the
  controller, but its jobs run on.  Listed no more, it answers again; the controller's fencing
  then stops what it should no longer run.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from pathlib import Path
from typing import Callable

from aiohttp import web

from minislurm.lifecycle import every
from minislurm.slurmd.agent import NodeAgent
from minislurm.slurmd.api import serve
from minislurm.slurmd.heartbeat import Heartbeat
from minislurm.slurmd.proc import reap_orphans

log = logging.getLogger("minislurm.slurmd")

CRASHED, CUT = "crashed", "cut"


def read_faults(path: Path | None) -> dict[str, str]:
    """``{node: crashed|cut}`` from the faults file (absent or unreadable: no fault)."""
    try:
        lines = path.read_text().splitlines() if path else []
    except OSError:
        return {}
    return {parts[0]: parts[1] for parts in (line.split() for line in lines)
            if len(parts) == 2 and parts[1] in (CRASHED, CUT)}


class Host:
    """The nodes of one agent process, by name."""

    def __init__(self, make_agent: Callable[[str], NodeAgent], names: list[str], faults: Path | None = None,
                 ports: dict[str, int] | None = None):
        self.make_agent, self.names, self.faults = make_agent, list(names), faults
        # The nodes alive now, cut off or not (shared with each agent: its siblings, and with
        # the heartbeat, which answers for them).
        self.agents: dict[str, NodeAgent] = {}
        self.runners: dict[str, web.AppRunner] = {}  # the reachable ones' servers
        self.ports: dict[str, int] = dict(ports or {})  # a node boots again on the port it had
        self._lock = asyncio.Lock()
        self.heartbeat: Heartbeat | None = None
        self._heartbeat_started: asyncio.Future | None = None
        self._reaper: asyncio.Task | None = None

    async def start(self) -> None:
        faults = read_faults(self.faults)
        self._reaper = asyncio.ensure_future(every(1.0, self.reap, log))
        await asyncio.gather(*(self.boot(name) for name in self.names if name not in faults))
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(self.apply()))

    def reap(self) -> None:
        """Collect exited orphans, never a process asyncio waits for (any hosted node's task)."""
        reap_orphans({p.pid for a in list(self.agents.values()) for j in a.runs.live.values()
                      for p in j.roots.procs})

    async def boot(self, name: str) -> None:
        agent = self.make_agent(name)
        agent.siblings = self.agents
        if self.heartbeat is None:  # bound where the node's own port is, so reached the same way
            self.heartbeat = Heartbeat(self.agents, agent.bind, agent.signer.key)
            self._heartbeat_started = asyncio.ensure_future(self.heartbeat.start())
        await self._heartbeat_started  # one for all the nodes booting at once
        agent.heartbeat_port = self.heartbeat.port
        self.agents[name] = agent
        await self._listen(agent)
        self.heartbeat.beat()
        log.info("slurmd %s listening on %s:%s", name, agent.bind, agent.port)

    async def _listen(self, agent: NodeAgent) -> None:
        """Open the node's port (the one it had, if any) and register (a cut node's running
        jobs included: the controller fences what it should no longer run)."""
        agent.offline = False
        self.runners[agent.name] = await serve(agent, self.ports.get(agent.name, 0))
        self.ports[agent.name] = agent.port

    async def crash(self, name: str, why: str = "crashed") -> None:
        agent = self.agents.pop(name)
        agent.offline = True
        agent.background.cancel_all()  # no more registering, watching or reporting
        if name in self.runners:
            await self.runners.pop(name).cleanup()
        await asyncio.gather(*(job.roots.stop(0) for job in list(agent.runs.live.values())))
        if self.heartbeat is not None:
            self.heartbeat.beat()  # it answers for the node no more
        await agent.ctld_rpc.close()
        log.warning("node %s %s", name, why)

    async def cut_off(self, name: str) -> None:
        self.agents[name].offline = True  # it keeps watching its jobs, and tells no one
        self.heartbeat.beat()
        await self.runners.pop(name).cleanup()
        log.warning("virtual node %s cut off the network", name)

    async def apply(self) -> None:
        """Bring each hosted node to what the faults file says of it."""
        async with self._lock:
            faults = read_faults(self.faults)
            for name in self.names:
                want, alive, reachable = faults.get(name), name in self.agents, name in self.runners
                if want == CRASHED and alive:
                    await self.crash(name)
                elif want == CUT and reachable:
                    await self.cut_off(name)
                elif want is None and alive and not reachable:
                    await self._listen(self.agents[name])
                    self.heartbeat.beat()
                    log.info("virtual node %s is back on the network", name)
                elif want is None and not alive:
                    await self.boot(name)

    async def stop(self) -> None:
        for name in list(self.agents):
            await self.crash(name, "stopped")
        if self._reaper is not None:
            self._reaper.cancel()
        if self.heartbeat is not None:
            await self.heartbeat.stop()
