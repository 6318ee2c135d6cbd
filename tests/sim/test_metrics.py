"""Metrics on a small replay whose numbers are worked out by hand."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from minislurm.sim.metrics import CSV_COLUMNS, summarize, utilization_series, write_jobs_csv
from minislurm.sim.records import Capacity, JobRecord, Segment

CAP = Capacity(nodes=2, cpus=16, gpus=8)  # 2 nodes x (8 CPUs, 4 GPUs)


def seg(job: int, start: float, end: float, nodes: tuple[int, ...], gpus: int, cpus: int,
        state: str = "COMPLETED", lost: float = 0.0) -> Segment:
    return Segment(job, start, end, nodes, gpus, cpus, state, lost)


def example() -> list[JobRecord]:
    """Node 0: J1 0-100, J3 100-105, J4 160-200. Node 1: J2 0-50 (fails), J2 60-160, J4 160-200.

    J5 never starts. Waits of started jobs: 0, 0, 90, 140.
    """
    j1 = JobRecord(1, 0.0, 0.0, 100.0, 1, 4, 8, 100.0, 200.0, "COMPLETED",
                   segments=[seg(1, 0, 100, (0,), 4, 8)])
    j2 = JobRecord(2, 0.0, 0.0, 160.0, 1, 4, 8, 100.0, 200.0, "COMPLETED", restarts=1,
                   segments=[seg(2, 0, 50, (1,), 4, 8, "NODE_FAIL", lost=200.0),
                             seg(2, 60, 160, (1,), 4, 8)])
    j3 = JobRecord(3, 10.0, 100.0, 105.0, 1, 4, 2, 5.0, 60.0, "COMPLETED", backfilled=True,
                   segments=[seg(3, 100, 105, (0,), 4, 2)])
    j4 = JobRecord(4, 20.0, 160.0, 200.0, 2, 8, 16, 40.0, 100.0, "COMPLETED",
                   segments=[seg(4, 160, 200, (0, 1), 8, 16)])
    j5 = JobRecord(5, 30.0, None, None, 1, 4, 8, 10.0, 60.0, "PENDING")
    return [j1, j2, j3, j4, j5]


def test_summary_hand_computed() -> None:
    s = summarize(example(), CAP, policy="fifo", wall_s=2.0)
    assert s["policy"] == "fifo"
    assert (s["jobs"], s["completed"], s["started"], s["finished"]) == (5, 4, 4, 4)
    assert s["wait_mean_s"] == pytest.approx(57.5)
    assert s["wait_median_s"] == pytest.approx(45.0)
    assert s["wait_p95_s"] == pytest.approx(132.5)  # 90 + 0.85 * (140 - 90)
    # bsld: J1 100/100, J2 160/160, J3 95/max(5, 10), J4 180/40 -> 1, 1, 9.5, 4.5
    assert s["bsld_mean"] == pytest.approx(4.0)
    assert s["jct_mean_s"] == pytest.approx((100 + 160 + 95 + 180) / 4)
    assert s["makespan_s"] == pytest.approx(200.0)
    # GPU-s: 400 + (200 + 400) + 20 + 320 = 1340 of 8 x 200
    assert s["gpu_utilization"] == pytest.approx(1340 / 1600)
    assert s["utilization"] == s["gpu_utilization"]
    # CPU-s: 800 + 1200 + 10 + 640 = 2650 of 16 x 200
    assert s["cpu_utilization"] == pytest.approx(2650 / 3200)
    assert s["gpu_hours_lost_to_failures"] == pytest.approx(200 / 3600)
    assert s["node_failures"] == 1
    assert s["requeues"] == 1
    assert s["backfilled"] == 1
    assert s["wall_s"] == 2.0
    assert s["jobs_per_s"] == pytest.approx(2.5)


def test_tau_bounds_short_jobs() -> None:
    s = summarize(example(), CAP, policy="fifo", wall_s=1.0, tau=1.0)
    assert s["bsld_mean"] == pytest.approx((1 + 1 + 95 / 5 + 4.5) / 4)
    big = summarize(example(), CAP, policy="fifo", wall_s=1.0, tau=1000.0)
    # every denominator is tau and J1 (100/1000) is floored at 1
    assert big["bsld_mean"] == pytest.approx((1 + 1 + 1 + 1) / 4)


def test_cpu_only_machine_uses_cpus() -> None:
    s = summarize(example(), Capacity(nodes=2, cpus=16, gpus=0), policy="easy", wall_s=1.0)
    assert s["primary_resource"] == "cpu"
    assert s["gpu_utilization"] is None
    assert s["utilization"] == pytest.approx(2650 / 3200)


def test_summary_is_strict_json() -> None:
    s = summarize(example(), CAP, policy="fifo", wall_s=2.0)
    back = json.loads(json.dumps(s, allow_nan=False))
    assert back == s
    for v in s.values():
        assert v is None or type(v) in (int, float, str, bool), (v, type(v))


def test_empty_and_unstarted_give_none_not_nan() -> None:
    empty = summarize([], CAP, policy="fifo", wall_s=0.0)
    assert empty["jobs"] == 0
    for key in ("utilization", "wait_mean_s", "wait_p95_s", "bsld_mean", "makespan_s", "jobs_per_s"):
        assert empty[key] is None, key
    json.dumps(empty, allow_nan=False)
    only_pending = summarize([example()[-1]], CAP, policy="fifo", wall_s=1.0)
    assert only_pending["wait_median_s"] is None and only_pending["utilization"] is None
    assert only_pending["jobs_per_s"] == 1.0


def test_csv_round_trip(tmp_path) -> None:
    recs = example()
    path = write_jobs_csv(recs, tmp_path / "out" / "jobs.csv")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames) == CSV_COLUMNS
        rows = list(reader)
    assert len(rows) == len(recs)
    for r, row in zip(recs, rows):
        assert int(row["id"]) == r.job_id
        assert float(row["submit"]) == r.submit
        assert (float(row["start"]) if row["start"] else None) == r.start
        assert (float(row["end"]) if row["end"] else None) == r.end
        assert (float(row["wait"]) if row["wait"] else None) == r.wait
        assert (int(row["nodes"]), int(row["gpus"]), int(row["cpus"])) == (r.nodes, r.gpus, r.cpus)
        assert row["state"] == r.state and int(row["restarts"]) == r.restarts
        assert float(row["runtime"]) == r.runtime and float(row["time_limit"]) == r.time_limit
        assert bool(int(row["backfilled"])) == r.backfilled
    assert rows[4]["start"] == rows[4]["end"] == rows[4]["wait"] == ""


def test_utilization_series_steps() -> None:
    t, busy = utilization_series(example(), CAP, "gpu")
    assert t.tolist() == [0, 50, 60, 100, 105, 160, 200]
    assert busy.tolist() == [8, 4, 8, 8, 4, 8, 0]
    # The integral of the step function is the busy GPU-seconds the summary divides.
    assert float(np.sum(busy[:-1] * np.diff(t))) == pytest.approx(1340)
    t, busy = utilization_series(example(), CAP, "node")
    assert busy.tolist() == [2, 1, 2, 2, 1, 2, 0]


def test_utilization_series_on_a_grid() -> None:
    t, busy = utilization_series(example(), CAP, "cpu", step=50)
    assert t.tolist() == [0, 50, 100, 150, 200]
    assert busy.tolist() == [16, 8, 10, 8, 0]


def test_utilization_series_edge_cases() -> None:
    t, busy = utilization_series([], CAP)
    assert t.size == busy.size == 0
    with pytest.raises(ValueError):
        utilization_series(example(), CAP, "tpu")
    with pytest.raises(ValueError):
        utilization_series(example(), CAP, step=0)
    assert not any(math.isnan(x) for x in utilization_series(example(), CAP)[1])
