"""The controller's side of the node agents: what it knows of each (:class:`Agent`), and how it
talks to them: launch, signal, terminate, ping.

Every request carries a controller credential (a token with the ``ctld`` claim) so an agent
obeys only its own cluster's controller.  Calls time out after ``timeout`` seconds (Slurm's
MessageTimeout); a failed call returns None and the caller decides what it means.
"""

from __future__ import annotations

import asyncio
import logging

from minislurm.common.rpc import JsonClient

log = logging.getLogger("minislurm.ctld")


class AgentClient(JsonClient):
    def __init__(self, token: str, timeout: float = 5.0):
        super().__init__(token, timeout, log)
        self.in_flight = 0  # calls to agents not yet answered (sdiag's agent count)

    async def call(self, addr: str, path: str, payload: dict | None = None,
                   timeout: float | None = None) -> dict | None:
        self.in_flight += 1
        try:
            return await self.request(f"http://{addr}{path}", payload, timeout)
        finally:
            self.in_flight -= 1


async def call_nodes(rpc: AgentClient, agents: dict[str, "Agent"], path: str,
                     payload: dict) -> dict[str, dict | None]:
    """``payload`` to the agent of each node of ``agents`` (those registered), one request per
    agent process: a process that hosts many nodes (virtual nodes, one heartbeat) is told once
    for all of them, the request naming them, as Slurm's controller sends one message down its
    tree for a job's nodes.  A node that process does not answer for is asked on its own.
    Returns each node's answer, None where none came."""
    groups: dict[str, list[str]] = {}
    for name, agent in agents.items():
        if agent.addr:
            groups.setdefault(agent.heartbeat or f"node {name}", []).append(name)

    async def alone(name: str) -> tuple[str, dict | None]:
        return name, await rpc.call(agents[name].addr, path, payload)

    async def together(names: list[str]) -> list[tuple[str, dict | None]]:
        if len(names) == 1:
            return [await alone(names[0])]
        reply = await rpc.call(agents[names[0]].addr, path, {**payload, "nodes": names})
        told = reply.get("nodes") if isinstance(reply, dict) else None
        told = told if isinstance(told, dict) else {}
        answered = [(n, told[n]) for n in names if isinstance(told.get(n), dict)]
        return answered + list(await asyncio.gather(*(alone(n) for n in names if not isinstance(told.get(n), dict))))

    replies = await asyncio.gather(*(together(names) for names in groups.values()))
    return dict(pair for group in replies for pair in group)


class Agent:
    """What the controller knows about one node's agent."""

    def __init__(self, addr: str | None = None):
        self.addr = addr
        self.heartbeat: str | None = None  # host:port where its process answers pings, if it has one
        self.last_response = 0.0
        self.boot_time = 0.0  # when the agent started (SlurmdStartTime)
        self.os_boot_time = 0.0  # when its machine booted (BootTime)
        self.registered = False
        self.os = ""  # uname of its machine (OS=)
        self.cpu_load: float | None = None  # its machine's load and MB free, as last reported
        self.free_mem: int | None = None
        self.reason_set: tuple[str, float] | None = None  # who set the node's reason, and when
