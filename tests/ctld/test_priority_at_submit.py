"""A job's first priority counts its fair share, as every later one does (issue 20, item 8).

On the real-Slurm twin (Slurm 22.05.8, the weights of docker/slurm/slurm.conf: fair share
10000), a new user's job that starts at once and the same user's job left pending show the
same priority (``squeue -o "%i %t %Q"``: ``1 R 11562`` and ``2 PD 11562``), and sprio shows
FAIRSHARE 10000 for the pending one.  minislurm gave a job its first priority without the
fair-share factor (and a user no association until a first job ended), so a job that started
at once kept a priority 10000 below the pending ones, whose priority was recomputed with it.
"""

from __future__ import annotations

from minislurm.cluster.confgen import lab_config
from minislurm.core.states import JobState
from tests.ctld.ctldkit import run


def test_a_job_that_starts_at_once_has_the_priority_of_its_pending_twin(tmp_path):
    cfg = lab_config(2, 4, 8, 64_000)  # fair share 10000, recomputed every PriorityCalcPeriod
    cfg.priority.calc_period = 3600.0  # so the first priorities are the ones seen here

    async def test(h):
        running = await h.submit("carol", seconds=600, nodes_min=2, exclusive=True)
        await h.until(lambda: h.job(running).state is JobState.RUNNING)
        pending = await h.submit("carol", seconds=60, nodes_min=2, exclusive=True)
        await h.until(lambda: h.job(pending).reason == "Resources")
        factors = h.ctl.fairshare.factors(h.ctl.clock())
        return h.job(running).priority, h.job(pending).priority, factors.get(("default", "carol"))

    first, second, fairshare = run(test, tmp_path, config=cfg)
    assert fairshare == 1.0  # the only user, nothing used yet
    assert first == second and first > 10_000, (first, second)


def test_a_restarted_controller_counts_the_fair_share_of_a_user_whose_jobs_all_wait(tmp_path):
    cfg = lab_config(2, 4, 8, 64_000)

    async def test(h):
        job = await h.submit("dave", seconds=60, nodes_min=3)  # more nodes than there are: waits
        await h.until(lambda: not h.ctl.store.dirty)
        await h.stop()
        await h.start()  # the new controller learns dave's association from the job alone
        await h.until(lambda: h.ctl.fairshare is not None)
        return h.ctl.fairshare.factors(h.ctl.clock()).get(("default", "dave")), h.job(job).priority

    fairshare, prio = run(test, tmp_path, config=cfg)
    assert fairshare == 1.0 and prio > 10_000, (fairshare, prio)
