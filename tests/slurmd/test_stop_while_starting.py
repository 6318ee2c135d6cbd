"""A stop that reaches the agent while its run's batch script is still being started (a
requeue or scancel right after the job began) gives the script its KillWait grace, as one that
comes a moment later does: SIGTERM first, so a trap can save its state, never SIGKILL alone."""

import asyncio
import os
import time

import pytest

from minislurm.ctld.launch import batch_payload
from minislurm.slurmd import agent as agent_module
from minislurm.slurmd.agent import NodeAgent
from tests.ctld import ctldkit

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the agent starts scripts as their user, as root does")

SCRIPT = """#!/bin/bash
trap 'echo term >> {log}; exit 0' TERM
echo start >> {log}
sleep 30 & wait
echo end >> {log}
"""


def _launch_payload(tmp_path, log) -> dict:
    """What the controller sends an agent to start a batch job (from the real controller)."""
    async def test(h):
        job_id = await h.submit("root")
        await h.until(lambda: h.job(job_id).state.name == "RUNNING")
        return batch_payload(h.ctl, h.job(job_id))
    payload = ctldkit.run(test, tmp_path / "ctld")
    return {**payload, "script": SCRIPT.format(log=log), "submit_dir": str(tmp_path),
            "stdout": str(tmp_path / "out"), "stderr": None}


async def _until(predicate, within=20.0):
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, "not within the time allowed"
        await asyncio.sleep(0.05)


def test_a_stop_during_the_start_still_sends_sigterm_first(tmp_path, monkeypatch):
    log = tmp_path / "runs.log"
    payload = _launch_payload(tmp_path, log)
    started, go_on = asyncio.Event(), None
    real_spawn = agent_module.spawn

    async def spawn_then_pause(*args, **kw):  # the script runs; the agent has not yet noted it
        result = await real_spawn(*args, **kw)
        started.set()
        await go_on.wait()
        return result
    monkeypatch.setattr(agent_module, "spawn", spawn_then_pause)

    async def main():
        nonlocal go_on
        go_on = asyncio.Event()
        spool = tmp_path / "spool"
        spool.mkdir()
        node = NodeAgent("gpu01", key=b"k" * 32, ctld="127.0.0.1:9", conf=None, cpus=8, memory=64_000,
                         gpus=4, spool=spool)
        launch = asyncio.create_task(node.launch_batch(payload))
        await started.wait()
        await _until(lambda: log.exists() and "start" in log.read_text())  # its trap is set
        reply = await node.terminate(payload["job_id"], payload["inc"], "CANCELLED", kill_wait=5)
        go_on.set()
        assert (await launch)["ok"] and reply["ok"]
        try:
            await _until(lambda: "term" in log.read_text())
        finally:
            node.background.cancel_all()
        return log.read_text().split()

    # Before: the run was killed with SIGKILL at once (a log of "start" alone).
    assert asyncio.run(main()) == ["start", "term"]
