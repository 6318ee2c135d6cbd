"""The controller's side of the node agents: what it knows of each (:class:`Agent`), and how it
talks to them: launch, signal, terminate, ping.

Every request carries a controller credential (a token with the ``ctld`` claim) so an agent
obeys only its own cluster's controller.  Calls time out after ``timeout`` seconds (Slurm's
MessageTimeout); a failed call returns None and the caller decides what it means.
"""

from __future__ import annotations

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
