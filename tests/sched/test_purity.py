"""``minislurm/sched`` changes no state it is given: on random clusters and queues (running
jobs, finished ones with either exit code, dependencies, holds, ``-w`` lists, an advance
reservation), a pass, a priority recomputation and submissions leave the ClusterState exactly
as they found it.  The caller applies what they return (and owns the queue-order memory)."""

from __future__ import annotations

import copy
import dataclasses
import enum

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minislurm.core.cluster import simple_cluster
from minislurm.core.deps import parse_dependency
from minislurm.core.errors import SlurmError
from minislurm.core.job import Job, Shape
from minislurm.core.options import parse_options
from minislurm.core.reservation import AdvanceReservation
from minislurm.core.state import ClusterState
from minislurm.core.states import JobState
from minislurm.sched import priority
from minislurm.sched.order import QueueOrder
from minislurm.sched.schedule import schedule
from minislurm.sched.submit import build_jobs


def plain(value):
    """A comparable copy of ``value``: containers, dataclasses and objects as plain data.
    A ClusterState's own private lookups (``_part_masks``: derived from its config) and a
    dataclass's fields kept out of its equality (``ClusterConfig._where``: an index of the
    node names) are left out; everything else counts."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.tolist())
    if isinstance(value, enum.Enum) or value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return ("dict", [(plain(k), plain(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [plain(v) for v in value])
    if isinstance(value, (set, frozenset)):
        return ("set", sorted(map(repr, value)))
    if dataclasses.is_dataclass(value):
        return (type(value).__name__, [(f.name, plain(getattr(value, f.name))) for f in dataclasses.fields(value)
                                      if f.compare])
    if hasattr(value, "__dict__"):
        skip_private = isinstance(value, ClusterState)
        return (type(value).__name__, [(k, plain(v)) for k, v in vars(value).items()
                                       if not (skip_private and k.startswith("_"))])
    return repr(value)


job_st = st.fixed_dictionaries({
    "nodes": st.integers(1, 2), "gpus": st.integers(0, 4), "cpus": st.integers(1, 8),
    "minutes": st.integers(1, 60), "submit": st.integers(0, 600), "hold": st.booleans(),
    "depends_on": st.one_of(st.none(), st.tuples(st.sampled_from(["afterok", "afterany", "afternotok"]),
                                                 st.integers(0, 20))),
    "pinned": st.booleans(), "in_resv": st.booleans(),
})
scene_st = st.tuples(st.integers(1, 4), st.lists(job_st, min_size=1, max_size=20),
                     st.sets(st.integers(0, 20), max_size=6), st.booleans(),
                     st.sampled_from(["conservative", "easy", "fifo"]))


def make_scene(n_nodes, jobs, ends, with_resv, policy) -> tuple[ClusterState, float]:
    """A state some way into its life: a first pass started jobs, some of which then ended."""
    state = ClusterState(simple_cluster(n_nodes, cpus=8, mem=1000, gpus=4, policy=policy))
    if with_resv:
        state.add_reservation(AdvanceReservation("maint", (state.nodes.names[0],), start=300.0, end=900.0,
                                                 users=frozenset({"user"})))
    for j in jobs:
        job = Job(state.new_job_id(), partition="gpu", submit_time=float(j["submit"]),
                  time_limit=j["minutes"] * 60.0, num_nodes=min(j["nodes"], n_nodes),
                  shape=Shape(cpus=j["cpus"], gpus=j["gpus"]), hold="user" if j["hold"] else None,
                  req_nodes=frozenset({state.nodes.names[-1]}) if j["pinned"] else frozenset(),
                  reservation="maint" if with_resv and j["in_resv"] else None)
        if j["depends_on"] and j["depends_on"][1] < job.job_id - 1:
            kind, target = j["depends_on"]
            job.dependency = parse_dependency(f"{kind}:{target + 1}")
        job.priority = priority.initial(job, state, 0.0)
        state.add(job)
    now = 600.0
    first = schedule(state, now)
    state.settle_dependencies(first.settled)
    for s in first.starts:
        state.start(state.jobs[s.job_id], s.alloc, now)
    for i, job_id in enumerate(sorted(ends)):
        job = state.jobs.get(job_id + 1)
        if job is not None and job.state is JobState.RUNNING:
            state.finish(job, JobState.COMPLETED if i % 2 else JobState.FAILED, now + 60, exit_code=int(i % 2 == 0))
    return state, now + 120


SUBMISSIONS = [["-N", "1", "--gres=gpu:2"], ["-a", "0-3", "-n", "2"], ["--gres=gpu:64"],
               ["-w", "node01", "-t", "5"], ["-p", "nope"], ["-d", "afterok:1"], ["--reservation=maint"]]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scene_st)
def test_sched_changes_no_state_it_is_given(scene):
    state, now = make_scene(*scene)
    before = plain(state)
    frozen = copy.deepcopy(state)
    main = schedule(state, now, backfill_cycle=False)
    full = schedule(state, now, backfill_cycle=True)
    priority.recompute(state, now)
    for words in SUBMISSIONS:
        spec, _ = parse_options([*words, "job.sh"], now=now)
        try:
            build_jobs(spec, state, first_id=state.next_job_id, user="user", now=now)
        except SlurmError:
            pass
    assert plain(state) == before
    # ... and a pass decides the same on the state as on an untouched copy of it.
    again = schedule(frozen, now, backfill_cycle=True)
    assert [(s.job_id, s.alloc) for s in again.starts] == [(s.job_id, s.alloc) for s in full.starts]
    assert dict(again.reasons) == dict(full.reasons) and again.settled == full.settled
    assert {s.job_id for s in main.starts} <= {j for j in state.pending}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scene_st, st.lists(st.tuples(st.integers(0, 19), st.integers(-500, 500)), max_size=5))
def test_the_callers_queue_order_memory_changes_no_decision(scene, changes):
    """A QueueOrder kept across passes gives the order a fresh sort gives, after new jobs,
    starts, re-prioritisations, holds, releases and updates: each made through the state's own
    methods, which tell the kept order (no caller has to remember to)."""
    state, now = make_scene(*scene)
    memory = QueueOrder()
    schedule(state, now, queue_order=memory)
    for i, (pick, nice) in enumerate(changes):
        pending = sorted(state.pending)
        job = state.jobs[pending[pick % len(pending)]] if pending else None
        if job is not None and i % 4 == 1:
            state.set_priorities({job.job_id: max(0, job.priority + nice)})
        elif job is not None and i % 4 == 2 and job.hold:
            state.release(job, job.priority + 7)
        elif job is not None and i % 4 == 2:
            state.hold(job, "user")
        elif job is not None and i % 4 == 3:
            state.update(job, {"time_limit": 60.0 * (1 + pick)})
        else:
            state.add(Job(state.new_job_id(), partition="gpu", submit_time=now, shape=Shape(cpus=1),
                          priority=max(0, 1000 + nice)))
        kept = schedule(state, now, queue_order=memory)
        fresh = schedule(copy.deepcopy(state), now)
        assert [(s.job_id, s.alloc) for s in kept.starts] == [(s.job_id, s.alloc) for s in fresh.starts]
        for s in kept.starts:
            state.start(state.jobs[s.job_id], s.alloc, now)
