"""Charts write real PNGs, cope with nothing to draw, and stay fast on a Philly-sized trace."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import numpy as np
import pytest

from minislurm.sim import charts
from minislurm.sim.charts import gantt, utilization_chart
from minislurm.sim.records import Capacity, JobRecord, Segment

CAP = Capacity(nodes=2, cpus=16, gpus=8)
PNG_SIG = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIG and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def small() -> list[JobRecord]:
    return [
        JobRecord(1, 0.0, 0.0, 3600.0, 1, 4, 8, 3600.0, 7200.0, "COMPLETED",
                  segments=[Segment(1, 0, 3600, (0,), 4, 8, "COMPLETED")]),
        JobRecord(2, 0.0, 0.0, 9000.0, 1, 4, 8, 5400.0, 7200.0, "COMPLETED", restarts=1,
                  segments=[Segment(2, 0, 1800, (1,), 4, 8, "NODE_FAIL", 7200.0),
                            Segment(2, 3600, 9000, (1,), 4, 8, "COMPLETED")]),
        JobRecord(3, 100.0, 3600.0, 7200.0, 1, 4, 8, 9000.0, 3600.0, "TIMEOUT",
                  segments=[Segment(3, 3600, 7200, (0,), 4, 8, "TIMEOUT")]),
        JobRecord(4, 200.0, None, None, 2, 8, 16, 60.0, 600.0, "PENDING"),
    ]


def synthetic(n: int, nodes: int = 550, gpn: int = 8, seed: int = 0) -> tuple[list[JobRecord], Capacity]:
    """n one-to-four-node jobs laid end to end per node; enough for a timing check."""
    rng = np.random.default_rng(seed)
    free = np.zeros(nodes)
    recs = []
    for i in range(n):
        k = int(rng.integers(1, 5))
        ns = tuple(int(x) for x in rng.choice(nodes, k, replace=False))
        start = float(free[list(ns)].max())
        run = float(rng.exponential(3600))
        end = start + run
        free[list(ns)] = end
        state = "NODE_FAIL" if i % 50 == 0 else "COMPLETED"
        s = Segment(i, start, end, ns, k * gpn, k * 16, state, run * k * gpn if state == "NODE_FAIL" else 0.0)
        recs.append(JobRecord(i, max(0.0, start - 60), start, end, k, k * gpn, k * 16, run, 2 * run,
                              state, segments=[s]))
    return recs, Capacity(nodes=nodes, cpus=nodes * 16, gpus=nodes * gpn)


@pytest.mark.parametrize("draw", [gantt, utilization_chart])
def test_writes_png(tmp_path: Path, draw) -> None:
    out = draw(small(), CAP, tmp_path / "sub" / "c.png", title="t")
    assert out == tmp_path / "sub" / "c.png"
    w, h = png_size(out)
    assert 600 <= w <= 2000 and 200 <= h <= 2000
    assert out.stat().st_size > 5_000  # something was drawn, not a blank header


@pytest.mark.parametrize("draw", [gantt, utilization_chart])
def test_nothing_to_draw(tmp_path: Path, draw) -> None:
    for name, recs in [("empty", []), ("pending", [small()[-1]])]:
        w, h = png_size(draw(recs, CAP, tmp_path / f"{name}.png"))
        assert w > 0 and h > 0


def test_gantt_window_and_gpu_less_machine(tmp_path: Path) -> None:
    w, _ = png_size(gantt(small(), CAP, tmp_path / "w.png", window=(1800.0, 5400.0)))
    assert w >= 600
    cpu_only = Capacity(nodes=2, cpus=16, gpus=0)
    png_size(utilization_chart(small(), cpu_only, tmp_path / "cpu.png"))


def test_segment_selection() -> None:
    recs = small()
    # First two jobs by submit: J1 and J2 (three runs); J4 never ran.
    assert [s.job_id for s in charts._pick_segments(recs, 2, None)] == [1, 2, 2]
    assert len(charts._pick_segments(recs, None, None)) == 4
    # Window 1900-3500 s: J1 (0-3600) only; J2's failed run ended at 1800, its rerun starts at 3600.
    assert [s.job_id for s in charts._pick_segments(recs, 1, (1900.0, 3500.0))] == [1]
    x0, x1, node, job, kind = charts._bars(charts._pick_segments(recs, None, None), (1800.0, 5400.0))
    assert x0.min() == pytest.approx(0.5) and x1.max() == pytest.approx(1.5)
    assert sorted(kind.tolist()) == [0, 0, 1, 2]  # completed x2, NODE_FAIL, TIMEOUT


def test_no_figures_left_open(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    before = len(plt.get_fignums())
    gantt(small(), CAP, tmp_path / "a.png")
    utilization_chart(small(), CAP, tmp_path / "b.png")
    assert len(plt.get_fignums()) == before


@pytest.mark.slow
def test_fast_on_philly_sized_trace(tmp_path: Path) -> None:
    recs, cap = synthetic(111_000)
    for call in (
        lambda: gantt(recs, cap, tmp_path / "g.png"),
        lambda: gantt(recs, cap, tmp_path / "gw.png", window=(0.0, 30 * 86400.0)),
        lambda: utilization_chart(recs, cap, tmp_path / "u.png"),
    ):
        t0 = time.perf_counter()
        png_size(call())
        assert time.perf_counter() - t0 < 5.0
