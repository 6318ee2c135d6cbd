"""The controller's rules, in-process on a fake clock with fake agents (ctldkit.py): node
health, requeue, fencing, time limits and recovery, each in milliseconds of real time.
The same behaviours are tested end to end with real daemons in tests/live."""

from __future__ import annotations

import asyncio

from ctldkit import run

from minislurm.core.states import JobState, Reason
from minislurm.ctld.health import NOT_RESPONDING


def test_a_batch_job_runs_and_completes_at_its_end(tmp_path):
    async def test(h):
        job_id = await h.submit(seconds=30, time_limit_min=10)
        started = await h.until(lambda: h.job(job_id).state is JobState.RUNNING)
        ran = await h.until(lambda: h.job(job_id).state is JobState.COMPLETED)
        job = h.job(job_id)
        return started, ran, job.end_time - job.start_time, job.exit_code

    started, ran, elapsed, code = run(test, tmp_path)
    assert started < 1 and 29 <= ran <= 31 and elapsed == 30 and code == 0


def test_a_nonzero_exit_is_failed_with_its_reason(tmp_path):
    async def test(h):
        job_id = await h.submit(seconds=5, exit_code=3)
        await h.until(lambda: h.job(job_id).state.finished)
        return h.job(job_id)

    job = run(test, tmp_path)
    assert (job.state, job.exit_code, job.reason) == (JobState.FAILED, 3, Reason.NON_ZERO_EXIT)


def test_the_time_limit_ends_a_job_timeout_on_time(tmp_path):
    async def test(h):
        job_id = await h.submit(time_limit_min=1)  # runs for ever
        await h.until(lambda: h.job(job_id).state is JobState.RUNNING)
        await h.until(lambda: h.job(job_id).state.finished, within=120)
        job = h.job(job_id)
        node = h.agents.nodes[h.ctl.state.nodes.names[job.alloc.nodes[0]]]
        return job, node.terminated

    job, terminated = run(test, tmp_path)
    assert (job.state, job.reason) == (JobState.TIMEOUT, Reason.TIME_LIMIT)
    assert job.end_time - job.start_time == 60.0 and terminated == [(job.job_id, 0)]


def test_a_shorter_time_limit_set_while_running_takes_effect_at_once(tmp_path):
    """scontrol update TimeLimit on a running job replaces its timer (the old one never fires)."""
    from minislurm.ctld import actions

    async def test(h):
        job_id = await h.submit(time_limit_min=10)
        await h.until(lambda: h.job(job_id).state is JobState.RUNNING)
        await asyncio.sleep(30)
        await actions.update_job(h.ctl, "root", job_id, {"TimeLimit": "2"})
        await h.until(lambda: h.job(job_id).state.finished, within=200)
        job = h.job(job_id)
        return job.state, job.end_time - job.start_time, len(h.ctl.runs)

    state, ran, runs = run(test, tmp_path)
    assert (state, ran, runs) == (JobState.TIMEOUT, 120.0, 0)


def test_a_silent_node_goes_down_after_slurmd_timeout_and_its_job_is_requeued_elsewhere(tmp_path):
    """DOWN SlurmdTimeout after the node's last answer (within the quarter-second check),
    however long the pings to its dead address take (each waits out its timeout), and its
    batch job runs again on another node with the same id."""
    async def test(h):
        job_id = await h.submit()
        await h.until(lambda: h.job(job_id).state is JobState.RUNNING)
        first = h.ctl.state.nodes.names[h.job(job_id).alloc.nodes[0]]
        h.agents.crash(first)
        n = h.ctl.state.nodes.index[first]
        await h.until(lambda: h.ctl.state.nodes.down[n], step=0.01)
        silent_for = asyncio.get_running_loop().time() - h.ctl.agents[first].last_response
        reason = h.ctl.state.nodes.reason[n]
        await h.until(lambda: h.job(job_id).state is JobState.RUNNING, within=60)
        job = h.job(job_id)
        return first, silent_for, reason, job.restart_count, h.ctl.state.nodes.names[job.alloc.nodes[0]]

    first, silent_for, reason, restarts, second = run(test, tmp_path, slurmd_timeout=6)
    assert 6 <= silent_for <= 6 + 0.26 and reason == NOT_RESPONDING
    assert restarts == 1 and second != first


def test_a_node_back_from_a_partition_has_its_stale_run_fenced(tmp_path):
    """A node cut off long enough goes DOWN and its job runs again elsewhere; when it answers
    again it still runs the old incarnation, which the controller kills (fencing)."""
    async def test(h):
        job_id = await h.submit()
        await h.until(lambda: h.job(job_id).state is JobState.RUNNING)
        name = h.ctl.state.nodes.names[h.job(job_id).alloc.nodes[0]]
        h.agents.cut_off(name)
        await h.until(lambda: h.job(job_id).restart_count == 1 and h.job(job_id).state is JobState.RUNNING,
                      within=60)
        h.agents.reconnect(name)
        node = h.agents.nodes[name]
        await h.until(lambda: (job_id, 0) in node.terminated, within=30)
        await h.until(lambda: not node.running, within=5)
        return h.job(job_id), name, h.ctl.state.nodes.down[h.ctl.state.nodes.index[name]]

    job, name, still_down = run(test, tmp_path, slurmd_timeout=6)
    assert job.state is JobState.RUNNING and job.restart_count == 1  # the new run is untouched
    assert not still_down  # ReturnToService=1: back once it answers


def test_a_restarted_controller_recovers_queue_running_jobs_and_ids(tmp_path):
    async def test(h):
        running = await h.submit(seconds=100)
        pending = await h.submit(nodes_min=2, gres=None, time_limit_min=5, exclusive=True)
        await h.until(lambda: h.job(running).state is JobState.RUNNING)
        before = {j: (h.job(j).state, h.job(j).alloc) for j in (running, pending)}
        await h.stop()
        await h.start()  # same store, same agents (still running the job)
        after = {j: (h.job(j).state, h.job(j).alloc) for j in (running, pending)}
        await h.agents.register_all()
        next_id = await h.submit(seconds=1)
        await h.until(lambda: h.job(running).state is JobState.COMPLETED, within=200)
        await h.until(lambda: h.job(pending).state is JobState.RUNNING, within=60)
        return before, after, next_id, h.ctl.state.jobs[running].restart_count

    before, after, next_id, restarts = run(test, tmp_path)
    assert after == before and next_id == 3 and restarts == 0  # adopted, not requeued


def test_first_job_id_starts_the_ids_and_a_restart_goes_on_from_the_last(tmp_path):
    async def test(h):
        first = [await h.submit(seconds=1) for _ in range(2)]
        await h.stop()
        await h.start()  # the saved next id wins over FirstJobId
        return first, await h.submit(seconds=1)

    first, after_restart = run(test, tmp_path, first_job_id=5001)
    assert first == [5001, 5002] and after_restart == 5003
