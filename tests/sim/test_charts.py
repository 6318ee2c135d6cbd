"""Charts write real PNGs, draw the whole replay (or say what they cut), stay fast on big traces."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from matplotlib.patches import PathPatch

from minislurm.sim import charts
from minislurm.sim.charts import gantt, gantt_figure, utilization_chart, utilization_figure
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


def drawn_bars(fig) -> list[tuple[int, float, float]]:
    """(node, start h, end h) of every bar on a Gantt, whichever artists hold the bars."""
    ax = fig.axes[0]
    paths = [p for c in ax.collections for p in c.get_paths()]
    paths += [a.get_path() for a in ax.patches if isinstance(a, PathPatch)]
    bars = []
    for path in paths:
        for rect in path.vertices.reshape(-1, 5, 2):  # four corners and the closing vertex
            bars.append((round(rect[:, 1].mean()), round(rect[:, 0].min(), 6), round(rect[:, 0].max(), 6)))
    return sorted(bars)


def multi_node_trace() -> tuple[list[JobRecord], Capacity]:
    """900 jobs (more than any first-N cut) on 12 nodes, up to four nodes each, a few failures."""
    recs, cap = synthetic(900, nodes=12)
    shift = 7200.0  # every run two hours later, job 0 still submitted at 0: the charts start at 0
    for r in recs:
        r.submit, r.start, r.end = r.submit + shift * (r.job_id > 0), r.start + shift, r.end + shift
        for seg in r.segments:
            seg.start, seg.end = seg.start + shift, seg.end + shift
    return recs, cap


def test_gantt_draws_every_run_on_every_node_of_the_job() -> None:
    recs, cap = multi_node_trace()
    expected = sorted((n, round(s.start / 3600, 6), round(s.end / 3600, 6))
                      for r in recs for s in r.segments for n in s.nodes)
    assert len(expected) > 900 and any(len(s.nodes) > 1 for r in recs for s in r.segments)
    fig = gantt_figure(recs, cap)
    try:
        assert drawn_bars(fig) == expected
        assert "all 900 jobs (900 runs)" in fig.axes[0].get_title()
    finally:
        plt_close(fig)


def test_gantt_and_utilisation_span_the_same_hours() -> None:
    recs, cap = multi_node_trace()
    first_submit = min(r.submit for r in recs) / 3600
    last_end = max(s.end for r in recs for s in r.segments) / 3600
    assert first_submit < min(s.start for r in recs for s in r.segments) / 3600
    g, u, cut = gantt_figure(recs, cap), utilization_figure(recs, cap), gantt_figure(recs, cap, max_jobs=50)
    try:
        xlim = u.axes[0].get_xlim()
        assert xlim[0] < first_submit and xlim[1] > last_end
        assert g.axes[0].get_xlim() == pytest.approx(xlim)
        assert cut.axes[0].get_xlim() == pytest.approx(xlim)  # a cut still sits on the whole time axis
    finally:
        plt_close(g, u, cut)


def test_gantt_title_says_what_it_cut() -> None:
    recs = small()  # J1-J3 ran, 0-2.5 h; J4 never started
    titles = {}
    for name, kw in [("all", {}), ("first", {"max_jobs": 2}), ("window", {"window": (1800.0, 5400.0)})]:
        fig = gantt_figure(recs, CAP, title="t", **kw)
        titles[name] = fig.axes[0].get_title()
        plt_close(fig)
    assert titles["all"] == "t\nall 3 jobs (4 runs), 0-2.5 h; 1 never started"
    spans = "the replay spans 0-2.5 h; 1 never started"
    assert titles["first"] == f"t\nfirst 2 of 3 jobs by submit time only; {spans}"
    assert titles["window"] == f"t\nruns in 0.5-1.5 h only: 3 of 3 jobs; {spans}"
    fig = utilization_figure(recs, CAP, title="t")
    assert fig.axes[0].get_title() == "t\nall 4 jobs, 0-2.5 h; peak 8 of 8 GPUs busy"
    plt_close(fig)


def plt_close(*figs) -> None:
    import matplotlib.pyplot as plt

    for fig in figs:
        plt.close(fig)


def test_no_figures_left_open(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    before = len(plt.get_fignums())
    gantt(small(), CAP, tmp_path / "a.png")
    utilization_chart(small(), CAP, tmp_path / "b.png")
    assert len(plt.get_fignums()) == before


@pytest.mark.slow
def test_charts_of_a_philly_sized_trace(tmp_path: Path) -> None:
    """111,000 jobs are drawn (how fast is bench/'s business: a timed unit test fails on a
    loaded machine for no fault of the code)."""
    recs, cap = synthetic(111_000)
    for call in (
        lambda: gantt(recs, cap, tmp_path / "g.png"),
        lambda: gantt(recs, cap, tmp_path / "gw.png", window=(0.0, 30 * 86400.0)),
        lambda: utilization_chart(recs, cap, tmp_path / "u.png"),
    ):
        width, height = png_size(call())
        assert width > 0 and height > 0
