"""An array's pending tasks are one record to Slurm's scheduler, so they share one reason.

On the real-Slurm twin (Slurm 22.05.8), with both nodes busy, ``sbatch -a 1-4 -N2`` waits as
``11_[1-4] ... (Resources)``, and ``squeue -r`` shows ``Resources`` for every task; a task held
on its own (``scontrol hold 11_2``) is split off with its own ``JobHeldUser``, and squeue then
merges the two: ``(Resources,JobHeldUser)`` (issue 20, item 8).
"""

from __future__ import annotations

from minislurm.core.states import Reason


def _array(lab, tasks: int, **shape):
    jobs = [lab.submit(**shape) for _ in range(tasks)]
    for i, job in enumerate(jobs, 1):
        job.array_job_id, job.array_task_id = jobs[0].job_id, i
        lab.state.array_tasks[jobs[0].job_id].append(job.job_id)
    return jobs


def test_tasks_behind_the_first_share_its_reason(lab):
    lab = lab(nodes=2)
    blocker = lab.submit(nodes=2, cpus=32)
    lab.run(0.0)
    assert blocker.job_id in lab.state.running
    tasks = _array(lab, 4, now=1.0, nodes=2)
    for backfill in (False, True):
        result = lab.run(2.0, backfill=backfill)
        assert [lab.reason(t) for t in tasks] == [Reason.RESOURCES] * 4
        assert all(result.reasons.get(t.job_id, Reason.RESOURCES) == Reason.RESOURCES for t in tasks)


def test_a_task_held_on_its_own_keeps_its_reason_and_another_job_still_waits_for_priority(lab):
    lab = lab(nodes=2)
    lab.submit(nodes=2, cpus=32)
    lab.run(0.0)
    tasks = _array(lab, 3, now=1.0, nodes=2)
    other = lab.submit(now=2.0, nodes=1)
    tasks[1].hold, tasks[1].priority = "user", 0
    lab.run(3.0)
    assert [lab.reason(t) for t in tasks] == [Reason.RESOURCES, Reason.HELD_USER, Reason.RESOURCES]
    assert lab.reason(other) == Reason.PRIORITY
