"""The controller's rules, in-process on a fake clock with fake agents (ctldkit.py): node
health, requeue, fencing, time limits and recovery, each in milliseconds of real time.
The same behaviours are tested end to end with real daemons in tests/live."""

from __future__ import annotations

import asyncio

from ctldkit import run

from minislurm.cluster.confgen import lab_config
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


# -- rules about waiting jobs and runs the controller ends ------------------------------------

def test_kill_on_invalid_dep_cancels_a_job_whose_dependency_failed_and_keeps_one_without(tmp_path):
    """afterok on a job that fails: with --kill-on-invalid-dep=yes the dependant is CANCELLED
    (DependencyNeverSatisfied); without, it waits for ever with that reason."""
    async def test(h):
        first = await h.submit(seconds=10, exit_code=1)
        after = {"terms": [["afterok", [first]]]}  # what sbatch -d afterok:FIRST sends
        killed = await h.submit(dependency=after, kill_on_invalid_dep=True)
        kept = await h.submit(dependency=after)
        await h.until(lambda: h.job(killed).state.finished)
        await asyncio.sleep(30)
        return h.job(first), h.job(killed), h.job(kept)

    first, killed, kept = run(test, tmp_path)
    assert first.state is JobState.FAILED
    assert (killed.state, killed.reason) == (JobState.CANCELLED, Reason.DEPENDENCY_NEVER)
    assert killed.end_time >= first.end_time and killed.end_time - first.end_time < 2
    assert (kept.state, kept.reason) == (JobState.PENDING, Reason.DEPENDENCY_NEVER)


def test_a_held_job_waits_until_released_and_a_requeue_hold_holds_it_again(tmp_path):
    from minislurm.ctld import actions

    async def test(h):
        job_id = await h.submit(hold=True)
        await asyncio.sleep(60)
        held = h.job(job_id).state, h.job(job_id).reason
        await actions.release(h.ctl, "alice", job_id)
        await h.until(lambda: h.job(job_id).state is JobState.RUNNING, within=5)
        stopped = await actions.requeue(h.ctl, "alice", job_id, hold=True)
        await h.ctl.running.deliver_ending(stopped)  # the agents are told after the answer
        await h.until(lambda: h.job(job_id).state is JobState.PENDING)
        await asyncio.sleep(60)
        job = h.job(job_id)
        return held, (job.state, job.reason, job.restart_count)

    held, requeued = run(test, tmp_path)
    assert held == (JobState.PENDING, "JobHeldUser")
    assert requeued == (JobState.PENDING, "JobHeldUser", 1)


def test_a_reserved_job_waits_for_its_reservation_and_a_lost_node_is_replaced_inside_it(tmp_path):
    """A job for a reservation starting in 10 minutes waits (Reservation) and starts at its
    start; its node crashes; the reservation (by count) takes the free node in place of the
    lost one, and the requeued job runs again there, inside it."""
    from minislurm.ctld import reservations

    async def test(h):
        start = asyncio.get_running_loop().time() + 600
        await reservations.create(h.ctl, {"name": "run", "node_count": 1, "start": start, "duration": 86_400,
                                          "users": "root", "partition": "gpu"}, "root")
        job_id = await h.submit("root", reservation="run")
        await asyncio.sleep(300)
        waiting = h.job(job_id).reason
        waited = await h.until(lambda: h.job(job_id).state is JobState.RUNNING)
        first = h.ctl.state.nodes.names[h.job(job_id).alloc.nodes[0]]
        h.agents.crash(first)
        await h.until(lambda: h.job(job_id).restart_count == 1 and h.job(job_id).state is JobState.RUNNING,
                      within=120)
        again = h.ctl.state.nodes.names[h.job(job_id).alloc.nodes[0]]
        return waiting, 300 + waited, first, again, h.ctl.state.reservations["run"].nodes

    waiting, started_at, first, again, reserved = run(test, tmp_path, slurmd_timeout=6)
    assert waiting == Reason.RESERVATION and 600 <= started_at <= 602
    assert again != first and reserved == (again,)


def test_an_allocation_whose_srun_is_silent_ends_at_inactive_limit(tmp_path):
    async def test(h):
        job_id = await h.submit(batch=False)
        await h.until(lambda: h.job(job_id).state is JobState.RUNNING, within=5)
        ran = await h.until(lambda: h.job(job_id).state.finished, within=300)
        job = h.job(job_id)
        return ran, job.state, job.reason

    ran, state, reason = run(test, tmp_path, inactive_limit=60)
    assert (state, reason) == (JobState.TIMEOUT, Reason.INACTIVE_LIMIT) and 60 <= ran <= 62 + 5


def test_a_node_that_cannot_launch_is_drained_and_the_job_held_not_failed(tmp_path):
    """A broken node (the agent refuses the script for a reason of its own) is drained, and
    the job is requeued held (JobHeldAdmin), not failed: one broken node does not fail a queue."""
    from minislurm.ctld.running import LAUNCH_FAILED_NODE

    async def test(h):
        for name in h.ctl.state.nodes.names:
            h.agents.refuse[name] = {"ok": False, "error": "spool directory is full", "fault": "node"}
        job_id = await h.submit()
        await h.until(lambda: h.job(job_id).restart_count == 1)
        await asyncio.sleep(30)
        job, nodes = h.job(job_id), h.ctl.state.nodes
        drained = [n for i, n in enumerate(nodes.names) if nodes.drain[i]]
        return job.state, job.reason, drained, {nodes.reason[nodes.index[n]] for n in drained}

    state, reason, drained, why = run(test, tmp_path)
    assert (state, reason) == (JobState.PENDING, "JobHeldAdmin")
    assert len(drained) == 1 and why == {LAUNCH_FAILED_NODE}


def test_an_allocation_on_a_lost_node_ends_node_fail_and_only_a_batch_job_is_requeued(tmp_path):
    async def test(h):
        alloc = await h.submit(batch=False, requeue=True)
        batch = await h.submit(requeue=True)
        await h.until(lambda: h.job(alloc).state is h.job(batch).state is JobState.RUNNING, within=5)
        nodes = {h.ctl.state.nodes.names[h.job(j).alloc.nodes[0]] for j in (alloc, batch)}
        for name in nodes:
            h.agents.crash(name)
        await h.until(lambda: h.job(alloc).state.finished and h.job(batch).restart_count == 1, within=60)
        return h.job(alloc), h.job(batch)

    alloc, batch = run(test, tmp_path, slurmd_timeout=6)
    assert (alloc.state, alloc.reason, alloc.restart_count) == (JobState.NODE_FAIL, Reason.NODE_DOWN, 0)
    assert batch.state is JobState.PENDING


def test_an_allocation_starts_in_its_request_behind_a_queue_of_its_own_priority(tmp_path):
    """srun's allocation is tried as it is asked for (sched/allocation): behind pending GPU jobs
    of the same priority it starts at once, while a batch job asking the same, sent first,
    waits for the backfill cycle, as on the twin (Slurm 22.05)."""
    cfg = lab_config(2, 4, 8, 64_000)
    cfg.priority.calc_period = 3600.0
    cfg.sched.bf_interval = 3600.0  # no backfill cycle comes during the test

    async def test(h):
        for _ in range(8):
            await h.submit("erin", gres=[["gpu", None, 1]], time_limit_min=60)
        waiting = [await h.submit("erin", gres=[["gpu", None, 1]], time_limit_min=60) for _ in range(2)]
        await h.until(lambda: h.job(waiting[0]).reason == "Resources")
        batch = await h.submit("erin", time_limit_min=5)
        await asyncio.sleep(1)  # the main passes this submission asked for
        srun = await h.submit("erin", batch=False, time_limit_min=5)
        started_in_request = h.job(srun).state is JobState.RUNNING
        await asyncio.sleep(1)
        return started_in_request, h.job(srun).priority, h.job(waiting[0]).priority, h.job(batch).state

    started, srun_prio, waiting_prio, batch_state = run(test, tmp_path, config=cfg)
    assert started and srun_prio == waiting_prio
    assert batch_state is JobState.PENDING


def test_an_allocation_that_must_wait_brings_the_backfill_cycle_forward(tmp_path):
    """srun behind GPU jobs of *higher* priority is not started in its request; it fits beside
    them, so backfill starts it, and the cycle comes at once for somebody waiting at a terminal,
    not at the next bf_interval tick (an hour here). A batch job in the same place waits for
    a cycle, and this one starts it too."""
    cfg = lab_config(2, 4, 8, 64_000)
    cfg.priority.calc_period = 3600.0
    cfg.sched.bf_interval = 3600.0

    async def test(h):
        for _ in range(8):
            await h.submit("erin", gres=[["gpu", None, 1]], time_limit_min=60)
        waiting = await h.submit("erin", gres=[["gpu", None, 1]], time_limit_min=60)
        await h.until(lambda: h.job(waiting).reason == "Resources")
        batch = await h.submit("erin", time_limit_min=5, nice=100)
        await asyncio.sleep(1)
        batch_waited = h.job(batch).state is JobState.PENDING
        srun = await h.submit("erin", batch=False, time_limit_min=5, nice=100)
        started_in_request = h.job(srun).state is JobState.RUNNING
        took = await h.until(lambda: h.job(srun).state is JobState.RUNNING, within=5)
        return batch_waited, started_in_request, took, h.job(batch).state, h.ctl.stats.backfill.count

    batch_waited, started_in_request, took, batch_state, cycles = run(test, tmp_path, config=cfg)
    assert batch_waited and not started_in_request
    assert took < 1 and cycles == 1 and batch_state is JobState.RUNNING
