"""The simulator on slices of real traces, judged by invariants recomputed from its records.

Every check here is worked out from the trace and the JobRecords/Segments alone (plus the final
Allocation of each job, for the GPU indices), not from the scheduler's own bookkeeping.
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import pytest

from minislurm.core import errors
from minislurm.core.cluster import PartitionConfig, simple_cluster
from minislurm.sim.engine import Simulator
from minislurm.sim.metrics import summarize, write_jobs_csv
from minislurm.sim.traces import TraceJob, read_trace

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "traces"
SHARED = ROOT.parent / "shared" / "traces"
LUBLIN = DATA / "lublin_256.swf"
POLICIES = ("fifo", "easy", "conservative")

# name: (path, nodes, cpus/node, gpus/node, jobs, bf_max_job_test, bf_interval)
TRACES = {
    "hpc2n": (DATA / "alea_hpc2n.swf", 120, 2, 0, 1500, 500, 30.0),  # the real machine: 120 x 2 CPUs
    "philly": (DATA / "rfold_philly_trace.csv", 48, 32, 8, 3000, 50, 300.0),  # small: queues form
    "lublin": (LUBLIN, 256, 1, 0, 1000, 100, 30.0),
}
needs_lublin = pytest.mark.skipif(not LUBLIN.is_file(), reason="data/traces/lublin_256.swf not present")
TRACE_PARAMS = ["hpc2n", "philly", pytest.param("lublin", marks=needs_lublin)]


def make_cluster(nodes: int, cpus: int, gpus: int, policy: str, bf_max_job_test: int = 500,
                 bf_interval: float = 30.0):
    cfg = simple_cluster(nodes, cpus=cpus, mem=1, gpus=gpus, bf_interval=bf_interval,
                         bf_max_job_test=bf_max_job_test)
    cfg.sched.policy = policy
    cfg.priority.type = "priority/basic"
    return cfg


@lru_cache(maxsize=None)
def trace_jobs(name: str) -> tuple[TraceJob, ...]:
    path, _, cpus, gpus, limit, _, _ = TRACES[name]
    jobs = read_trace(path, None, cores_per_node=cpus, gpus_per_node=gpus, limit=limit).jobs
    assert len(jobs) == limit
    return tuple(jobs)


@lru_cache(maxsize=None)
def replayed(name: str, policy: str) -> Simulator:
    _, nodes, cpus, gpus, _, bmt, bfi = TRACES[name]
    sim = Simulator(make_cluster(nodes, cpus, gpus, policy, bmt, bfi), _copies(trace_jobs(name)))
    sim.run()
    return sim


def _copies(jobs) -> list[TraceJob]:
    return [TraceJob(j.job_id, j.submit, j.runtime, j.time_limit, j.nodes, j.cpus_per_node,
                     j.gpus_per_node, j.mem_per_node, j.user, j.account, j.partition) for j in jobs]


def check_capacity(sim: Simulator, cpus_cap: int, gpus_cap: int) -> None:
    """Sweep the runs of every node: CPU and GPU use never above the node's capacity, and two
    runs that overlap in time never hold the same GPU index of a node."""
    per_node: dict[int, list[tuple[float, float, int, int, frozenset]]] = defaultdict(list)
    for rec in sim.records.values():
        alloc = sim.state.jobs[rec.job_id].alloc
        for seg in rec.segments:
            assert len(set(seg.nodes)) == len(seg.nodes) == rec.nodes
            for n in seg.nodes:
                k = alloc.nodes.index(n)
                per_node[n].append((seg.start, seg.end, seg.cpus // rec.nodes, seg.gpus // rec.nodes,
                                    frozenset(alloc.gpus[k])))
    for n, runs in per_node.items():
        events = []
        for start, end, c, g, idx in runs:
            assert all(0 <= i < gpus_cap for i in idx) and len(idx) == g
            events.append((start, 1, c, g, idx))
            events.append((end, 0, c, g, idx))  # ends before starts at the same instant
        cpu = gpu = 0
        held: list[frozenset] = []
        for _, kind, c, g, idx in sorted(events, key=lambda e: (e[0], e[1])):
            if kind == 0:
                cpu, gpu = cpu - c, gpu - g
                held.remove(idx)
            else:
                cpu, gpu = cpu + c, gpu + g
                assert all(not (idx & other) for other in held), f"node {n}: GPU index shared"
                held.append(idx)
                assert cpu <= cpus_cap and gpu <= gpus_cap, f"node {n} over capacity: {cpu}, {gpu}"
        assert cpu == gpu == 0


def check_replay(sim: Simulator, trace: tuple[TraceJob, ...], cpus_cap: int, gpus_cap: int) -> None:
    assert sim.rejected == []
    recs = sorted(sim.records.values(), key=lambda r: r.job_id)
    assert len(recs) == len(trace)
    by_order = sorted(trace, key=lambda j: (j.submit, j.job_id))
    for rec, tj in zip(recs, by_order):
        assert sim.state.jobs[rec.job_id].name == str(tj.job_id)
        assert rec.submit == tj.submit and rec.runtime == tj.runtime and rec.time_limit == tj.time_limit
        assert rec.nodes == tj.nodes and rec.cpus == tj.nodes * tj.cpus_per_node
        assert rec.gpus == tj.nodes * tj.gpus_per_node
        # Ran and finished exactly once, never before it was submitted, for min(runtime, limit).
        assert len(rec.segments) == 1 and rec.restarts == 0
        seg = rec.segments[0]
        assert seg.job_id == rec.job_id and (seg.start, seg.end) == (rec.start, rec.end)
        assert rec.start >= rec.submit
        assert rec.end == rec.start + min(tj.runtime, tj.time_limit)  # exact: the same float sum
        assert rec.state == ("TIMEOUT" if tj.runtime > tj.time_limit else "COMPLETED")
        assert seg.state == rec.state and seg.lost_gpu_s == 0.0
        assert seg.cpus == rec.cpus and seg.gpus == rec.gpus
    check_capacity(sim, cpus_cap, gpus_cap)


def fifo_order_inversions(sim: Simulator) -> int:
    recs = sorted(sim.records.values(), key=lambda r: (r.submit, r.job_id))
    return sum(1 for a, b in zip(recs, recs[1:]) if b.start < a.start)


@pytest.mark.parametrize("name", TRACE_PARAMS)
@pytest.mark.parametrize("policy", POLICIES)
def test_replay_invariants(name: str, policy: str) -> None:
    _, _, cpus, gpus, _, _, _ = TRACES[name]
    sim = replayed(name, policy)
    check_replay(sim, trace_jobs(name), cpus, gpus)
    if policy == "fifo":
        assert fifo_order_inversions(sim) == 0
        assert not any(r.backfilled for r in sim.records.values())
        assert sim.passes["backfill"] == 0
    else:
        assert fifo_order_inversions(sim) > 0
        backfilled = [r for r in sim.records.values() if r.backfilled]
        assert backfilled and sim.passes["backfill"] > 0


@pytest.mark.parametrize("name", TRACE_PARAMS)
def test_backfill_beats_fifo(name: str) -> None:
    def numbers(policy):
        sim = replayed(name, policy)
        return summarize(list(sim.records.values()), sim.capacity, policy=policy, wall_s=1.0)

    fifo = numbers("fifo")
    assert fifo["wait_mean_s"] > 0  # a queue formed
    for policy in ("easy", "conservative"):
        s = numbers(policy)
        assert s["wait_mean_s"] < fifo["wait_mean_s"]
        assert s["bsld_mean"] < fifo["bsld_mean"]
        assert s["jobs"] == fifo["jobs"] == s["completed"]


def test_trace_slices_actually_queue() -> None:
    """The slices are sized so that FIFO leaves work waiting (else the comparisons say nothing)."""
    for name in ("hpc2n", "philly"):
        waits = [r.wait for r in replayed(name, "fifo").records.values()]
        assert sum(w > 0 for w in waits) > len(waits) // 10


def test_timeout_exactly_when_runtime_exceeds_limit() -> None:
    """Readers clamp runtimes, so over-running jobs are built by hand: 2 nodes x 4 GPUs."""
    jobs = [TraceJob(1, 0.0, 100.0, 60.0, 1, 4, 4),       # over: killed at 60
            TraceJob(2, 0.0, 60.0, 60.0, 1, 4, 4),        # exactly at its limit: completes
            TraceJob(3, 10.0, 59.5, 60.0, 2, 4, 4),       # waits for both nodes
            TraceJob(4, 10.0, 1000.0, 120.0, 1, 4, 2)]    # after 3, TIMEOUT at 120
    for policy in POLICIES:
        sim = Simulator(make_cluster(2, 8, 4, policy), _copies(jobs))
        sim.run()
        got = {int(sim.state.jobs[r.job_id].name): (r.start, r.end, r.state) for r in sim.records.values()}
        assert got == {1: (0.0, 60.0, "TIMEOUT"), 2: (0.0, 60.0, "COMPLETED"),
                       3: (60.0, 119.5, "COMPLETED"), 4: (119.5, 239.5, "TIMEOUT")}
        assert [s.state for s in sim.records[1].segments] == ["TIMEOUT"]
        check_replay(sim, tuple(jobs), 8, 4)


def test_too_large_job_is_rejected_not_run() -> None:
    jobs = [TraceJob(1, 0.0, 10.0, 60.0, 3, 1, 0),  # 3 nodes on a 2-node cluster
            TraceJob(2, 0.0, 10.0, 60.0, 1, 9, 0),  # 9 CPUs on 8-CPU nodes
            TraceJob(3, 5.0, 10.0, 60.0, 2, 8, 0)]
    sim = Simulator(make_cluster(2, 8, 0, "conservative"), _copies(jobs))
    records = sim.run()
    assert sorted(j for j, _ in sim.rejected) == [1, 2]
    assert [(r.start, r.end, r.state) for r in records] == [(5.0, 15.0, "COMPLETED")]


def test_partition_limits_refused_at_submission() -> None:
    """Jobs a partition can never run are refused with Slurm's messages, not left pending."""
    cfg = make_cluster(2, 8, 0, "conservative")
    cfg.partitions[0].max_time = 3600.0
    cfg.partitions[0].max_nodes = 1
    cfg.partitions.append(PartitionConfig("off", nodes=list(cfg.partitions[0].nodes), state="DOWN"))
    jobs = [TraceJob(1, 0.0, 10.0, 7200.0, 1, 1, 0), TraceJob(2, 0.0, 10.0, 60.0, 2, 1, 0),
            TraceJob(3, 0.0, 10.0, 60.0, 1, 1, 0, partition="nosuch"),
            TraceJob(4, 0.0, 10.0, 60.0, 1, 1, 0, partition="off"), TraceJob(5, 1.0, 10.0, 3600.0, 1, 8, 0)]
    sim = Simulator(cfg, _copies(jobs))
    records = sim.run()
    assert sim.rejected == [(1, errors.INVALID_TIME_LIMIT), (2, errors.NODE_CONFIG_UNAVAILABLE),
                            (3, errors.INVALID_PARTITION), (4, errors.PART_CONFIG_UNAVAILABLE)]
    assert [(r.start, r.end, r.state) for r in records] == [(1.0, 11.0, "COMPLETED")]


def test_job_that_can_never_start_is_an_error_not_a_hang() -> None:
    cfg = make_cluster(2, 8, 0, "conservative")
    cfg.nodes[1].state = "DOWN"  # configured DOWN, and nothing will bring it back
    sim = Simulator(cfg, [TraceJob(9, 0.0, 10.0, 60.0, 2, 1, 0), TraceJob(10, 0.0, 10.0, 60.0, 1, 1, 0)])
    with pytest.raises(ValueError, match=r"^1 job can never start, e.g. trace job 9 \(2 nodes"):
        sim.run()
    assert sim.records[2].state == "COMPLETED"


def test_deterministic(tmp_path: Path) -> None:
    """A fresh replay writes byte-for-byte the jobs.csv of the cached one, on the same nodes."""
    _, nodes, cpus, gpus, _, bmt, bfi = TRACES["hpc2n"]
    fresh = Simulator(make_cluster(nodes, cpus, gpus, "conservative", bmt, bfi),
                      _copies(trace_jobs("hpc2n")))
    fresh.run()
    out = []
    for run, sim in enumerate((replayed("hpc2n", "conservative"), fresh)):
        path = write_jobs_csv(list(sim.records.values()), tmp_path / f"jobs{run}.csv")
        segs = [(s.start, s.end, s.nodes) for r in sim.records.values() for s in r.segments]
        out.append((path.read_bytes(), segs, dict(sim.passes)))
    assert out[0][0].count(b"\n") == 1 + len(trace_jobs("hpc2n"))
    assert out[0] == out[1]


def test_makespan_and_utilization_match_records() -> None:
    sim = replayed("philly", "conservative")
    recs = list(sim.records.values())
    s = summarize(recs, sim.capacity, policy="conservative", wall_s=1.0)
    first = min(r.submit for r in recs)
    last = max(r.end for r in recs)
    assert s["makespan_s"] == last - first
    busy = sum((r.end - r.start) * r.gpus for r in recs)
    assert s["utilization"] == pytest.approx(busy / (48 * 8 * (last - first)), rel=1e-12)
    assert (sim.capacity.nodes, sim.capacity.cpus, sim.capacity.gpus) == (48, 48 * 32, 48 * 8)
