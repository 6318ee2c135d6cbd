"""Figures for the lessons: a GPU-lane Gantt chart of a scenario, and the figure class they use.

Figures are :class:`LabFigure` objects, built without pyplot: no global figure list to leak
from widget callbacks, no dependence on the notebook's matplotlib backend (importing
:mod:`minislurm.sim.charts` switches it to Agg), and each one shows itself as a PNG in any
notebook.  Tests read their artists directly.
"""

from __future__ import annotations

import io

from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from minislurm.lab.scenario import ScenarioResult

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac"]
PROMISE_COLOUR = "#222222"
RESERVATION_COLOUR = "#c9b3e6"
RESERVATION_EDGE = "#7b4fb8"


class LabFigure(Figure):
    """A matplotlib Figure that renders itself as PNG in a notebook, whatever the backend."""

    def png(self, dpi: float = 80) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png", dpi=dpi)
        return buf.getvalue()

    def _repr_png_(self) -> bytes:
        return self.png()


def new_figure(width: float = 9.0, height: float = 3.5) -> LabFigure:
    return LabFigure(figsize=(width, height), layout="constrained")


def short_name(name: str) -> str | None:
    """A label's short form: an array-like name's index (``llm-run_12`` -> ``12``), else none."""
    head, sep, tail = name.rpartition("_")
    return tail if sep and head and tail else None


def fit_labels(fig: LabFigure, labels: list) -> None:
    """Keep each label inside its box, so that narrow boxes side by side do not print over each
    other: as written, else turned upright, else in its short form, else not at all.

    ``labels``: (text artist, box as (x0, y0, x1, y1) in its axes' data, short form or None).
    The figure is laid out first, so the test uses the sizes the PNG will have."""
    fig.draw_without_rendering()
    for text, (x0, y0, x1, y1), short in labels:
        (px0, py0), (px1, py1) = text.axes.transData.transform([(x0, y0), (x1, y1)])
        room_w, room_h = abs(px1 - px0) - 2, abs(py1 - py0) - 2
        for content, rotation in ((text.get_text(), 0), (text.get_text(), 90), (short, 0), (short, 90)):
            if content is None:
                continue
            text.set_text(content)
            text.set_rotation(rotation)
            box = text.get_window_extent()
            if box.width <= room_w and box.height <= room_h:
                break
        else:
            text.remove()


def _runs_of(gpus: tuple[int, ...]) -> list[tuple[int, int]]:
    """Consecutive GPU indices as (first, count) blocks, so a job on GPUs 0,1,3 draws two bars."""
    blocks: list[tuple[int, int]] = []
    for g in sorted(gpus):
        if blocks and blocks[-1][0] + blocks[-1][1] == g:
            blocks[-1] = (blocks[-1][0], blocks[-1][1] + 1)
        else:
            blocks.append((g, 1))
    return blocks


def gantt(result: ScenarioResult, *, unit: float = 60.0, unit_name: str = "minutes",
          title: str | None = None, width: float = 9.0) -> LabFigure:
    """One lane per GPU, nodes stacked: who ran on which GPUs when.

    Solid bars are runs (TIMEOUT runs grey); the pale hatched tail is the part of the time limit a
    job did not use (the scheduler planned with it); a dashed box is a waiting job's first
    promised start and nodes (whole nodes, as Slurm's backfill reserves); violet shading is an
    advance reservation's window on its nodes.
    """
    gpn = max(result.gpus_per_node, 1)
    n_nodes = len(result.node_names)
    fig = new_figure(width, 1.2 + 0.28 * n_nodes * gpn)
    ax = fig.subplots()
    colour = {j.name: PALETTE[i % len(PALETTE)] for i, j in enumerate(result.jobs)}
    index = {name: i for i, name in enumerate(result.node_names)}
    right = 0.0
    labels = []
    for resv in result.reservations:
        end = resv.end if resv.end != float("inf") else None
        for name in resv.nodes:
            if name in index:
                x1 = (end if end is not None else resv.start + 1e9) / unit
                ax.add_patch(Rectangle((resv.start / unit, index[name] * gpn - 0.5), x1 - resv.start / unit, gpn,
                                       facecolor=RESERVATION_COLOUR, alpha=0.45, edgecolor="none",
                                       gid=f"reservation:{resv.name}"))
                ax.add_patch(Rectangle((resv.start / unit, index[name] * gpn - 0.5), x1 - resv.start / unit, gpn,
                                       fill=False, edgecolor=RESERVATION_EDGE, linewidth=2, zorder=4,
                                       gid=f"window:{resv.name}"))  # seen over the runs inside it
        right = max(right, resv.start)
    for job in result.jobs:
        run = result.runs.get(job.name)
        if run is None:
            continue
        c = "#9e9e9e" if run.state == "TIMEOUT" else colour[job.name]
        planned_end = run.start + job.limit
        right = max(right, planned_end)
        for node, gpus in zip(run.nodes, run.gpus):
            for first, count in _runs_of(gpus) or [(0, 1)]:
                y = node * gpn + first - 0.4
                h = count - 0.2
                ax.add_patch(Rectangle((run.start / unit, y), (run.end - run.start) / unit, h, facecolor=c,
                                       edgecolor="black", linewidth=0.6, gid=f"run:{job.name}"))
                if planned_end > run.end:
                    ax.add_patch(Rectangle((run.end / unit, y), (planned_end - run.end) / unit, h, facecolor=c,
                                           alpha=0.22, hatch="//", edgecolor="none", gid=f"unused:{job.name}"))
        node0, gpus0 = run.nodes[0], run.gpus[0] or (0,)
        first, count = _runs_of(gpus0)[0]
        label = ax.text((run.start + run.end) / 2 / unit, node0 * gpn + first + (count - 1) / 2, job.name,
                        ha="center", va="center", fontsize=8, color="white", fontweight="bold", clip_on=True)
        y0 = node0 * gpn + first - 0.4
        labels.append((label, (run.start / unit, y0, run.end / unit, y0 + count - 0.2), short_name(job.name)))
    for job in result.jobs:
        promise = result.first_promise(job.name)
        if promise is None or not promise.nodes:
            continue
        right = max(right, promise.start + job.limit)
        for node in promise.nodes:
            ax.add_patch(Rectangle((promise.start / unit, node * gpn - 0.45), job.limit / unit, gpn - 0.1,
                                   fill=False, linestyle="--", linewidth=1.2, edgecolor=PROMISE_COLOUR,
                                   gid=f"promise:{job.name}"))
        y0 = promise.nodes[0] * gpn - 0.45
        label = ax.text(promise.start / unit, y0, f" {job.name} promised", fontsize=7, va="top",
                        color=PROMISE_COLOUR, clip_on=True)
        labels.append((label, (promise.start / unit, y0, (promise.start + job.limit) / unit, y0 + gpn - 0.1), None))
    left = min((j.submit for j in result.jobs), default=0.0)
    ax.set_xlim(left / unit, max(right, left + unit) / unit * 1.02)
    ax.set_ylim(n_nodes * gpn - 0.5, -0.5)
    ax.set_yticks(range(n_nodes * gpn))
    ax.set_yticklabels([f"{n} gpu{g}" if g == 0 else f"gpu{g}" for n in result.node_names for g in range(gpn)],
                       fontsize=7)
    for k in range(1, n_nodes):
        ax.axhline(k * gpn - 0.5, color="black", linewidth=0.8)
    ax.set_xlabel(f"time ({unit_name})")
    handles = [Patch(facecolor=PALETTE[0], edgecolor="black", label="run"),
               Patch(facecolor=PALETTE[0], alpha=0.22, hatch="//", label="time limit not used"),
               Patch(fill=False, linestyle="--", edgecolor=PROMISE_COLOUR, label="first promised start")]
    if result.reservations:
        handles.append(Patch(facecolor=RESERVATION_COLOUR, alpha=0.45, edgecolor=RESERVATION_EDGE, linewidth=2,
                             label="advance reservation"))
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=7, frameon=False)
    ax.set_title(title or f"{result.policy}: started in order {', '.join(result.order)}", fontsize=10)
    fit_labels(fig, labels)
    return fig


def utilisation(records, capacity, *, title: str = "", util: float | None = None) -> LabFigure:
    """Busy GPUs (CPUs on a GPU-less machine) over time against capacity, from replay records."""
    from minislurm.sim.metrics import primary_resource, utilization_series

    resource = primary_resource(capacity)
    total = capacity.gpus if resource == "gpu" else capacity.cpus
    times, busy = utilization_series(records, capacity, resource)
    fig = new_figure(9.0, 3.2)
    ax = fig.subplots()
    days = len(times) and times[-1] / 3600.0 > 72
    scale, unit = (86400.0, "days") if days else (3600.0, "hours")
    label = f"busy {resource.upper()}s" + (f" (mean {util:.1%})" if util is not None else "")
    ax.step(times / scale, busy, where="post", lw=0.8, label=label, gid="busy")
    ax.axhline(total, ls="--", color="black", lw=1, label=f"capacity: {total} {resource.upper()}s")
    ax.set_ylim(0, total * 1.08 or 1)
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel(f"busy {resource.upper()}s")
    ax.legend(loc="lower right", fontsize=7)
    ax.set_title(title, fontsize=10)
    return fig


def wait_cdf(records_by_label: dict, *, title: str = "") -> LabFigure:
    """The share of jobs that waited at most x hours, one curve per replay (log x axis)."""
    import numpy as np

    fig = new_figure(7.0, 3.2)
    ax = fig.subplots()
    for i, (label, records) in enumerate(records_by_label.items()):
        waits = np.sort([r.wait for r in records if r.wait is not None]) / 3600.0
        share = np.arange(1, len(waits) + 1) / max(len(waits), 1)
        ax.step(np.maximum(waits, 1 / 60), share, where="post", color=PALETTE[i % len(PALETTE)], label=label,
                gid=f"cdf:{label}")
    ax.set_xscale("log")
    ax.set_xlabel("wait (hours; waits under a minute drawn at one minute)")
    ax.set_ylabel("share of jobs")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title, fontsize=10)
    return fig


def checkpoint_tradeoff(points, cost_s: float, *, chosen_s: float | None = None,
                        young_s: float | None = None, title: str = "") -> LabFigure:
    """GPU-hours lost to failures, spent writing checkpoints, and their sum, against the interval."""
    hour = 3600.0
    x = [p.interval_s / hour for p in points]
    fig = new_figure(8.0, 3.6)
    ax = fig.subplots()
    ax.plot(x, [p.lost_gpu_h for p in points], "o-", color="#e15759", label="lost to failures", gid="lost")
    ax.plot(x, [p.overhead_gpu_h(cost_s) for p in points], "s-", color="#4e79a7",
            label=f"writing checkpoints ({cost_s:g} s each)", gid="overhead")
    ax.plot(x, [p.total_gpu_h(cost_s) for p in points], "-", color="black", lw=2, label="total", gid="total")
    if chosen_s is not None:
        ax.axvline(chosen_s / hour, color="#59a14f", lw=2, label="your interval", gid="chosen")
    if young_s is not None:
        ax.axvline(young_s / hour, color="grey", ls=":", lw=1.5,
                   label=f"Young's optimum, 1-node job ({young_s / hour:.1f} h)", gid="young")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(x, [f"{v * 60:.0f} min" if v < 1 else f"{v:g} h" for v in x], fontsize=7)
    ax.minorticks_off()
    ax.set_xlabel("checkpoint interval")
    ax.set_ylabel("GPU-hours")
    fig.legend(fontsize=7, loc="outside right upper")
    ax.set_title(title, fontsize=10)
    return fig


def goodput_curve(runs, job_mtbf_s: float, *, title: str = "") -> LabFigure:
    """The simulator's goodput of one long run against its checkpoint interval (points), the
    first-order model's (line), Young's interval and the simulator's best."""
    import numpy as np

    from minislurm.lab.goodput import goodput_model
    from minislurm.lab.replays import young_daly

    cost, restart = runs[0].cost_s, runs[0].restart_s
    x = np.array([r.interval_s for r in runs]) / 60.0
    fine = np.geomspace(x.min(), x.max(), 200)
    best = max(runs, key=lambda r: r.goodput)
    young = young_daly(cost, job_mtbf_s) / 60.0
    fig = new_figure(8.0, 3.6)
    ax = fig.subplots()
    ax.plot(fine, [100 * goodput_model(t * 60, cost, job_mtbf_s, restart) for t in fine], "-", color="grey",
            label="first-order model", gid="model")
    ax.plot(x, [100 * r.goodput for r in runs], "o", color=PALETTE[0], label="simulated", gid="simulated")
    ax.plot([best.interval_s / 60], [100 * best.goodput], "*", ms=14, color=PALETTE[3],
            label=f"simulator's best ({best.interval_s / 60:g} min)", gid="best")
    ax.axvline(young, color="black", ls=":", lw=1.5, label=f"Young's interval ({young:.0f} min)", gid="young")
    ax.set_xscale("log")
    ax.set_xticks(x, [f"{v:g}" for v in x], fontsize=7)
    ax.minorticks_off()
    ax.set_xlabel(f"checkpoint interval (minutes of work; {cost:g} s to write one)")
    ax.set_ylabel("goodput (% of elapsed time)")
    ax.legend(fontsize=7, loc="lower center")
    ax.set_title(title, fontsize=10)
    return fig
