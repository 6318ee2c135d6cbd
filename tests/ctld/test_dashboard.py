"""The class dashboard's view and routes, in-process: the view says what the controller's own
state and plan say (ctldkit: a fake clock, fake agents), and the routes serve the page to anyone
but its data only with a token (apikit: the real app over HTTP).  tests/live/test_dashboard.py
checks the drawn page against the commands in headless Chromium."""

from __future__ import annotations

import asyncio
import json
import sqlite3

from apikit import serve
from ctldkit import run

from minislurm.core.states import JobState
from minislurm.ctld import actions, dashboard


def test_the_view_is_the_state_the_plan_and_the_records(tmp_path):
    async def test(h):
        ctl = h.ctl
        a = await h.submit(job_name="train", gres=[["gpu", None, 3]], time_limit_min=10)
        await h.until(lambda: h.job(a).state is JobState.RUNNING)
        b = await h.submit(job_name="wide", nodes_min=2, gres=[["gpu", None, 4]], time_limit_min=30)
        c = await h.submit(job_name="later", hold=True)
        ctl.run_pass(backfill=True)
        before, expected = dashboard.view(ctl), dict(ctl.expected)
        node = ctl.state.nodes.names[h.job(a).alloc.nodes[0]]
        h.agents.crash(node)
        await h.until(lambda: h.job(a).restart_count == 1)
        return a, b, c, node, before, dashboard.view(ctl), expected

    a, b, c, node, seen, after, expected = run(test, tmp_path, slurmd_timeout=5)
    n = [v["name"] for v in seen["nodes"]].index(node)
    assert seen["nodes"][n]["gpus"] == [a, a, a, None] and seen["nodes"][1 - n]["gpus"] == [None] * 4
    assert seen["nodes"][n]["state"] == "mix"
    job = seen["running"][a]
    assert (job["name"], job["nodes"], job["end"] - job["start"]) == ("train", [n], 600)
    rows = {r["job_id"]: r for r in seen["queue"]["jobs"]}
    assert [r["job_id"] for r in seen["queue"]["jobs"]] == [b, c] and seen["queue"]["pending"] == 2
    assert (rows[b]["reason"], rows[c]["reason"]) == ("Resources", "JobHeldUser")
    assert rows[b]["expected_start"] == expected[b] and rows[c]["expected_start"] is None
    assert rows[b]["meaning"].startswith("it is the first in line")
    (promise,) = seen["plan"]["promises"]
    assert (promise["job_id"], sorted(promise["nodes"])) == (b, [0, 1])
    assert promise["start"] == expected[b] >= job["end"] and promise["end"] == promise["start"] + 1800
    assert seen["events"] == []
    # The node died: it is down with sinfo's reason, and the run it took is sacct's NODE_FAIL.
    assert after["nodes"][n]["state"] == "down" and after["nodes"][n]["reason"] == "Not responding"
    kinds = {(e["kind"], e["state"], e["node"]) for e in after["events"]}
    assert kinds == {("node", "down", node), ("job", "NODE_FAIL", node)}
    lost = next(e for e in after["events"] if e["kind"] == "job")
    assert (lost["job"], lost["text"]) == (str(a), "train")


def test_the_page_is_open_and_its_data_needs_a_token(tmp_path):
    async def test(api):
        http = api.client
        for path, kind in (("/dashboard", "text/html"), ("/dashboard/dashboard.js", "text/javascript"),
                           ("/dashboard/dashboard.css", "text/css")):
            async with http.get(path) as r:
                assert r.status == 200 and r.content_type == kind
                assert "default-src 'self'" in r.headers["Content-Security-Policy"]
        status, reply, _ = await api.call("GET", "/dashboard/view", user=None)
        assert status == 401 and reply["error"].startswith("Invalid authentication credential")
        first = await api.ok("GET", "/dashboard/view", user="alice")
        assert {"nodes", "running", "queue", "plan", "shares", "events", "now", "build_ms"} <= first.keys()
        again = await api.ok("GET", "/dashboard/view", user="alice")
        assert again["now"] == first["now"]  # one view answers every viewer for half a second
        await asyncio.sleep(dashboard.SHARED_FOR)
        assert (await api.ok("GET", "/dashboard/view"))["now"] > first["now"]
        paths = (await api.ok("GET", "/openapi.json"))["paths"]
        assert "get" in paths["/api/v1/dashboard/view"]

    async def main():
        async with serve(tmp_path) as api:
            await test(api)
    asyncio.run(main())


def test_the_view_waits_for_what_it_shows_to_be_on_disk(tmp_path):
    """Commit, then tell: a drain being saved shows on the dashboard only once it is saved."""
    def saved_drain(name: str) -> bool:
        db = sqlite3.connect(f"file:{tmp_path / 'state' / 'minislurm.db'}?mode=ro", uri=True)
        try:
            (data,) = db.execute("SELECT data FROM nodes WHERE name=?", (name,)).fetchone()
        finally:
            db.close()
        return json.loads(data)["drain"]

    async def test(h):
        ctl = h.ctl
        ctl.store.commit_delay = 0.3  # real seconds: the fake clock stands still meanwhile
        drain = asyncio.ensure_future(actions.update_node(ctl, "root", ["gpu02"], "DRAIN", "fan"))
        while not ctl.state.nodes.drain[1]:
            await asyncio.sleep(0)
        assert ctl.store.busy  # decided, being saved
        view = json.loads(await dashboard.Shared().get(ctl))
        on_disk = saved_drain("gpu02")
        await drain
        return view, on_disk

    view, on_disk = run(test, tmp_path)
    assert view["nodes"][1]["state"] == "drain" and on_disk
