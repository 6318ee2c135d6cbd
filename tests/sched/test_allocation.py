"""srun and salloc's allocations tried at once (:mod:`minislurm.sched.allocation`), as seen on
the twin (Slurm 22.05): behind pending jobs of the same priority an allocation starts in the
request itself; behind one of higher priority it waits for a pass."""

from __future__ import annotations

from minislurm.core.states import JobState
from minislurm.sched.allocation import outranked, try_at_once
from minislurm.sched.apply import apply


def _blocked_queue(lab):
    """Two nodes whose GPUs are all taken, and two GPU jobs waiting for them."""
    c = lab(nodes=2, gpus=4)
    for _ in range(8):
        c.submit(0, gpus=1, minutes=60)
    c.run(0)
    waiting = [c.submit(1, gpus=1), c.submit(1, gpus=1)]
    c.run(1)
    assert c.reason(waiting[0]) == "Resources" and c.reason(waiting[1]) == "Priority"
    return c, waiting


def test_an_allocation_behind_jobs_of_its_own_priority_starts_at_once(lab):
    c, waiting = _blocked_queue(lab)
    srun = c.submit(2, cpus=1)
    assert srun.priority == waiting[0].priority
    # The main stage alone keeps it behind the blocked partition...
    c.run(2, backfill=False)
    assert srun.state is JobState.PENDING and c.reason(srun) == "Priority"
    # ...while the allocation's own attempt starts it on a node's free CPUs.
    result = try_at_once(c.state, srun, 2)
    assert [s.job_id for s in result.starts] == [srun.job_id]
    apply(c.state, result)
    assert srun.state is JobState.RUNNING and all(w.state is JobState.PENDING for w in waiting)


def test_an_allocation_outranked_by_a_job_that_could_run_waits_for_a_pass(lab):
    c, waiting = _blocked_queue(lab)
    waiting[1].priority += 1
    srun = c.submit(2, cpus=1)
    assert outranked(srun, c.state, 2)
    assert try_at_once(c.state, srun, 2).starts == ()


def test_a_held_or_later_job_of_higher_priority_does_not_outrank(lab):
    c, waiting = _blocked_queue(lab)
    held = c.submit(1, gpus=1, hold="user")
    held.priority = waiting[0].priority + 100  # as if released by an operator's priority
    later = c.submit(1, gpus=1, begin_time=3600.0)
    later.priority = waiting[0].priority + 100
    srun = c.submit(2, cpus=1)
    assert not outranked(srun, c.state, 2)
    assert [s.job_id for s in try_at_once(c.state, srun, 2).starts] == [srun.job_id]


def test_an_allocation_that_does_not_fit_is_left_for_the_pass(lab):
    c, _ = _blocked_queue(lab)
    srun = c.submit(2, gpus=1)
    result = try_at_once(c.state, srun, 2)
    assert result.starts == () and not result.reasons
