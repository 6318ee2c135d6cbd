"""Commit, then tell, for stops (issue 21, item 5), in-process: no agent hears of a cancel or a
requeue before it is on disk, not even through a node ping answered while it is being saved
(``health.fence``), and the requester is answered before any agent is told, as slurmctld
answers scancel and scontrol requeue first, then signals the job.  tests/live has the same
end to end (tests/live/test_told_after_commit.py)."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest
from aiohttp.test_utils import TestClient, TestServer
from apikit import Api, good_job
from ctldkit import FakeAgents, run

from minislurm.cluster.confgen import lab_config
from minislurm.common.auth import Signer
from minislurm.ctld import actions, health
from minislurm.ctld.api import make_app
from minislurm.ctld.controller import Controller


def saved_ending(state_dir, job_id: int):
    """The stop intent the job has on disk (another connection sees only what is committed)."""
    db = sqlite3.connect(f"file:{state_dir / 'minislurm.db'}?mode=ro", uri=True)
    try:
        (data,) = db.execute("SELECT data FROM jobs WHERE job_id=?", (job_id,)).fetchone()
    finally:
        db.close()
    return json.loads(data)["live"]["ending"]


def record_stops(agents: FakeAgents, state_dir, seen=lambda: None) -> list:
    """For every stop an agent is told: (was its intent on disk, what ``seen()`` said then)."""
    told = []
    call = agents.call

    async def recording(addr, path, payload=None, timeout=None):
        if path == "/jobs/terminate":
            told.append((saved_ending(state_dir, payload["job_id"]) is not None, seen()))
        return await call(addr, path, payload, timeout)
    agents.call = recording  # the controller's rpc is this object: it calls this now
    return told


@pytest.mark.parametrize("how", ["cancel", "requeue"])
def test_a_ping_answered_while_a_stop_is_saved_tells_no_agent(tmp_path, how):
    """Before: the ping's answer sent the stop at once (told before committed), and the
    request sent it again before its answer."""
    async def test(h):
        ctl = h.ctl
        job_id = await h.submit(requeue=True)
        await h.until(lambda: ctl.live[job_id].launched)
        node = ctl.state.nodes.names[h.job(job_id).alloc.nodes[0]]
        told = record_stops(h.agents, tmp_path / "state")
        ctl.store.commit_delay = 0.3  # real seconds: the fake clock stands still meanwhile
        stop = asyncio.ensure_future(actions.cancel(ctl, "alice", 0, job_id) if how == "cancel"
                                     else actions.requeue(ctl, "alice", job_id))
        while not ctl.live[job_id].ending:
            await asyncio.sleep(0)
        assert ctl.store.busy and not stop.done()  # decided, being saved
        await health.responded(ctl, node, {"jobs": [[job_id, 0]], "finished": []})  # a ping's answer
        await stop  # saved: the request would be answered now
        for _ in range(50):  # whatever the ping queued has had its chance to run
            await asyncio.sleep(0)
        before_the_answer = list(told)
        await ctl.running.deliver_ending(h.job(job_id))  # what the API does once it has answered
        await h.until(lambda: h.job(job_id).state.name != "RUNNING")
        return before_the_answer, told, h.job(job_id)

    early, told, job = run(test, tmp_path)
    assert early == [] and told == [(True, None)]
    assert (job.state.name, job.restart_count) == (("CANCELLED", 0) if how == "cancel" else ("PENDING", 1))


@pytest.mark.parametrize("how", ["cancel", "requeue"])
def test_the_requester_is_answered_before_any_agent_is_told(tmp_path, how):
    """The real API on a real loop, fake agents: every stop reaches an agent after the answer
    to the request that caused it was sent (before: the agents were told, then the answer)."""
    async def main():
        agents = FakeAgents()
        ctl = Controller(lab_config(2, 4, 8, 64_000), tmp_path / "state", Signer(b"k" * 32),
                         operators={"root"}, rpc=agents)
        agents.attach(ctl)
        await ctl.start()
        await agents.register_all()
        app = make_app(ctl)
        answered = []

        async def on_prepare(request, response):
            answered.append(request.path)
        app.on_response_prepare.append(on_prepare)
        client = TestClient(TestServer(app))
        await client.start_server()
        try:
            api = Api(client, ctl)
            job_id = (await api.ok("POST", "/jobs", good_job(requeue=True)))["job_id"]
            for _ in range(500):
                if ctl.live[job_id].launched:
                    break
                await asyncio.sleep(0.01)
            path = f"/api/v1/jobs/{job_id}/{how}"
            told = record_stops(agents, tmp_path / "state", seen=lambda: path in answered)
            await api.ok("POST", f"/jobs/{job_id}/{how}", {"uid": 0} if how == "cancel" else {})
            for _ in range(500):
                if told:
                    break
                await asyncio.sleep(0.01)
            return told
        finally:
            await client.close()
            await ctl.stop()

    assert asyncio.run(main()) == [(True, True)]
