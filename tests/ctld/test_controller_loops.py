"""The controller in-process (no daemons): its background loops outlive their failures, and it
refuses changes while its state cannot be saved."""

import asyncio
import logging
import time

import pytest

from minislurm.cluster.confgen import lab_config
from minislurm.common.auth import Signer
from minislurm.core.errors import SlurmError
from minislurm.ctld import admission
from minislurm.ctld import controller as controller_module
from minislurm.ctld.controller import Controller


def make(tmp_path) -> Controller:
    cfg = lab_config(nodes=1, gpus_per_node=2, cpus_per_node=4, mem=4000)
    cfg.sched.bf_interval = 0.2
    return Controller(cfg, tmp_path / "state", Signer(b"k" * 32))


def test_the_backfill_loop_survives_an_exception(tmp_path, monkeypatch, caplog):
    calls = []
    real = controller_module.schedule

    def flaky(state, now, backfill_cycle=False, **_):
        if backfill_cycle:
            calls.append(now)
            if len(calls) == 1:
                raise RuntimeError("a bug in a scheduling pass")
        return real(state, now, backfill_cycle=backfill_cycle)

    monkeypatch.setattr(controller_module, "schedule", flaky)

    async def run():
        ctl = make(tmp_path)
        await ctl.start()
        await admission.submit(ctl, "alice", {"spec": {"time_limit_min": 5}, "script": "#!/bin/sh\ntrue\n"})
        await asyncio.sleep(1.5)  # about 7 backfill cycles (the node never answers: the job waits)
        await ctl.stop()

    with caplog.at_level(logging.ERROR, "minislurm.ctld"):
        asyncio.run(run())
    assert len(calls) >= 4, calls
    assert "a bug in a scheduling pass" in caplog.text


def test_changes_are_refused_while_the_state_cannot_be_saved(tmp_path):
    async def run():
        ctl = make(tmp_path)
        await ctl.start()
        pages = ctl.store._db.execute("PRAGMA page_count").fetchone()[0]
        ctl.store._db.execute(f"PRAGMA max_page_count={pages}")  # no room left
        big = {"spec": {}, "script": "#!/bin/sh\ntrue\n", "environment": {"DATA": "x" * 100_000}}
        first = asyncio.ensure_future(admission.submit(ctl, "alice", big))
        for _ in range(100):
            await asyncio.sleep(0.02)
            if ctl.store.failure:
                break
        with pytest.raises(SlurmError, match="cannot save its state.*database or disk is full"):
            await admission.submit(ctl, "alice", {"spec": {}, "script": "#!/bin/sh\ntrue\n"})
        assert not first.done() and not ctl.state.jobs  # not acknowledged, not queued
        ctl.store._db.execute("PRAGMA max_page_count=1000000")
        ids = await asyncio.wait_for(first, 10)
        assert list(ctl.state.jobs) == ids == [1]
        assert await admission.submit(ctl, "alice", {"spec": {}, "script": "#!/bin/sh\ntrue\n"}) == [2]
        await ctl.stop()

    asyncio.run(run())


def test_waiting_allocations_bring_backfill_forward_at_most_every_fifth_of_a_second(tmp_path):
    """An srun that has to wait asks for the next backfill cycle now; a stream of them cannot
    keep the controller in back-to-back cycles."""
    async def run():
        ctl = make(tmp_path)
        ctl.config.sched.bf_interval = 30.0  # no cycle of its own during the test
        await ctl.start()
        began = time.monotonic()
        for _ in range(50):  # the node never answers: every allocation waits
            await admission.submit(ctl, "alice", {"spec": {"time_limit_min": 5}, "script": None, "batch": False})
            await asyncio.sleep(0.02)
        cycles, took = ctl.stats.backfill.count, time.monotonic() - began
        await ctl.stop()
        return cycles, took

    cycles, took = asyncio.run(run())
    assert 2 <= cycles <= 1 + took / 0.2, (cycles, took)  # 50 of them, one cycle per 0.2 s at most
