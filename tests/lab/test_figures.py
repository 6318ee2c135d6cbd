"""The Gantt chart draws what the scenario recorded: runs on their GPU lanes, promises, windows."""

from __future__ import annotations

from matplotlib.patches import Rectangle

from minislurm.core.reservation import AdvanceReservation
from minislurm.lab.figures import LabFigure, gantt
from minislurm.lab.scenario import LabJob, run_scenario

REFERENCE = [LabJob("A", 0, 1, 4, 120), LabJob("B", 10, 2, 4, 300), LabJob("C", 20, 1, 2, 60),
             LabJob("D", 30, 1, 2, 600)]


def patches(fig: LabFigure, prefix: str) -> list[Rectangle]:
    return [p for p in fig.axes[0].patches if (p.get_gid() or "").startswith(prefix)]


def test_runs_sit_on_their_gpu_lanes():
    fig = gantt(run_scenario(REFERENCE))
    (c,) = patches(fig, "run:C")
    # node02 is lanes 4-7 (4 GPUs per node); C holds GPUs 0 and 1 -> lanes 4 and 5.
    assert (c.get_x(), c.get_width()) == (20 / 60, 1.0)
    assert c.get_y() == 4 - 0.4 and c.get_height() == 2 - 0.2
    b = patches(fig, "run:B")
    assert sorted(p.get_y() for p in b) == [-0.4, 3.6]  # one bar per node, all four GPUs
    assert "A, C, B, D" in fig.axes[0].get_title()


def test_promises_are_dashed_whole_node_boxes():
    fig = gantt(run_scenario(REFERENCE))
    boxes = patches(fig, "promise:B")
    assert len(boxes) == 2 and all(p.get_linestyle() == "--" and not p.get_fill() for p in boxes)
    assert {p.get_x() for p in boxes} == {2.0}  # promised at 120 s = 2 min
    assert {p.get_height() for p in boxes} == {4 - 0.1}  # the whole node, though B's GPUs are all it needs
    (d,) = patches(fig, "promise:D")
    assert d.get_x() == 7.0 and d.get_width() == 10.0


def test_unused_limit_and_reservations_are_drawn():
    resv = AdvanceReservation("llm", ("node02",), start=600, end=1200)
    r = run_scenario([LabJob("x", 0, 1, 1, limit=300, runtime=120)], reservations=[resv])
    fig = gantt(r)
    (tail,) = patches(fig, "unused:x")
    assert (tail.get_x(), tail.get_width()) == (2.0, 3.0)
    (window,) = patches(fig, "reservation:llm")
    assert (window.get_x(), window.get_width(), window.get_y()) == (10.0, 10.0, 3.5)


def test_figure_renders_to_png_without_pyplot():
    fig = gantt(run_scenario(REFERENCE))
    assert fig.png().startswith(b"\x89PNG") and fig._repr_png_().startswith(b"\x89PNG")


def _overlapping(texts) -> list[tuple[str, str]]:
    boxes = [(t.get_text(), t.get_window_extent()) for t in texts]
    return [(a, b) for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:] if box_a.overlaps(box_b)]


def test_labels_of_narrow_bars_side_by_side_do_not_print_over_each_other():
    """Twenty-one one-day links in a three-week window (chapter 6): each label is turned upright
    or shortened to fit its bar, and no two labels overlap."""
    day = 86400
    resv = AdvanceReservation("llm-3wk", ("node02",), start=day, end=22 * day, users=frozenset({"alice"}))
    links = [LabJob(f"llm-run_{i}", submit=i, nodes=1, gpus=4, limit=day, user="alice", reservation="llm-3wk")
             for i in range(1, 22)]
    fig = gantt(run_scenario([LabJob("ablation-1", 0, 1, 4, limit=36 * 3600), *links], reservations=[resv]),
                unit=day, unit_name="days")
    texts = fig.axes[0].texts
    assert {t.get_text() for t in texts} >= {"llm-run_1", "llm-run_21", "ablation-1"}
    assert _overlapping(texts) == []
    bars = {p.get_gid(): p.get_window_extent() for p in patches(fig, "run:")}
    for t in texts:
        bar, box = bars[f"run:{t.get_text()}"], t.get_window_extent()
        assert bar.x0 <= box.x0 and box.x1 <= bar.x1, t.get_text()  # inside its own bar
