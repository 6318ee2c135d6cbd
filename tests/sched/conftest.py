"""A tiny driver for scheduler tests: submit jobs by shape, run passes, apply what they decide."""

from __future__ import annotations

import pytest

from minislurm.core.cluster import simple_cluster
from minislurm.core.job import Job, Shape
from minislurm.core.state import ClusterState
from minislurm.sched import priority
from minislurm.sched.apply import apply
from minislurm.sched.schedule import schedule


class Lab:
    def __init__(self, nodes=2, gpus=4, cpus=32, mem=64_000, **sched):
        self.state = ClusterState(simple_cluster(nodes, cpus=cpus, mem=mem, gpus=gpus, **sched))
        self.last = None

    def submit(self, now=0.0, nodes=1, gpus=0, cpus=1, minutes=10, name="job", **fields) -> Job:
        st = self.state
        job = Job(st.new_job_id(), name=name, partition=fields.pop("partition", "gpu"), submit_time=now,
                  time_limit=minutes * 60.0, num_nodes=nodes, shape=Shape(cpus=cpus, gpus=gpus), **fields)
        job.priority = priority.initial(job, st, now)
        st.add(job)
        return job

    def run(self, now: float, backfill: bool = True):
        self.last = schedule(self.state, now, backfill_cycle=backfill, every_reason=True)
        apply(self.state, self.last)  # as the simulator and the controller do
        return self.last

    def reason(self, job: Job) -> str:
        return self.last.reasons[job.job_id]


@pytest.fixture
def lab():
    return Lab
