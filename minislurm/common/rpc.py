"""The JSON-over-HTTP client the daemons call each other with: the controller its node agents
(launch, signal, terminate, ping), an agent its controller (register, job ended).

Every request carries the caller's bearer token.  A call that fails in transport (refused,
timed out, reset, an answer that is not JSON) or that is refused returns None: both daemons
retry or decide what silence means themselves, so neither needs to know aiohttp's exceptions.
"""

from __future__ import annotations

import asyncio
import json
import logging

import aiohttp

# Everything a call can fail with short of a bug: the one list both daemons rely on.
TRANSPORT_ERRORS = (aiohttp.ClientError, asyncio.TimeoutError, OSError, ValueError)


class JsonClient:
    def __init__(self, token: str, timeout: float, log: logging.Logger):
        self.token = token
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self.log = log
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                headers={"Authorization": f"Bearer {self.token}"}, timeout=self.timeout,
                connector=aiohttp.TCPConnector(limit=0))
        return self._session

    async def request(self, url: str, payload: dict | None = None, timeout: float | None = None) -> dict | None:
        """GET ``url`` (no payload) or POST ``payload`` to it; its JSON answer on 200, else None."""
        kw = {"timeout": aiohttp.ClientTimeout(total=timeout)} if timeout else {}
        try:
            if payload is None:
                async with self._http().get(url, **kw) as r:
                    return await r.json() if r.status == 200 else None
            async with self._http().post(url, data=json.dumps(payload),
                                         headers={"Content-Type": "application/json"}, **kw) as r:
                if r.status != 200:
                    self.log.warning("%s answered %s: %s", url, r.status, await r.text())
                    return None
                return await r.json()
        except TRANSPORT_ERRORS as exc:
            self.log.debug("%s failed: %s", url, exc)
            return None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
