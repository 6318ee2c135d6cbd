"""Rules that live once and are used in several places: what a dependency item comes to (the
pass, and ``scontrol show job``'s text), admission (the controller's build_jobs and the
simulator), and recovery (ClusterState.restore gives the tables a live run built)."""

from __future__ import annotations

import copy

import pytest

from minislurm.core.cluster import simple_cluster
from minislurm.core.deps import parse_dependency
from minislurm.core.job import Allocation, Job, Shape
from minislurm.core.options import parse_options
from minislurm.core.state import ClusterState
from minislurm.core.states import DependencyOutcome, JobState
from minislurm.ctld.jobs import dependency_text
from minislurm.sched import depend
from minislurm.sched.schedule import schedule
from minislurm.sched.submit import NeverRuns, build_jobs, refusal
from minislurm.sim.engine import Simulator
from minislurm.sim.traces import TraceJob


ONE_CPU = Allocation((0,), (1,), (0,), ((),))


def _array(state: ClusterState, tasks: int) -> list[Job]:
    first = state.next_job_id
    jobs = [Job(first + i, partition="gpu", array_job_id=first, array_task_id=i) for i in range(tasks)]
    for job in jobs:
        state.add(job)
    state.used_job_ids(jobs[-1].job_id)
    return jobs


@pytest.mark.parametrize("kind", ["afterok", "afterany", "afternotok", "aftercorr", "after"])
@pytest.mark.parametrize("ends", [("COMPLETED", "RUNNING"), ("COMPLETED", "COMPLETED"), ("FAILED", "RUNNING"),
                                  ("COMPLETED", "FAILED"), ("PENDING", "PENDING")])
def test_scontrol_shows_a_dependency_item_as_the_pass_judges_it(kind, ends):
    """An item on an array is fulfilled only when every task is (before, scontrol looked at the
    array's first task alone and showed ``afterok:<array>`` met while a task still ran)."""
    state = ClusterState(simple_cluster(2))
    tasks = _array(state, 2)
    for job, end in zip(tasks, ends):
        if end != "PENDING":
            state.start(job, ONE_CPU, 0.0)
        if end in ("COMPLETED", "FAILED"):
            state.finish(job, JobState[end], 10.0, exit_code=int(end == "FAILED"))
    waiter = Job(state.next_job_id, partition="gpu", dependency=parse_dependency(f"{kind}:{tasks[0].job_id}"))
    state.add(waiter)
    outcome = depend.item_outcome(kind, tasks[0].job_id, waiter, state.jobs, state.array_tasks)
    text = dependency_text(waiter, state)
    expected = {DependencyOutcome.OK: None, DependencyOutcome.WAIT: f"{kind}:{tasks[0].job_id}(unfulfilled)",
                DependencyOutcome.NEVER: f"{kind}:{tasks[0].job_id}(failed)"}[outcome]
    assert text == expected
    if kind == "afterok" and ends == ("COMPLETED", "RUNNING"):
        assert text == f"afterok:{tasks[0].job_id}(unfulfilled)"


def test_afterok_needs_exit_code_zero():
    """Slurm's afterok: the job ended COMPLETED, i.e. with exit code 0."""
    state = ClusterState(simple_cluster(1))
    target = state.add(Job(state.new_job_id(), partition="gpu"))
    state.start(target, ONE_CPU, 0.0)
    state.finish(target, JobState.COMPLETED, 5.0, exit_code=1)  # cannot happen live; the rule still holds
    waiter = state.add(Job(state.new_job_id(), partition="gpu",
                           dependency=parse_dependency(f"afterok:{target.job_id}")))
    assert depend.status(waiter, state.jobs, state.array_tasks) == DependencyOutcome.NEVER
    assert dependency_text(waiter, state) == f"afterok:{target.job_id}(failed)"


# -- admission ----------------------------------------------------------------------------------
REQUESTS = [  # (sbatch words, the same job as a trace row: nodes, cpus per node, gpus per node, limit)
    (["-N", "1", "-c", "4", "-t", "10"], (1, 4, 0, 600.0)),
    (["-N", "2", "-c", "8", "--gres=gpu:4", "-t", "10"], (2, 8, 4, 600.0)),
    (["-N", "1", "-c", "64", "-t", "10"], (1, 64, 0, 600.0)),  # no node that big
    (["-N", "1", "--gres=gpu:9", "-t", "10"], (1, 1, 9, 600.0)),  # nor with that many GPUs
    (["-N", "3", "-t", "10"], (3, 1, 0, 600.0)),  # more nodes than the partition has
    (["-N", "1", "-t", "120"], (1, 1, 0, 7200.0)),  # over the partition's MaxTime
]


@pytest.mark.parametrize("words, row", REQUESTS)
def test_the_simulator_refuses_what_the_controller_refuses_or_would_leave_pending_for_good(words, row):
    cfg = simple_cluster(2, cpus=8, mem=1000, gpus=4)
    cfg.partitions[0].max_time = 3600.0
    state = ClusterState(copy.deepcopy(cfg))
    spec, _ = parse_options([*words, "job.sh"], now=0.0)
    try:
        (job,) = build_jobs(spec, state, first_id=1, user="u", now=0.0)
        controller = None
    except NeverRuns as err:
        controller, job = err.message, None
    nodes, cpus, gpus, limit = row
    sim = Simulator(copy.deepcopy(cfg), [TraceJob(1, 0.0, 10.0, limit, nodes, cpus, gpus)])
    sim.run()
    simulator = dict(sim.rejected).get(1)
    if controller is not None:
        assert simulator == controller
    else:
        state.add(job)
        stuck = refusal(job, state, enforce_part_limits=True)  # what only EnforcePartLimits refuses
        assert simulator == stuck
        assert (stuck is None) == (sim.records.get(1) is not None and sim.records[1].state == "COMPLETED")


# -- recovery -----------------------------------------------------------------------------------
def test_restore_rebuilds_the_tables_a_live_run_built():
    live = ClusterState(simple_cluster(2, cpus=8, gpus=4))
    tasks = _array(live, 3)
    plain = live.add(Job(live.new_job_id(), partition="gpu", shape=Shape(cpus=2, gpus=1)))
    for start in schedule(live, 0.0).starts:
        live.start(live.jobs[start.job_id], start.alloc, 0.0)
    live.finish(tasks[0], JobState.COMPLETED, 5.0)
    restored = ClusterState(simple_cluster(2, cpus=8, gpus=4))
    for job in live.jobs.values():
        restored.restore(copy.deepcopy(job))
    for table in ("pending", "running"):
        assert sorted(getattr(restored, table)) == sorted(getattr(live, table))
    assert dict(restored.array_tasks) == dict(live.array_tasks)
    assert dict(restored.array_running) == {k: v for k, v in live.array_running.items()}
    assert (restored.nodes.free_cpu == live.nodes.free_cpu).all()
    assert (restored.nodes.free_gpu == live.nodes.free_gpu).all()
    assert plain.job_id in restored.jobs
