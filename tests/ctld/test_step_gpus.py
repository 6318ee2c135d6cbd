"""Steps share out their job's GPUs and CPUs, in-process on a fake clock (ctldkit.py): each
step gets its own, frees them when it ends, and a step that finds them taken waits in its
request until a step of its job ends, as Slurm 22.05 shares them (twin session step_gpus,
replayed live by tests/live/test_slurm_conformance.py)."""

from __future__ import annotations

import asyncio

import pytest
from ctldkit import run

from minislurm.core import errors
from minislurm.core.errors import SlurmError
from minislurm.core.states import JobState
from minislurm.ctld import steps
from minislurm.ctld.present import full_job

RUN = {"ntasks": 1, "exact": True, "gpus_per_node": 1}  # srun -n1 --exact --gres=gpu:1
JOB = {"nodes_min": 1, "ntasks": 8, "gres": [["gpu", None, 4]]}  # sbatch -N1 -n8 --gres=gpu:4


async def _running(h, **spec) -> int:
    job_id = await h.submit(**{**JOB, **spec})
    await h.until(lambda: h.job(job_id).state is JobState.RUNNING)
    return job_id


def _end(h, job_id: int, step: dict):
    return steps.complete(h.ctl, "alice", job_id, step["step_id"], 0, 0)


def test_concurrent_steps_each_get_their_own_gpu_and_cpu_in_the_credential(tmp_path):
    async def test(h):
        job_id = await _running(h)
        made = [await steps.create(h.ctl, "alice", job_id, dict(RUN)) for _ in range(4)]
        claims = h.ctl.signer.verify_credential(made[3]["credential"])
        return made, claims

    made, claims = run(test, tmp_path)
    assert [(s["step_id"], s["step_gpus"], s["node_cpus"]) for s in made] == [
        (i, {"gpu01": [i]}, [1]) for i in range(4)]
    assert (claims["gpus"], claims["cpus"]) == ({"gpu01": [3]}, [1])  # what slurmd sets the task's env from


def test_a_busy_step_waits_until_a_step_of_its_job_ends_then_is_told_to_ask_again(tmp_path):
    async def test(h):
        loop = asyncio.get_running_loop()
        job_id = await _running(h)
        made = [await steps.create(h.ctl, "alice", job_id, dict(RUN)) for _ in range(4)]
        asked = loop.time()
        fifth = asyncio.ensure_future(steps.create(h.ctl, "alice", job_id, {**RUN, "wait": 60}))
        await h.until(lambda: h.ctl.runs[job_id].pending_steps)
        shown = full_job(h.ctl, h.job(job_id))["pending_steps"]
        await asyncio.sleep(10)
        waiting = not fifth.done()
        await _end(h, job_id, made[2])
        with pytest.raises(SlurmError) as busy:
            await fifth
        waited = loop.time() - asked
        again = await steps.create(h.ctl, "alice", job_id, dict(RUN))
        return shown, waiting, str(busy.value), waited, again, h.ctl.runs[job_id].pending_steps

    shown, waiting, busy, waited, again, pending = run(test, tmp_path)
    assert shown == [{"ntasks": 1, "nodes": 1, "cpus": 1}] and waiting and pending == []
    assert busy.endswith(errors.NODES_BUSY) and 10 <= waited < 11  # woken by the end, not the 60 s
    assert (again["step_id"], again["step_gpus"]) == (4, {"gpu01": [2]})  # the freed GPU; no id was spent


def test_a_busy_step_gives_up_after_its_wait_and_its_job_end_wakes_it(tmp_path):
    async def test(h):
        loop = asyncio.get_running_loop()
        job_id = await _running(h)
        await steps.create(h.ctl, "alice", job_id, {"ntasks": 1})  # not --exact: all 8 CPUs
        start = loop.time()
        with pytest.raises(SlurmError, match=errors.NODES_BUSY):
            await steps.create(h.ctl, "alice", job_id, {"ntasks": 1, "exact": True, "gpus_per_node": 0, "wait": 5})
        timed_out = loop.time() - start
        other = await _running(h, seconds=20)  # its script ends 20 s after it starts
        start = loop.time()
        await steps.create(h.ctl, "alice", other, {"ntasks": 1, "exact": True, "gpus_per_node": 4})
        with pytest.raises(SlurmError) as ended:
            await steps.create(h.ctl, "alice", other, {**RUN, "wait": 300})
        return timed_out, loop.time() - start, str(ended.value)

    timed_out, woken_after, ended = run(test, tmp_path)
    assert 5 <= timed_out < 5.5 and 19 < woken_after < 21  # woken by its job's end
    assert ended.endswith(errors.NODES_BUSY)  # srun's next request is told the job is over


def test_what_22_05_shares_and_what_it_refuses(tmp_path):
    async def test(h):
        job_id = await _running(h)
        held = await steps.create(h.ctl, "alice", job_id, {**RUN, "gpus_per_node": 2})
        results = {}
        for name, req in {"no GPU option": {"ntasks": 1, "exact": True},
                          "overlap": {"ntasks": 1, "overlap": True},
                          "gres=gpu:0": {"ntasks": 1, "exact": True, "gpus_per_node": 0},
                          "gres=gpu:5": {"ntasks": 1, "gpus_per_node": 5},
                          "gpus=5": {"ntasks": 1, "gpus": 5},
                          "gpus-per-task=3": {"ntasks": 2, "gpus_per_task": 3},
                          "-n9": {"ntasks": 9, "exact": True}}.items():
            try:
                step = await steps.create(h.ctl, "alice", job_id, req)
                results[name] = (step["step_id"], step["step_gpus"]["gpu01"], step["node_cpus"])
            except SlurmError as exc:
                results[name] = str(exc)
        after = await steps.create(h.ctl, "alice", job_id, {"ntasks": 1, "exact": True, "gpus_per_node": 0})
        return held, results, after["step_id"]

    held, results, last = run(test, tmp_path)
    assert held["step_gpus"] == {"gpu01": [0, 1]}
    assert results["no GPU option"] == f"Unable to create step for job 1: {errors.NODES_BUSY}"  # wants all four
    assert results["overlap"] == (1, [0, 1, 2, 3], [8])  # shares everything, holds nothing
    assert results["gres=gpu:0"] == (2, [], [1])
    assert results["gres=gpu:5"] == ("Step requested gres_per_node=gpu:5 is more than the job's "
                                     "gres_per_node=gpu:4\nUnable to create step for job 1: " + errors.INVALID_GRES)
    assert results["gpus=5"] == f"Unable to create step for job 1: {errors.INVALID_GRES}"
    assert results["gpus-per-task=3"] == f"Unable to create step for job 1: {errors.INSUFFICIENT_GRES}"
    assert results["-n9"] == f"Unable to create step for job 1: {errors.TOO_MANY_CPUS}"
    assert last == 4  # as on the twin, only the Insufficient GRES refusal spent a step id (3)
