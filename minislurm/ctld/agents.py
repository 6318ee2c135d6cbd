"""The controller's side of talking to node agents: launch, signal, terminate, ping.

Every request carries a controller credential (a token with the ``ctld`` claim) so an agent
obeys only its own cluster's controller.  Calls time out after ``timeout`` seconds (Slurm's
MessageTimeout); a failed call returns None and the caller decides what it means.
"""

from __future__ import annotations

import asyncio
import json
import logging

import aiohttp

log = logging.getLogger("minislurm.ctld")


class AgentClient:
    def __init__(self, token: str, timeout: float = 5.0):
        self.token = token
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                headers={"Authorization": f"Bearer {self.token}"}, timeout=self.timeout,
                connector=aiohttp.TCPConnector(limit=0, force_close=False))
        return self._session

    async def call(self, addr: str, path: str, payload: dict | None = None,
                   timeout: float | None = None) -> dict | None:
        url = f"http://{addr}{path}"
        try:
            kw = {"timeout": aiohttp.ClientTimeout(total=timeout)} if timeout else {}
            if payload is None:
                async with self._http().get(url, **kw) as r:
                    return await r.json() if r.status == 200 else None
            async with self._http().post(url, data=json.dumps(payload),
                                         headers={"Content-Type": "application/json"}, **kw) as r:
                if r.status != 200:
                    log.warning("agent %s%s answered %s: %s", addr, path, r.status, await r.text())
                    return None
                return await r.json()
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError, ValueError) as exc:
            log.debug("agent %s%s failed: %s", addr, path, exc)
            return None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
