"""An in-process controller API for tests: a real Controller and the real aiohttp app, no agents.

``serve(tmp_path)`` starts both on the running loop and yields an :class:`Api` that speaks
HTTP to them (aiohttp's test server on a local port).  Nodes never answer pings, so nothing
runs; the scheduler's passes, the store and every handler are the daemon's own.
"""

from __future__ import annotations

import contextlib
import json
import logging

from aiohttp.test_utils import TestClient, TestServer

from minislurm.cluster.confgen import lab_config
from minislurm.common.auth import Signer
from minislurm.ctld.api import make_app
from minislurm.ctld.controller import Controller


class Api:
    def __init__(self, client: TestClient, ctl: Controller):
        self.client, self.ctl = client, ctl
        self.tokens = {"root": ctl.signer.user_token("root", 3600), "alice": ctl.signer.user_token("alice", 3600)}

    async def call(self, method: str, path: str, body=None, *, raw: bytes | None = None, user: str | None = "root",
                   params: dict | None = None) -> tuple[int, dict, dict]:
        """(status, JSON reply, headers) of one request to /api/v1<path>."""
        headers = {"Authorization": f"Bearer {self.tokens[user]}"} if user else {}
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        async with self.client.request(method, "/api/v1" + path, data=data, headers=headers, params=params) as r:
            return r.status, await r.json(content_type=None), r.headers.copy()

    async def ok(self, method: str, path: str, body=None, **kw) -> dict:
        status, reply, _ = await self.call(method, path, body, **kw)
        assert status == 200, (method, path, body, status, reply)
        return reply

    async def lists_work(self) -> None:
        """What squeue, sacct, sinfo and scontrol read still answers, for an operator and a user."""
        for user in ("root", "alice"):
            for path in ("/jobs", "/acct", "/nodes", "/partitions", "/reservations", "/config", "/priorities",
                         "/shares"):
                await self.ok("GET", path, user=user)
        for job_id in list(self.ctl.state.jobs):
            await self.ok("GET", f"/jobs/{job_id}")


def good_job(**spec) -> dict:
    """A submission as sbatch makes it."""
    return {"spec": {"time_limit_min": 10, **spec}, "script": "#!/bin/sh\ntrue\n", "argv": [],
            "environment": {"PATH": "/usr/bin"}, "work_dir": "/tmp", "stdout": "", "stderr": "", "stdin": None,
            "command": "(null)", "uid": 0, "gid": 0, "submit_host": "login", "batch": True, "default_name": "wrap"}


@contextlib.asynccontextmanager
async def serve(tmp_path, *, check_users: bool = False, **config):
    """``check_users``: refuse jobs of users this host does not know, as a root controller does."""
    cfg = lab_config(**{"nodes": 2, "gpus_per_node": 4, "cpus_per_node": 8, "mem": 64_000, **config})
    ctl = Controller(cfg, tmp_path / "state", Signer(b"k" * 32), operators={"root"}, check_users=check_users)
    await ctl.start()
    client = TestClient(TestServer(make_app(ctl)))
    await client.start_server()
    logging.getLogger("minislurm.ctld").setLevel(logging.INFO)
    try:
        yield Api(client, ctl)
    finally:
        await client.close()
        await ctl.stop()
