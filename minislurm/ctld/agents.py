"""The controller's side of talking to node agents: launch, signal, terminate, ping.

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

    async def call(self, addr: str, path: str, payload: dict | None = None,
                   timeout: float | None = None) -> dict | None:
        return await self.request(f"http://{addr}{path}", payload, timeout)
