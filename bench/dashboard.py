"""The class dashboard's refresh on a big cluster: 256 nodes x 8 GPUs and 5,000 jobs.

The controller is the daemon's own (minislurm.ctld), in this process on a real clock, with its
HTTP API on a loopback port; only its node agents are stand-ins that accept every launch and
keep every job running.  Jobs of ten users in three accounts fill the machine (1 to 8 GPUs,
1 to 4 nodes, limits from 30 minutes to a day) and the rest wait; a backfill cycle plans them,
three nodes go down or drain (their jobs requeued) and a reservation holds four more.  Measured:

* build    the controller building the view (minislurm.ctld.dashboard.view), in-process: wall
           and CPU time (the machine may be shared: CPU time says what the work costs)
* encode   the view as JSON
* request  GET /api/v1/dashboard/view over HTTP, a fresh view each time (what a refresh costs)
* render   headless Chromium drawing it with the page's own draw() (DOM, SVG and layout): wall
           and the renderer's main-thread CPU time

Target: under 200 ms per refresh.  Prints a table and, on its last line, one JSON object of
medians.  ``--no-browser`` skips the render (without Chromium or playwright it is skipped).

    python bench/dashboard.py [--runs 30] [--renders 20] [--no-browser]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from aiohttp import ClientSession, web

from minislurm.cluster.confgen import lab_config
from minislurm.common.auth import Signer
from minislurm.ctld import actions, admission, dashboard, health, reservations
from minislurm.ctld.api import make_app
from minislurm.ctld.controller import Controller

NODES, GPUS, JOBS = 256, 8, 5000
ACCOUNTS = {"research": (60, ["alice", "bob", "carol", "dave"]), "vision": (30, ["erin", "frank", "grace"]),
            "nlp": (10, ["heidi", "ivan", "judy"])}
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class Agents:
    """The node agents as the controller calls them: every launch works, every job runs until
    it is stopped, every ping lists the node's jobs."""

    ctl: Controller

    async def call(self, addr: str, path: str, payload: dict | None = None, timeout: float | None = None):
        ctl = self.ctl
        if path == "/ping":
            n = ctl.state.nodes.index[addr.split(":")[0]]
            return {"jobs": [[j.job_id, j.restart_count] for j in ctl.state.jobs_on_node(n)], "finished": []}
        if path == "/jobs/terminate":
            ctl.spawn(ctl.running.job_ended(payload["job_id"], payload["inc"], exit_code=0, signal=15))
        return {"ok": True}

    async def close(self) -> None:
        pass


def accounts_conf() -> str:
    lines = []
    for account, (share, users) in ACCOUNTS.items():
        lines.append(f"Account={account} Fairshare={share}")
        lines += [f"User={u} Account={account}" for u in users]
    return "\n".join(lines) + "\n"


async def fill(ctl: Controller, rng: random.Random) -> None:
    users = [u for _, members in ACCOUNTS.values() for u in members]

    async def one(i: int) -> None:
        gpus, nodes = rng.choice([1, 2, 4, 8, 8]), rng.choice([1, 1, 1, 2, 4])
        await admission.submit(ctl, users[i % len(users)], {
            "spec": {"job_name": f"train-{i % 97}", "time_limit_min": rng.choice([30, 60, 120, 240, 480, 1440]),
                     "nodes_min": nodes, "gres": [["gpu", None, gpus]]},
            "script": "#!/bin/sh\ntrue\n", "environment": {}, "work_dir": "/tmp", "batch": True})
    for first in range(0, JOBS, 250):
        await asyncio.gather(*(one(i) for i in range(first, min(JOBS, first + 250))))


async def build_cluster(tmp: Path) -> Controller:
    (tmp / "accounts.conf").write_text(accounts_conf())
    agents = Agents()
    ctl = Controller(lab_config(NODES, GPUS, 64, 512_000), tmp / "state", Signer(b"k" * 32),
                     accounts_file=tmp / "accounts.conf", rpc=agents)
    agents.ctl = ctl
    await ctl.start()
    for name in ctl.state.nodes.names:
        await health.register(ctl, {"name": name, "addr": f"{name}:6818", "cpus": 64, "memory": 512_000,
                                    "gpus": GPUS, "jobs": []})
    names = ctl.state.nodes.names
    await reservations.create(ctl, {"name": "exam", "nodes": ",".join(names[-4:]), "start": ctl.clock() + 3600,
                                    "duration": 7200, "accounts": "research"}, "root")
    await fill(ctl, random.Random(1))
    await actions.update_node(ctl, "root", [names[10]], "DOWN", "bench: node failure")
    await actions.update_node(ctl, "root", [names[11], names[12]], "DRAIN", "bench: maintenance")
    ctl.run_pass(backfill=True)  # the plan: promises for the jobs the cycle tests
    return ctl


def median_ms(xs: list[float]) -> float:
    return round(statistics.median(xs) * 1000, 2)


# The page draws only what changed; here every part is drawn again, as after a change to each.
DRAW = """() => { drawn.clear(); const began = performance.now(); draw(window.benchView);
                  void document.body.offsetHeight; return performance.now() - began; }"""


async def render_times(base: str, view: bytes, renders: int) -> dict | None:
    """Chromium drawing ``view`` (the page's own draw(), then layout), ``renders`` times: wall
    and main-thread CPU milliseconds (CDP's Performance.getMetrics ThreadTime), medians.  The
    page is opened without a token, so it does not poll meanwhile."""
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        return None
    if not os.path.exists(CHROMIUM):
        return None
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = await browser.new_page(viewport={"width": 1600, "height": 1000})
        await page.goto(f"{base}/dashboard")
        await page.evaluate("(text) => { window.benchView = JSON.parse(text); }", view.decode())
        cdp = await page.context.new_cdp_session(page)
        await cdp.send("Performance.enable")

        async def thread_time() -> float:
            metrics = (await cdp.send("Performance.getMetrics"))["metrics"]
            return next(m["value"] for m in metrics if m["name"] == "ThreadTime")
        walls, cpus = [], []
        for _ in range(renders):
            before = await thread_time()
            walls.append(await page.evaluate(DRAW))
            cpus.append((await thread_time() - before) * 1000)
        await browser.close()
    return {"render_ms": round(statistics.median(walls[1:]), 1), "render_cpu_ms": round(statistics.median(cpus[1:]), 1)}


async def main(args) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        ctl = await build_cluster(Path(tmp))
        filled = time.perf_counter() - t0
        runner = web.AppRunner(make_app(ctl))
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        token = ctl.signer.user_token("alice", 3600)
        shared = runner.app[dashboard.SHARED]
        try:
            builds, cpus, encodes, requests = [], [], [], []
            for _ in range(args.runs):
                began, cpu = time.perf_counter(), time.process_time()
                view = dashboard.view(ctl)
                built = time.perf_counter()
                cpus.append(time.process_time() - cpu)
                body = json.dumps(view, separators=(",", ":")).encode()
                builds.append(built - began)
                encodes.append(time.perf_counter() - built)
            async with ClientSession() as http:
                for _ in range(args.runs):
                    shared.at = -dashboard.SHARED_FOR  # a fresh view, as after a change
                    began = time.perf_counter()
                    async with http.get(f"http://127.0.0.1:{port}/api/v1/dashboard/view",
                                        headers={"Authorization": f"Bearer {token}"}) as r:
                        assert r.status == 200, await r.text()
                        await r.read()
                    requests.append(time.perf_counter() - began)
            rendered = None if args.no_browser else await render_times(f"http://127.0.0.1:{port}", body, args.renders)
        finally:
            await runner.cleanup()
            await ctl.stop()
    return {"nodes": NODES, "gpus": NODES * GPUS, "jobs": len(ctl.state.jobs), "running": len(ctl.state.running),
            "pending": len(ctl.state.pending), "promises": len(ctl.expected), "fill_s": round(filled, 1),
            "view_kb": round(len(body) / 1024, 1), "build_ms": median_ms(builds), "build_cpu_ms": median_ms(cpus),
            "encode_ms": median_ms(encodes), "request_ms": median_ms(requests), **(rendered or {}),
            "load_average": os.getloadavg()[0]}


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--renders", type=int, default=20)
    p.add_argument("--no-browser", action="store_true")
    result = asyncio.run(main(p.parse_args()))
    for key, value in result.items():
        print(f"  {key:<10} {value}", file=sys.stderr)
    print(json.dumps({"bench": "dashboard", "python": sys.version.split()[0], "machine": platform.machine(),
                      "cores": os.cpu_count(), "target_ms": 200, "results": result}))
