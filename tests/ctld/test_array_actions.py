"""A bare array id acts on every task (issue 22, item 3): scancel, scontrol hold|release|update
and requeue through the controller's own API (tests/ctld/apikit.py: nothing runs there) and,
for running tasks, on the fake clock (tests/ctld/ctldkit.py).  ``?task=N`` acts on one task."""

from __future__ import annotations

import asyncio

from apikit import good_job, serve
from ctldkit import run as run_fake

from minislurm.core.states import JobState, Reason


def run(tmp_path, body):
    async def main():
        async with serve(tmp_path) as api:
            await body(api)
    asyncio.run(main())


def _indices(first: int, last: int, throttle: int | None = None) -> dict:
    """``--array=first-last%throttle`` as sbatch sends it."""
    return {"indices": list(range(first, last + 1)), "max_running": throttle}


async def _array(api, first: int, last: int, throttle: int | None = None) -> tuple[int, list]:
    """Submit an array as alice; its id and its tasks in task order."""
    array = (await api.ok("POST", "/jobs", good_job(array=_indices(first, last, throttle)),
                          user="alice"))["job_id"]
    tasks = sorted((j for j in api.ctl.state.jobs.values() if j.array_job_id == array),
                   key=lambda j: j.array_task_id)
    return array, tasks


def test_scancel_of_an_array_id_cancels_every_pending_task(tmp_path):
    async def check(api):
        array, tasks = await _array(api, 1, 10)
        other = (await api.ok("POST", "/jobs", good_job(), user="alice"))["job_id"]
        await api.ok("POST", f"/jobs/{array}/cancel", {"uid": 0}, user="alice")
        assert [t.state for t in tasks] == [JobState.CANCELLED] * 10
        assert api.ctl.state.jobs[other].state is JobState.PENDING
        assert not [j for j in api.ctl.state.pending if api.ctl.state.jobs[j].array_job_id == array]
        # and again: every task is done, so Slurm's answer for a finished job
        status, reply, _ = await api.call("POST", f"/jobs/{array}/cancel", {"uid": 0}, user="alice")
        assert (status, reply) == (400, {"error": "Job/step already completing or completed"})
    run(tmp_path, check)


def test_a_task_alone_held_takes_its_own_id_and_cancelled_leaves_no_trace(tmp_path):
    """As on 22.05 (twin session array_ids): ``scontrol uhold A_0`` takes the task out of the
    array's record with the next free id; ``scancel A_2`` of a task waiting in the record beside
    others clears it (no job, no sacct row); the last one left there is cancelled as a job."""
    async def check(api):
        array, tasks = await _array(api, 0, 3)
        state = api.ctl.state

        async def records() -> list:
            return [(r["job_id"], r["display_id"], r["state"])
                    for r in (await api.ok("GET", "/acct", params={"jobs": str(array)}))["records"]]

        await api.ok("POST", f"/jobs/{array}/cancel", {"uid": 0}, user="alice", params={"task": "2"})
        assert tasks[2].job_id not in state.jobs and tasks[2].job_id not in state.pending
        assert sorted(state.jobs[t].array_task_id for t in state.array_tasks[array]) == [0, 1, 3]
        await api.ok("POST", f"/jobs/{array}/hold", {}, user="alice", params={"task": "0"})
        assert (tasks[0].job_id, tasks[0].shown_id, tasks[0].hold) == (array + 1, array + 1, "user")
        assert state.pending[array + 1] is tasks[0]
        assert [t.shown_id for t in (tasks[1], tasks[3])] == [array, array] and tasks[1].job_id < 0
        status, reply, _ = await api.call("POST", f"/jobs/{array}/hold", {}, user="alice", params={"task": "7"})
        assert (status, reply["error"]) == (404, "Invalid job id specified")
        await api.ok("POST", f"/jobs/{array}/cancel", {"uid": 0}, user="alice", params={"task": "1"})
        await api.ok("POST", f"/jobs/{array}/cancel", {"uid": 0}, user="alice", params={"task": "3"})
        assert tasks[3].state is JobState.CANCELLED  # the record's last task: a job that ends
        assert sorted(await records(), key=lambda r: r[1]) == [
            (array + 1, f"{array}_0", "PENDING"), (array, f"{array}_3", "CANCELLED")]
    run(tmp_path, check)


def test_hold_release_and_update_of_an_array_id_change_every_task(tmp_path):
    async def check(api):
        array, tasks = await _array(api, 1, 5)
        await api.ok("POST", f"/jobs/{array}/hold", {}, user="alice")
        assert [(t.hold, t.priority, t.reason) for t in tasks] == [("user", 0, Reason.HELD_USER)] * 5
        await api.ok("POST", f"/jobs/{array}/release", user="alice")
        assert all(t.hold is None and t.priority > 0 for t in tasks)
        await api.ok("POST", f"/jobs/{array}/update", {"TimeLimit": "5", "Name": "renamed"}, user="alice")
        assert [(t.time_limit, t.name) for t in tasks] == [(300, "renamed")] * 5
        # a refusal for every task is the answer, and changes none
        status, reply, _ = await api.call("POST", f"/jobs/{array}/update", {"TimeLimit": "50"}, user="alice")
        assert (status, reply["error"]) == (403, "Access/permission denied")
        assert {t.time_limit for t in tasks} == {300}
    run(tmp_path, check)


def test_array_task_throttle_is_changed_for_the_whole_array(tmp_path):
    async def check(api):
        array, tasks = await _array(api, 1, 6, 2)
        await api.ok("POST", f"/jobs/{array}/update", {"ArrayTaskThrottle": "3"}, user="alice")
        assert [t.array_max_running for t in tasks] == [3] * 6
        view = await api.ok("GET", f"/jobs/{array}", user="alice")
        assert view["array_max_tasks"] == 3
        await api.ok("POST", f"/jobs/{array}/update", {"ArrayTaskThrottle": "0"}, user="alice")  # no limit
        assert [t.array_max_running for t in tasks] == [None] * 6
        await api.ok("POST", f"/jobs/{array}/update", {"ArrayTaskThrottle": "1"}, user="alice",
                     params={"task": "4"})  # through one task: still the array's throttle
        assert [t.array_max_running for t in tasks] == [1] * 6
        status, reply, _ = await api.call("POST", f"/jobs/{array}/update", {"ArrayTaskThrottle": "-1"},
                                          user="alice")
        assert (status, reply["error"]) == (400, "Task count specification invalid")
        assert [t.array_max_running for t in tasks] == [1] * 6
        single = (await api.ok("POST", "/jobs", good_job(), user="alice"))["job_id"]
        await api.ok("POST", f"/jobs/{single}/update", {"ArrayTaskThrottle": "4"}, user="alice")
        assert api.ctl.state.jobs[single].array_max_running is None  # not an array: nothing to throttle
    run(tmp_path, check)


def test_scancel_of_an_array_id_ends_its_running_and_pending_tasks(tmp_path):
    """On the fake clock: two tasks run (one node each), two wait; the array's id ends them all."""
    from minislurm.ctld import actions

    async def cancel(ctl, job_id):
        """What the API's cancel does (``targets`` is new: on older code, the action itself)."""
        try:
            from minislurm.ctld import targets
        except ImportError:
            return await actions.cancel(ctl, "alice", 1000, job_id)
        for job in await targets.each(ctl, job_id, None, lambda job: actions.cancel(ctl, "alice", 1000, job.job_id)):
            if job is not None:  # a running task hears of its stop after the answer
                await ctl.running.deliver_ending(job)

    async def test(h):
        array = await h.submit(array=_indices(0, 3), exclusive=True)
        tasks = [h.job(t) for t in h.ctl.state.array_tasks[array]]  # their ids change as they start
        await h.until(lambda: sum(t.state is JobState.RUNNING for t in tasks) == 2)
        await cancel(h.ctl, array)
        await h.until(lambda: all(t.state.finished for t in tasks))
        return [t.state for t in tasks]

    assert run_fake(test, tmp_path) == [JobState.CANCELLED] * 4


def test_a_raised_throttle_lets_more_tasks_start(tmp_path):
    from minislurm.ctld import actions

    async def test(h):
        array = await h.submit(array=_indices(0, 3, 1), cpus_per_task=4)
        tasks = [h.job(t) for t in h.ctl.state.array_tasks[array]]  # their ids change as they start
        await h.until(lambda: sum(t.state is JobState.RUNNING for t in tasks) == 1)
        await asyncio.sleep(5)
        before = sum(t.state is JobState.RUNNING for t in tasks)
        await actions.update_job(h.ctl, "alice", tasks[-1].job_id, {"ArrayTaskThrottle": "3"})
        await h.until(lambda: sum(t.state is JobState.RUNNING for t in tasks) == 3)
        await asyncio.sleep(5)
        return before, sum(t.state is JobState.RUNNING for t in tasks)

    assert run_fake(test, tmp_path) == (1, 3)


def test_array_tasks_start_in_the_pass_that_settles_their_dependency(tmp_path):
    """A task whose afterok is met starts in the same pass and takes its own id there: what the
    controller saves of the settled dependency must follow the task to that id (it once looked
    the task up under the new id before moving its record, and every later pass failed)."""
    async def test(h):
        first = await h.submit(seconds=30)
        array = await h.submit(array=_indices(0, 3), dependency={"terms": [["afterok", [first]]]}, seconds=10)
        tasks = [h.job(t) for t in h.ctl.state.array_tasks[array]]  # their ids change as they start
        await h.until(lambda: all(t.state.finished for t in tasks))
        later = await h.submit(seconds=5)  # passes still run
        await h.until(lambda: h.job(later).state.finished)
        return [t.state for t in tasks], sorted(t.job_id for t in tasks), array, h.job(later).state

    states, ids, array, later = run_fake(test, tmp_path)
    assert states == [JobState.COMPLETED] * 4 and later is JobState.COMPLETED
    assert ids == [array, array + 1, array + 2, array + 3]
