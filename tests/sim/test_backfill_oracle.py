"""Conservative backfill re-derived by brute force, pass by pass, on slices of real traces.

A driver replays the slice itself (a ClusterState, a full ``schedule(..., promise_all=True)`` at
every submission or completion, the starts applied, each job ending at min(runtime, limit)).
After every pass a pure-Python oracle walks the queue in priority order with its own copy of the
free resources and of the promises made so far, and asserts for each job backfill tested:

* if the job could run *now* on free resources for its whole (grid-rounded) time limit without
  overlapping a higher-priority job's promise, the pass started it (no idle gap), on the
  lowest-numbered such nodes; otherwise the pass did not start it;
* otherwise its promise (expected_start + planned_nodes, whole nodes) is the earliest time and
  the lowest-numbered nodes where it fits beside the running jobs' limits and earlier promises,
  and there is no promise only when that time lies beyond bf_window;
* nothing backfill started lies beyond the first ``bf_max_job_test`` jobs it tested.
"""

from __future__ import annotations

import heapq
import math
from pathlib import Path

import pytest

from minislurm.core.cluster import simple_cluster
from minislurm.core.job import Job, Shape
from minislurm.core.state import ClusterState
from minislurm.core.states import JobState
from minislurm.sched import priority
from minislurm.sched.schedule import schedule
from minislurm.sim.traces import read_trace

DATA = Path(__file__).resolve().parents[2] / "data" / "traces"
RES = 60  # bf_resolution
WINDOW = 6 * 3600  # bf_window, seconds


def grid(t: float) -> int:
    return int(math.ceil(t / RES) * RES)


class Oracle:
    """The brute-force view of one pass, built from the state *before* its starts are applied."""

    def __init__(self, state: ClusterState, now: int):
        self.now = now
        nodes = state.nodes
        self.cap_cpu = [int(x) for x in nodes.cap_cpu]
        self.cap_gpu = [int(x) for x in nodes.cap_gpu]
        self.free_cpu, self.free_gpu = self.cap_cpu[:], self.cap_gpu[:]
        self.releases: list[list[tuple[int, int, int]]] = [[] for _ in self.cap_cpu]
        self.promises: list[list[tuple[int, int]]] = [[] for _ in self.cap_cpu]
        for job in state.running.values():
            self.hold(job.alloc, job.start_time, job.time_limit)

    def hold(self, alloc, start: float, limit: float) -> None:
        end = grid(start + limit)
        if end <= self.now:
            end = self.now + RES
        for n, c, g in zip(alloc.nodes, alloc.cpus, alloc.gpus):
            self.free_cpu[n] -= c
            self.free_gpu[n] -= len(g)
            assert self.free_cpu[n] >= 0 and self.free_gpu[n] >= 0
            self.releases[n].append((end, c, len(g)))

    def ready(self, n: int, cpus: int, gpus: int) -> float:
        """When running jobs leave room on node n (their ends at their grid-rounded limits)."""
        c, g = self.free_cpu[n], self.free_gpu[n]
        if c >= cpus and g >= gpus:
            return self.now
        for end, dc, dg in sorted(self.releases[n]):
            c, g = c + dc, g + dg
            if c >= cpus and g >= gpus:
                return end
        return math.inf

    def earliest(self, job: Job) -> tuple[float, list[int]]:
        k, dur = job.num_nodes, grid(job.time_limit)
        ready = [self.ready(n, job.shape.cpus, job.shape.gpus) for n in range(len(self.cap_cpu))]
        times = {r for r in ready if r < math.inf}
        times |= {e for n, ps in enumerate(self.promises) for _, e in ps if e > ready[n]}
        for t in sorted(times):
            ok = [n for n, r in enumerate(ready)
                  if r <= t and not any(s < t + dur and e > t for s, e in self.promises[n])]
            if len(ok) >= k:
                return t, ok[:k]
        return math.inf, []


def check_pass(state: ClusterState, now: int, result, bf_max_job_test: int, easy: bool = False) -> bool:
    """Assert the pass's decisions; True when the queue was longer than bf_max_job_test.

    ``easy``: only the first job that gets a promise at all gets one (one partition here)."""
    oracle = Oracle(state, now)
    order = sorted(state.pending.values(), key=lambda j: (-j.priority, j.submit_time, j.job_id))
    starts = {s.job_id: s for s in result.starts}
    main = [j for j in order if j.job_id in starts and not starts[j.job_id].backfilled]
    assert [j.job_id for j in order[:len(main)]] == [j.job_id for j in main]  # a prefix of the queue
    for job in main:
        oracle.hold(starts[job.job_id].alloc, now, job.time_limit)
    tested = order[len(main):len(main) + bf_max_job_test]
    capped = len(order) > len(main) + bf_max_job_test
    for job in order[len(main) + bf_max_job_test:]:
        assert job.job_id not in starts and job.job_id not in result.expected_start
    for job in tested:
        t, nodes = oracle.earliest(job)
        start = starts.get(job.job_id)
        if t <= now:  # it fits now beside every higher-priority promise: it must start
            assert start is not None and start.backfilled, f"idle gap: job {job.job_id} fits at {now}"
            assert list(start.alloc.nodes) == nodes
            for n in nodes:  # explicitly: no overlap with a higher-priority promise
                assert not any(s < now + grid(job.time_limit) and e > now for s, e in oracle.promises[n])
            oracle.hold(start.alloc, now, job.time_limit)
            continue
        assert start is None, f"job {job.job_id} started over a promise (earliest {t}, now {now})"
        if t > now + WINDOW or (easy and any(oracle.promises)):
            assert job.job_id not in result.expected_start
            continue
        assert result.expected_start[job.job_id] == t, (job.job_id, now)
        assert list(result.planned_nodes[job.job_id]) == nodes
        for n in nodes:
            oracle.promises[n].append((t, t + grid(job.time_limit)))
    assert set(result.expected_start) <= {j.job_id for j in tested}
    return capped


def drive(trace, nodes: int, cpus: int, gpus: int, bf_max_job_test: int, policy: str) -> dict:
    cfg = simple_cluster(nodes, cpus=cpus, mem=1, gpus=gpus, bf_resolution=RES,
                         bf_window=WINDOW, bf_max_job_test=bf_max_job_test)
    cfg.sched.policy, cfg.priority.type = policy, "priority/basic"
    state = ClusterState(cfg)
    events = [(int(tj.submit), 1, i, tj) for i, tj in enumerate(trace)]
    heapq.heapify(events)
    stats = {"passes": 0, "backfilled": 0, "promised": 0, "done": 0, "capped": 0}
    runtime: dict[int, float] = {}
    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, kind, _, item = heapq.heappop(events)
            if kind == 0:  # an end: ends come before submissions at the same instant
                state.finish(item, JobState.COMPLETED, now)
                stats["done"] += 1
                continue
            job = Job(state.new_job_id(), partition="gpu", submit_time=now, time_limit=item.time_limit,
                      num_nodes=item.nodes, shape=Shape(cpus=item.cpus_per_node, gpus=item.gpus_per_node))
            job.priority = priority.initial(job, state, now)
            state.add(job)
            runtime[job.job_id] = min(item.runtime, item.time_limit)
        if not state.pending:
            continue
        result = schedule(state, now, backfill_cycle=True, promise_all=True)
        stats["capped"] += check_pass(state, now, result, bf_max_job_test, easy=policy == "easy")
        stats["passes"] += 1
        stats["backfilled"] += sum(s.backfilled for s in result.starts)
        stats["promised"] += len(result.expected_start)
        for s in result.starts:
            job = state.jobs[s.job_id]
            state.start(job, s.alloc, now)
            heapq.heappush(events, (now + int(runtime[s.job_id]), 0, s.job_id, job))
    assert not state.pending and not state.running
    return stats


def integer_slice(path, nodes, cpus, gpus, limit):
    """Whole-second times (so the pass's int(now) is now), jobs that fit the small machine."""
    jobs = read_trace(path, None, cores_per_node=cpus, gpus_per_node=gpus, limit=limit).jobs
    out = []
    for tj in jobs:
        if tj.nodes > nodes:
            continue
        tj.submit, tj.time_limit = float(round(tj.submit)), float(math.ceil(tj.time_limit))
        tj.runtime = float(min(max(1, round(tj.runtime)), tj.time_limit))
        out.append(tj)
    return out


# (trace, nodes, cpus/node, gpus/node, jobs read, bf_max_job_test)
SLICES = {
    "hpc2n": (DATA / "alea_hpc2n.swf", 24, 2, 0, 800, 12),
    "philly": (DATA / "rfold_philly_trace.csv", 16, 16, 8, 1000, 12),
}


@pytest.mark.parametrize("name", SLICES)
def test_conservative_backfill_leaves_no_idle_gap(name: str) -> None:
    path, nodes, cpus, gpus, limit, bmt = SLICES[name]
    trace = integer_slice(path, nodes, cpus, gpus, limit)
    stats = drive(trace, nodes, cpus, gpus, bmt, "conservative")
    assert stats["done"] == len(trace)
    # The oracle had real work to judge: jobs backfilled, promises made, the test cap reached.
    assert stats["backfilled"] >= 300 and stats["promised"] >= 800 and stats["capped"] >= 100


def test_easy_backfill_protects_only_the_first_blocked_job() -> None:
    path, nodes, cpus, gpus, limit, bmt = SLICES["hpc2n"]
    trace = integer_slice(path, nodes, cpus, gpus, limit)
    stats = drive(trace, nodes, cpus, gpus, bmt, "easy")
    assert stats["done"] == len(trace)
    assert stats["promised"] <= stats["passes"] and stats["backfilled"] >= 300
