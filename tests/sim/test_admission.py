"""One admission: a trace's record becomes the job an ``sbatch`` request for the same resources
becomes (one template, :func:`minislurm.sched.submit.job_template`), so the partition's
defaults -- OverSubscribe=EXCLUSIVE above all -- hold in a replay as on the controller."""

from __future__ import annotations

import dataclasses

import pytest

from minislurm.core.cluster import simple_cluster
from minislurm.core.job import Job, Shape
from minislurm.core.spec import spec_from_dict
from minislurm.core.state import ClusterState
from minislurm.sched.submit import build_jobs, record_jobs
from minislurm.sim.engine import Simulator
from minislurm.sim.traces import TraceJob


def cluster(nodes: int, *, exclusive: bool):
    cfg = simple_cluster(nodes, cpus=8, mem=8000, gpus=0)
    cfg.partitions[0].exclusive = exclusive  # OverSubscribe=EXCLUSIVE
    cfg.priority.type = "priority/basic"
    return cfg


def test_an_exclusive_partition_gives_each_replayed_job_its_node() -> None:
    """Two 1-CPU jobs on one 8-CPU node of an OverSubscribe=EXCLUSIVE partition: the controller
    gives the first the whole node, so the second waits for it to end (it used to start beside
    it at t=0 in a replay)."""
    jobs = [TraceJob(1, 0.0, 100.0, 600.0, 1, 1, 0), TraceJob(2, 0.0, 50.0, 600.0, 1, 1, 0)]
    sim = Simulator(cluster(1, exclusive=True), [dataclasses.replace(j) for j in jobs])
    records = {r.job_id: r for r in sim.run()}
    assert (records[1].start, records[1].end) == (0.0, 100.0)
    assert (records[2].start, records[2].end) == (100.0, 150.0)
    assert sim.state.jobs[1].alloc.num_cpus == 8  # the whole node, as the controller allocates it
    shared = {r.job_id: r for r in Simulator(cluster(1, exclusive=False), jobs).run()}
    assert shared[1].start == shared[2].start == 0.0  # a shared partition runs them side by side


@pytest.mark.parametrize("exclusive", [False, True])
def test_a_record_becomes_the_job_sbatch_makes_of_the_same_request(exclusive: bool) -> None:
    """A record of 2 nodes x (3 CPUs, 1000 MB) for 10 minutes and ``sbatch -N2
    --ntasks-per-node=1 -c3 --mem=1000 -t10`` are the same job, field for field (but for the
    fields only a request has: its task count and its parsed spec)."""
    state = ClusterState(cluster(3, exclusive=exclusive))
    spec = spec_from_dict({"nodes_min": 2, "ntasks_per_node": 1, "cpus_per_task": 3, "mem_mb": 1000,
                           "time_limit_min": 10, "job_name": "7"})
    (built,) = build_jobs(spec, state, first_id=5, user="alice", now=42.0)
    (made,) = record_jobs(5, state, partition=None, now=42.0, user="alice", account=built.account, name="7",
                          time_limit=600.0, num_nodes=2, shape=Shape(cpus=3, mem=1000, gpus=0))
    assert built.exclusive is exclusive
    fields = [f.name for f in dataclasses.fields(made) if f.name not in ("ntasks", "spec")]
    assert {f: getattr(made, f) for f in fields} == {f: getattr(built, f) for f in fields}


def test_an_array_record_becomes_the_tasks_sbatch_array_makes() -> None:
    """A record with ``--array=0-3%2`` and ``sbatch --array=0-3%2`` make the same four tasks,
    field for field; replayed on three nodes, the throttle lets two run at a time, each task
    ends on its own, and a started task takes its own id (the last one the array's)."""
    state = ClusterState(cluster(3, exclusive=True))
    spec = spec_from_dict({"nodes_min": 1, "ntasks_per_node": 1, "cpus_per_task": 1, "time_limit_min": 10,
                           "job_name": "7", "array": {"indices": [0, 1, 2, 3], "max_running": 2}})
    built = build_jobs(spec, state, first_id=5, user="alice", now=42.0)
    made = record_jobs(5, state, partition=None, now=42.0, user="alice", account=built[0].account, name="7",
                       time_limit=600.0, num_nodes=1, shape=Shape(cpus=1), array=spec.array)
    fields = [f.name for f in dataclasses.fields(Job) if f.name not in ("ntasks", "spec")]
    assert [[getattr(j, f) for f in fields] for j in made] == [[getattr(j, f) for f in fields] for j in built]
    assert [j.array_task_id for j in made] == [0, 1, 2, 3] and all(j.job_id < 0 for j in made)

    sim = Simulator(cluster(3, exclusive=True), [TraceJob(1, 0.0, 100.0, 600.0, 1, 1, 0, array=spec.array)])
    sim.run()
    tasks = sim.records_of(1)
    assert [(r.start, r.end, r.state) for r in tasks] == [
        (0.0, 100.0, "COMPLETED"), (0.0, 100.0, "COMPLETED"), (100.0, 200.0, "COMPLETED"), (100.0, 200.0, "COMPLETED")]
    assert sorted(r.job_id for r in tasks) == [1, 2, 3, 4] and tasks[-1].job_id == 1
    assert not sim.rejected and not sim.state.pending
