"""Fair-share usage is state: a controller that restarts (cleanly or after kill -9) charges
every user what it charged before, rebuilt from the accounting records with the decay applied,
so sshare and the priorities it feeds are the same on both sides of the restart."""

from __future__ import annotations

import math

from minislurm.cluster.confgen import lab_config
from minislurm.core.states import JobState
from tests.ctld.ctldkit import run


def config(half_life: float):
    cfg = lab_config(2, 4, 8, 64_000)
    cfg.priority.decay_half_life = half_life
    return cfg


def usage(h) -> dict[tuple[str, str | None], float]:
    now = h.ctl.clock()
    return {(r.account, r.user): r.raw_usage for r in h.ctl.fairshare.rows(now)}


def test_usage_survives_a_restart_within_one_decay_step(tmp_path):
    async def test(h):
        jobs = [await h.submit("alice", seconds=300), await h.submit("bob", seconds=120),
                await h.submit("alice", seconds=40, exit_code=3)]
        await h.until(lambda: all(h.job(j).state.finished for j in jobs), within=2000)
        await h.until(lambda: not h.ctl.store.dirty)
        before = usage(h)
        at = h.ctl.clock()
        await h.stop()
        await h.start()  # the same store: nothing but the records tells the new one what was used
        after = usage(h)
        return before, after, h.ctl.clock() - at

    before, after, gap = run(test, tmp_path, config=config(3600))
    assert before[("default", "alice")] > before[("default", "bob")] > 0
    decayed = 0.5 ** (gap / 3600)  # the restart itself takes a moment, and usage decays meanwhile
    for key, used in before.items():
        assert math.isclose(after.get(key, 0.0), used * decayed, rel_tol=1e-6), (key, used, after.get(key))


def test_a_requeued_run_is_charged_once_and_still_after_a_restart(tmp_path):
    async def test(h):
        job = await h.submit("alice", seconds=500, requeue=True)
        await h.until(lambda: h.job(job).state is JobState.RUNNING)
        node = h.ctl.state.nodes.names[h.job(job).alloc.nodes[0]]
        await h.until(lambda: h.ctl.clock() > 100)
        h.agents.crash(node)  # the first run ends NODE_FAIL and is charged; the second runs on
        await h.until(lambda: h.job(job).restart_count == 1 and h.job(job).state is JobState.RUNNING, within=300)
        await h.until(lambda: not h.ctl.store.dirty)
        before = usage(h)[("default", "alice")]
        await h.stop()
        await h.start()
        return before, usage(h)[("default", "alice")]

    before, after = run(test, tmp_path, config=config(0))  # no decay: the sums compare exactly
    assert before > 0 and after == before
