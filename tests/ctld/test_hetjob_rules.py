"""Heterogeneous jobs in the controller, on a fake clock (ctldkit.py): requeue, node failure,
holds and time limits, each as Slurm 22.05 did it on the twin (docker/slurm; the sessions
hetjob_requeue and hetjob_limits in tests/live/sessions.py record what could be typed there).

* ``scontrol requeue LEADER``, running or ended: every component's run is recorded REQUEUED
  and all go back to PENDING (BeginTime), restart count 1, and start again together;
  ``requeuehold`` holds them all; ``scontrol release LEADER`` releases them all.
* ``scontrol requeue LEADER+1``: "Job not heterogeneous job leader", pending or not.
* The second component's node lost (``docker pause minislurm-c2`` on the twin): both runs were
  recorded NODE_FAIL and both components requeued, restart count 1.
* Each component has its own time limit: the second component's passing first ended it alone
  (TIMEOUT) while the leader ran on; the leader's passing first ended it TIMEOUT and the second
  component FAILED 0:15, as the script was killed.
"""

from __future__ import annotations

import asyncio

import pytest
from ctldkit import run

from minislurm.core import errors
from minislurm.core.errors import SlurmError
from minislurm.core.states import JobState, Reason
from minislurm.ctld import accounting, actions


async def _hetjob(h, *, leader: dict | None = None, second: dict | None = None, **kw) -> tuple[int, int]:
    """A two-component job (one CPU each) started on both nodes: (leader, component) ids."""
    leader_id = await h.submit(cpus_per_task=1, components=[{"cpus_per_task": 1, **(second or {})}],
                               **(leader or {}), **kw)
    await h.until(lambda: all(h.job(j).state is JobState.RUNNING for j in (leader_id, leader_id + 1)))
    return leader_id, leader_id + 1


def _runs(h, job_id: int) -> list[tuple[int, str]]:
    """(restart, state) of the job line of each run of ``job_id``, as sacct -D -X lists them."""
    return [(r["restart"], r["state"]) for r in accounting.query(h.ctl, job_ids=[job_id], duplicates=True)
            if r["step"] is None and r["job_id"] == job_id]


def _both(h, leader: int, state: JobState) -> bool:
    return h.job(leader).state is state and h.job(leader + 1).state is state


def test_requeue_of_the_leader_requeues_every_component_and_they_start_again_together(tmp_path):
    async def test(h):
        leader, second = await _hetjob(h)
        stopped = await actions.requeue(h.ctl, "alice", leader)
        await h.ctl.running.deliver_ending(stopped)
        await h.until(lambda: _both(h, leader, JobState.PENDING))
        pending = [(h.job(j).reason, h.job(j).restart_count) for j in (leader, second)]
        waited = await h.until(lambda: _both(h, leader, JobState.RUNNING))
        return pending, waited, [h.job(j).restart_count for j in (leader, second)], _runs(h, second)

    pending, waited, restarts, runs = run(test, tmp_path, requeue_delay=5)
    assert pending == [(Reason.BEGIN_TIME, 1), (Reason.BEGIN_TIME, 1)]
    assert 5 <= waited <= 7 and restarts == [1, 1]
    assert runs == [(0, "REQUEUED"), (1, "RUNNING")]


def test_requeue_of_an_ended_heterogeneous_job_runs_every_component_again(tmp_path):
    async def test(h):
        leader = await h.submit(seconds=10, cpus_per_task=1, components=[{"cpus_per_task": 1}])
        await h.until(lambda: _both(h, leader, JobState.COMPLETED))
        assert await actions.requeue(h.ctl, "alice", leader) is None
        requeued = [(h.job(j).state, h.job(j).restart_count) for j in (leader, leader + 1)]
        await h.until(lambda: _both(h, leader, JobState.COMPLETED))
        return requeued, [h.job(j).restart_count for j in (leader, leader + 1)], _runs(h, leader), _runs(h, leader + 1)

    requeued, restarts, leader_runs, second_runs = run(test, tmp_path)
    assert requeued == [(JobState.PENDING, 1), (JobState.PENDING, 1)] and restarts == [1, 1]
    # the ended run is recorded REQUEUED (22.05: a plain job's too, its steps as they ended)
    assert leader_runs == second_runs == [(0, "REQUEUED"), (1, "COMPLETED")]


def test_a_component_is_requeued_by_its_leader_only(tmp_path):
    async def test(h):
        held = await h.submit(hold=True, cpus_per_task=1, components=[{"cpus_per_task": 1}])
        refusals = []
        for job_id in (held + 1, held):  # pending: the component's refusal comes first
            with pytest.raises(SlurmError) as caught:
                await actions.requeue(h.ctl, "alice", job_id)
            refusals.append(caught.value.message)
        await actions.release(h.ctl, "alice", held)
        await h.until(lambda: _both(h, held, JobState.RUNNING))
        with pytest.raises(SlurmError) as caught:
            await actions.requeue(h.ctl, "alice", held + 1, hold=True)
        return refusals, caught.value.message, h.job(held + 1).state

    refusals, running, state = run(test, tmp_path)
    assert refusals == [errors.NOT_HET_JOB_LEADER, errors.JOB_PENDING]
    assert running == errors.NOT_HET_JOB_LEADER and state is JobState.RUNNING


def test_requeuehold_holds_every_component_and_release_of_the_leader_frees_them_all(tmp_path):
    async def test(h):
        leader, second = await _hetjob(h)
        stopped = await actions.requeue(h.ctl, "alice", leader, hold=True)
        await h.ctl.running.deliver_ending(stopped)
        await h.until(lambda: _both(h, leader, JobState.PENDING))
        await asyncio.sleep(60)  # held: no start, the requeue delay long over
        held = [(h.job(j).state, h.job(j).hold, h.job(j).priority) for j in (leader, second)]
        await actions.release(h.ctl, "alice", leader)
        await h.until(lambda: _both(h, leader, JobState.RUNNING), within=5)
        await actions.hold(h.ctl, "alice", leader)  # a running job may be held: the hold waits for a requeue
        return held, [h.job(j).hold for j in (leader, second)]

    held, later = run(test, tmp_path)
    assert held == [(JobState.PENDING, "user", 0)] * 2 and later == ["user", "user"]


def test_the_loss_of_one_components_node_requeues_every_component(tmp_path):
    async def test(h):
        leader, second = await _hetjob(h)
        first_nodes = [h.job(j).alloc.nodes for j in (leader, second)]
        h.agents.crash(h.ctl.state.nodes.names[h.job(second).alloc.nodes[0]])
        await h.until(lambda: _both(h, leader, JobState.PENDING), within=60)
        restarts = [h.job(j).restart_count for j in (leader, second)]
        return first_nodes, restarts, _runs(h, leader), _runs(h, second)

    first_nodes, restarts, leader_runs, second_runs = run(test, tmp_path, slurmd_timeout=6)
    assert first_nodes[0] != first_nodes[1] and restarts == [1, 1]
    assert leader_runs == second_runs == [(0, "NODE_FAIL"), (1, "PENDING")]


def test_without_requeue_the_loss_of_one_components_node_ends_every_component_node_fail(tmp_path):
    async def test(h):
        leader, second = await _hetjob(h, leader={"requeue": False})
        h.agents.crash(h.ctl.state.nodes.names[h.job(leader).alloc.nodes[0]])
        await h.until(lambda: _both(h, leader, JobState.NODE_FAIL), within=60)
        return [(h.job(j).reason, h.job(j).restart_count) for j in (leader, second)]

    assert run(test, tmp_path, slurmd_timeout=6) == [(Reason.NODE_DOWN, 0)] * 2


def test_a_components_own_time_limit_ends_it_alone(tmp_path):
    async def test(h):
        leader, second = await _hetjob(h, leader={"time_limit_min": 3}, second={"time_limit_min": 1})
        await h.until(lambda: h.job(second).state.finished, within=120)
        alone = h.job(second).state, h.job(second).end_time - h.job(second).start_time, h.job(leader).state
        await h.until(lambda: h.job(leader).state.finished, within=200)
        return alone, h.job(leader).state, h.job(leader).end_time - h.job(leader).start_time

    alone, leader_state, leader_ran = run(test, tmp_path)
    assert alone == (JobState.TIMEOUT, 60.0, JobState.RUNNING)
    assert (leader_state, leader_ran) == (JobState.TIMEOUT, 180.0)


def test_the_leaders_time_limit_ends_every_component_as_its_killed_script_did(tmp_path):
    async def test(h):
        leader, second = await _hetjob(h, leader={"time_limit_min": 1}, second={"time_limit_min": 3})
        await h.until(lambda: h.job(second).state.finished, within=120)
        return [(h.job(j).state, h.job(j).exit_code, h.job(j).exit_signal, h.job(j).end_time - h.job(j).start_time)
                for j in (leader, second)]

    leader, second = run(test, tmp_path)
    assert leader[0] is JobState.TIMEOUT and leader[3] == second[3] == 60.0
    assert second[:3] == (JobState.FAILED, 0, 15)  # sacct: FAILED 0:15
