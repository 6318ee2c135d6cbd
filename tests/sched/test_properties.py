"""Property tests: random clusters and queues, checked against the rules backfill must keep."""

from __future__ import annotations

import heapq

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minislurm.core.cluster import simple_cluster
from minislurm.core.job import Job, Shape
from minislurm.core.state import ClusterState
from minislurm.core.states import JobState
from minislurm.sched.schedule import schedule

job_st = st.tuples(
    st.integers(1, 3),  # nodes
    st.integers(0, 4),  # gpus per node
    st.integers(1, 8),  # cpus per node
    st.integers(1, 30),  # time limit, minutes
    st.floats(0.05, 1.0),  # share of the limit actually used
    st.integers(0, 1200),  # submit, seconds
)
cluster_st = st.tuples(st.integers(1, 4), st.sampled_from([4, 8]), st.sampled_from([8, 16]))


def make_state(cluster, jobs, policy="conservative") -> ClusterState:
    """A cluster whose ``future`` holds the jobs; :func:`replay` queues each at its submit time."""
    n, gpus, cpus = cluster
    state = ClusterState(simple_cluster(n, cpus=cpus, mem=1000, gpus=gpus, policy=policy))
    state.future = []
    for i, (nodes, g, c, limit, _, submit) in enumerate(jobs):
        job = Job(state.new_job_id(), partition="gpu", submit_time=float(submit),
                  time_limit=limit * 60.0, num_nodes=min(nodes, n), shape=Shape(cpus=min(c, cpus), gpus=min(g, gpus)))
        job.priority = 10_000 - i
        state.future.append(job)
    return state


def queue_due(state: ClusterState, now: float) -> None:
    for job in [j for j in state.future if j.submit_time <= now]:
        state.future.remove(job)
        state.add(job)


def check_invariants(state: ClusterState) -> None:
    nodes = state.nodes
    assert (nodes.free_cpu >= 0).all() and (nodes.free_gpu >= 0).all() and (nodes.free_mem >= 0).all()
    for n in range(len(nodes)):
        held = [g for job in state.jobs_on_node(n) for i, g in zip(job.alloc.nodes, job.alloc.gpus) if i == n]
        flat = [x for gs in held for x in gs]
        assert len(flat) == len(set(flat)), "a GPU index handed out twice"
        assert all(0 <= x < nodes.cap_gpu[n] for x in flat)
        assert len(flat) + nodes.free_gpu[n] == nodes.cap_gpu[n]
        cpus = sum(c for job in state.jobs_on_node(n) for i, c in zip(job.alloc.nodes, job.alloc.cpus) if i == n)
        assert cpus + nodes.free_cpu[n] == nodes.cap_cpu[n]


def replay(state: ClusterState, runtimes: dict[int, float], until=10**6, promise_all=True):
    """Run to completion: a full pass at every submit/end (and at ``passes_at``), checking invariants."""
    events = sorted({j.submit_time for j in state.future} | {j.submit_time for j in state.pending.values()})
    heapq.heapify(events)
    ends: list[tuple[float, int]] = []
    log = []
    while events or ends:
        now = min(events[0] if events else float("inf"), ends[0][0] if ends else float("inf"))
        if now > until:
            break
        while ends and ends[0][0] == now:
            _, job_id = heapq.heappop(ends)
            state.finish(state.jobs[job_id], JobState.COMPLETED, now)
        while events and events[0] == now:
            heapq.heappop(events)
        queue_due(state, now)
        result = schedule(state, now, backfill_cycle=True, promise_all=promise_all)
        log.append((now, [(s.job_id, s.alloc) for s in result.starts], dict(result.expected_start)))
        for s in result.starts:
            job = state.jobs[s.job_id]
            state.start(job, s.alloc, now)
            heapq.heappush(ends, (now + runtimes[s.job_id], s.job_id))
        check_invariants(state)
    return log


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_st, st.lists(job_st, min_size=1, max_size=12), st.sampled_from(["conservative", "easy", "fifo"]))
def test_never_over_allocated_and_everything_runs(cluster, jobs, policy):
    state = make_state(cluster, jobs, policy)
    runtimes = {j.job_id: max(1.0, j.time_limit * share) for j, (*_, share, _) in zip(state.future, jobs)}
    replay(state, runtimes)
    assert not state.pending and not state.running and len(state.jobs) == len(jobs)
    for job in state.jobs.values():
        assert job.start_time >= job.submit_time


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_st, st.lists(job_st, min_size=2, max_size=12), st.sampled_from(["conservative", "easy"]))
def test_promises_hold_when_jobs_use_their_whole_limit(cluster, jobs, policy):
    """Everything submitted at t=0; each job runs exactly its limit.  Every job promised a start
    in the first pass starts by then, unless a higher-priority job started *earlier* than its
    own promise and took the room (reservations take whole nodes, so a later pass may find
    room the plan did not count).  Lower-priority jobs must never delay a promise.
    """
    jobs = [(n, g, c, limit, 1.0, 0) for n, g, c, limit, _, _ in jobs]
    state = make_state(cluster, jobs, policy)
    runtimes = {j.job_id: j.time_limit for j in state.future}
    queue_due(state, 0.0)
    first = schedule(state, 0.0, backfill_cycle=True).expected_start
    replay(state, runtimes)
    checked = 0
    for job_id in sorted(first, key=lambda j: -state.jobs[j].priority):
        started = state.jobs[job_id].start_time
        assert started <= first[job_id], (job_id, first[job_id], started)
        checked += 1
        if started < first[job_id]:
            break  # it moved up: promises below it may legitimately move
    assert checked or not first


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_st, st.lists(job_st, min_size=2, max_size=12))
def test_lower_priority_jobs_never_move_a_promise(cluster, jobs):
    """Removing the lowest-priority job from the queue changes no other job's promise."""
    a = make_state(cluster, jobs)
    runtimes = {j.job_id: j.time_limit * share for j, (*_, share, _) in zip(a.future, jobs)}
    replay(a, runtimes, until=60)  # leave some jobs running and some pending
    pending = sorted(a.pending.values(), key=lambda j: -j.priority)
    if len(pending) < 2:
        return
    full = schedule(a, 120.0).expected_start
    last = pending[-1]
    a.finish(last, JobState.CANCELLED, 120.0)
    without = schedule(a, 120.0).expected_start
    assert {k: v for k, v in full.items() if k != last.job_id} == without


@settings(max_examples=60, deadline=None)
@given(cluster_st, st.lists(job_st, min_size=1, max_size=10), st.sampled_from(["conservative", "easy", "fifo"]))
def test_same_input_same_decisions(cluster, jobs, policy):
    """Deterministic, and the simulator's shortcut (promise_all=False) decides exactly the same."""
    logs = []
    for promise_all in (True, True, False):
        state = make_state(cluster, jobs, policy)
        runtimes = {j.job_id: max(1.0, j.time_limit * share) for j, (*_, share, _) in zip(state.future, jobs)}
        log = replay(state, runtimes, promise_all=promise_all)
        logs.append([(now, starts) for now, starts, _ in log] if not promise_all else log)
    assert logs[0] == logs[1]
    assert [(now, starts) for now, starts, _ in logs[0]] == logs[2]
