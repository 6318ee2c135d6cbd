"""The shortcuts through deep queues (sched/startnow.py, the queue's columns and journal in
sched/order.py, and backfill's memory of jobs that found no start): they must decide exactly
what the full cycle decides."""

from __future__ import annotations

import heapq
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minislurm.core.cluster import simple_cluster
from minislurm.core.job import Job, Shape
from minislurm.core.state import ClusterState
from minislurm.core.states import JobState
from minislurm.sched import shortcuts, startnow
from minislurm.sched.order import QueueOrder, sort_key
from minislurm.sched.promises import NEVER, Promises
from minislurm.sched.schedule import schedule

@pytest.fixture(autouse=True)
def every_queue_is_deep(monkeypatch):
    """StartNow answers for every queue here, however short (shortcuts.DEEP is a speed choice)."""
    monkeypatch.setattr(shortcuts, "DEEP", 0)


job_st = st.tuples(
    st.integers(1, 4),  # nodes
    st.integers(0, 4),  # gpus per node
    st.integers(1, 8),  # cpus per node
    st.sampled_from([5, 30, 90, 240, 600]),  # time limit, minutes
    st.floats(0.05, 1.0),  # share of the limit used
    st.integers(0, 3600),  # submit, seconds
    st.booleans(),  # exclusive
    st.integers(0, 9),  # 0: pinned with -w to the last node
)


def make_jobs(n_nodes: int, jobs, policy: str, window_min: int) -> tuple[ClusterState, list[Job], dict]:
    state = ClusterState(simple_cluster(n_nodes, cpus=8, mem=1000, gpus=4, policy=policy,
                                        bf_window=window_min * 60.0, bf_max_job_test=25))
    future, runtimes = [], {}
    for i, (nodes, g, c, limit, share, submit, exclusive, pin) in enumerate(jobs):
        job = Job(state.new_job_id(), partition="gpu", submit_time=float(submit), time_limit=limit * 60.0,
                  num_nodes=min(nodes, n_nodes), shape=Shape(cpus=c, gpus=g), exclusive=exclusive,
                  req_nodes=frozenset({state.nodes.names[-1]}) if pin == 0 else frozenset())
        job.priority = 10_000 - i
        future.append(job)
        runtimes[job.job_id] = max(60.0, job.time_limit * share)
    return state, future, runtimes


def replay(state: ClusterState, future: list[Job], runtimes: dict, shortcut: bool):
    """Passes every 30 s while anything changes; the starts of each, as the simulator applies them.
    Without the shortcuts every job is searched for in the plan (no job "like one that failed")."""
    order = QueueOrder() if shortcut else None
    ends: list[tuple[float, int]] = []
    future = sorted(future, key=lambda j: j.submit_time)
    log, now = [], 0.0
    while future or ends or state.pending:
        while ends and ends[0][0] <= now:
            state.finish(state.jobs[heapq.heappop(ends)[1]], JobState.COMPLETED, now)
        while future and future[0].submit_time <= now:
            state.add(future.pop(0))
        result = schedule(state, now, promise_all=not shortcut, queue_order=order, shortcuts=shortcut)
        log.append((now, [(s.job_id, s.alloc.nodes) for s in result.starts]))
        for s in result.starts:
            state.start(state.jobs[s.job_id], s.alloc, now)
            heapq.heappush(ends, (now + runtimes[s.job_id], s.job_id))
        now += 30.0
        if now > 200_000:
            break
    return log


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 5), st.lists(job_st, min_size=5, max_size=30), st.sampled_from(["easy", "conservative"]),
       st.sampled_from([20, 120, 1440]), st.sampled_from([3, None]))
def test_the_shortcut_decides_what_the_full_cycle_decides(n_nodes, jobs, policy, window_min, window):
    """Deep queues on small clusters, a short bf_window (so promises run past it), -w and
    --exclusive jobs, a cycle that stops at bf_max_job_test, and answer windows of 3 jobs (so
    they move) or of the usual size."""
    old = startnow.window_for
    if window is not None:
        startnow.window_for = lambda budget: window
    try:
        full = replay(*make_jobs(n_nodes, jobs, policy, window_min), shortcut=False)
        short = replay(*make_jobs(n_nodes, jobs, policy, window_min), shortcut=True)
    finally:
        startnow.window_for = old
    assert full == short


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@pytest.mark.parametrize("limit_min", [19, 20, 21])
def test_a_promise_at_the_edge_of_bf_window_still_holds_back_a_later_job(policy, limit_min):
    """One node, half of it busy for ``limit_min`` minutes; bf_window is 20 minutes.  The
    whole-node job first in line gets a promise when the node frees at or before the
    window's edge, and then the small job behind it may not start (it would overlap the
    promise); past the edge it gets none, and the small job starts now."""
    starts = []
    for shortcut in (False, True):
        state = ClusterState(simple_cluster(1, cpus=8, mem=1000, gpus=0, policy=policy, bf_window=1200.0))
        busy = Job(state.new_job_id(), partition="gpu", time_limit=limit_min * 60.0, shape=Shape(cpus=4))
        big = Job(state.new_job_id(), partition="gpu", time_limit=3600.0, shape=Shape(cpus=8))
        small = Job(state.new_job_id(), partition="gpu", time_limit=1800.0, shape=Shape(cpus=2))
        for priority, job in zip((3, 2, 1), (busy, big, small)):
            job.priority = priority
            state.add(job)
        state.start(busy, schedule(state, 0.0).starts[0].alloc, 0.0)
        result = schedule(state, 0.0, promise_all=not shortcut, queue_order=QueueOrder() if shortcut else None)
        starts.append([s.job_id for s in result.starts])
    assert starts[0] == starts[1] == ([] if limit_min <= 20 else [small.job_id])


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_a_job_shorter_than_one_that_found_no_start_may_still_start(policy):
    """One node, half of it busy for 10 minutes, and a whole-node job promised from then on.
    A 30-minute half-node job cannot start before that promise, nor within the 20-minute
    bf_window after it: it gets nothing.  A 5-minute job of the same shape behind it ends
    before the promise begins, so it starts now: what failed for a longer job says nothing
    about a shorter one."""
    state = ClusterState(simple_cluster(1, cpus=8, mem=1000, gpus=0, policy=policy, bf_window=1200.0))
    shapes = [(600, 4), (3600, 8), (1800, 4), (300, 4)]  # busy, whole node, long, short
    jobs = [Job(state.new_job_id(), partition="gpu", time_limit=float(limit), shape=Shape(cpus=cpus))
            for limit, cpus in shapes]
    for priority, job in zip((4, 3, 2, 1), jobs):
        job.priority = priority
        state.add(job)
    state.start(jobs[0], schedule(state, 0.0).starts[0].alloc, 0.0)
    for promise_all in (True, False):
        result = schedule(state, 0.0, promise_all=promise_all, queue_order=None if promise_all else QueueOrder())
        assert [s.job_id for s in result.starts] == [jobs[3].job_id]


def brute_first_unpromised(promises: list[tuple[int, int, int]], node: int, t: int) -> int:
    """The first time from ``t`` on that no promise on ``node`` covers, one step at a time."""
    while any(n == node and s <= t < e for n, s, e in promises):
        t = next(e for n, s, e in promises if n == node and s <= t < e)
    return t


@pytest.mark.parametrize("seed", range(30))
def test_first_unpromised_and_free_until_match_brute_force(seed):
    rng = random.Random(seed)
    nodes, p, made = 5, Promises(), []
    for _ in range(rng.randint(0, 12)):
        node, start = rng.randrange(nodes), rng.choice([0, 10, 20, 30, 40, 50, 70])
        end = start + rng.choice([10, 20, 30])
        if not any(n == node and s < end and start < e for n, s, e in made):  # promises on a node never overlap
            p.add(np.array([node]), start, end)
            made.append((node, start, end))
    times = np.array([[rng.choice([0, 5, 10, 25, 40, 60, NEVER]) for _ in range(nodes)] for _ in range(3)])
    got = p.first_unpromised(times)
    want = [[t if t >= NEVER else brute_first_unpromised(made, n, t) for n, t in enumerate(row)] for row in times]
    assert got.tolist() == want
    for now in (0, 15, 35, 80):
        until = [min([s for n, s, e in made if n == node and e > now], default=NEVER) for node in range(nodes)]
        assert p.free_until(now, nodes).tolist() == until


def test_the_kept_queue_follows_arrivals_and_departures_through_the_journal():
    """A long life of submissions, cancels and requeues: the kept order and its
    columns always equal those of a queue sorted from scratch."""
    rng = random.Random(7)
    state = ClusterState(simple_cluster(4, cpus=8, mem=1000, gpus=4))
    order = QueueOrder()
    for step in range(8000):
        action = rng.random()
        if action < 0.5 or not state.pending:
            job = Job(state.new_job_id(), partition="gpu", submit_time=float(step), time_limit=60.0 * rng.randint(1, 9),
                      num_nodes=rng.randint(1, 2), shape=Shape(cpus=rng.randint(1, 4), gpus=rng.randint(0, 2)))
            job.priority = rng.randint(0, 5)
            state.add(job)
        elif action < 0.98:
            state.finish(state.pending[rng.choice(list(state.pending))], JobState.CANCELLED, float(step))
        else:
            ended = [j for j in state.jobs.values() if j.state is JobState.CANCELLED]
            ended[0].state = JobState.RUNNING
            state.requeue(ended[0], float(step))  # back in the queue: the order is sorted again
        if step % rng.randint(1, 40) == 0 or step == 7999:
            got = order(state)
            want = sorted(state.pending.values(), key=sort_key(state))
            assert [j.job_id for j in got] == [j.job_id for j in want]
            columns = order.columns.window(0, len(want))
            assert columns["nodes"].tolist() == [j.num_nodes for j in want]
            assert columns["limit"].tolist() == [j.time_limit for j in want]
    assert state.journal_start > 0  # the journal was trimmed along the way, and read across it
