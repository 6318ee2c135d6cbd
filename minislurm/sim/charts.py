"""Pictures of a replay: who ran on which node when, and how busy the machine was.

Both charts draw with collections (one artist for many bars, one line for the whole
series), so a 100k-job trace renders in seconds on the Agg backend with no display.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from minislurm.sim.metrics import primary_resource, utilization, utilization_series  # noqa: E402
from minislurm.sim.records import Capacity, JobRecord, Segment  # noqa: E402

FAILED_STATES = frozenset({"NODE_FAIL", "FAILED", "OUT_OF_MEMORY"})
_FAIL_COLOUR = "#d62728"
_OTHER_COLOUR = "#9e9e9e"


def _pick_segments(
    records: list[JobRecord], max_jobs: int | None, window: tuple[float, float] | None
) -> list[Segment]:
    """Segments overlapping `window`, or else those of the first `max_jobs` jobs by submit."""
    if window is not None:
        lo, hi = window
        return [s for r in records for s in r.segments if s.end > lo and s.start < hi]
    ran = sorted((r for r in records if r.segments), key=lambda r: (r.submit, r.job_id))
    if max_jobs is not None:
        ran = ran[:max_jobs]
    return [s for r in ran for s in r.segments]


def _bars(segs: list[Segment], window: tuple[float, float] | None) -> tuple[np.ndarray, ...]:
    """Flatten segments into one bar per (segment, node): x0, x1 in hours, node, job, state."""
    n = sum(len(s.nodes) for s in segs)
    x0, x1 = np.empty(n), np.empty(n)
    node, job = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    kind = np.empty(n, dtype=np.int8)  # 0 completed/running, 1 failed, 2 other end
    i = 0
    for s in segs:
        k = len(s.nodes)
        a, b = s.start, s.end
        if window is not None:
            a, b = max(a, window[0]), min(b, window[1])
        x0[i:i + k], x1[i:i + k] = a / 3600.0, b / 3600.0
        node[i:i + k] = s.nodes
        job[i:i + k] = s.job_id
        kind[i:i + k] = 1 if s.state in FAILED_STATES else (0 if s.state in ("COMPLETED", "RUNNING") else 2)
        i += k
    return x0, x1, node, job, kind


def _rects(x0: np.ndarray, x1: np.ndarray, y: np.ndarray, h: float = 0.8) -> np.ndarray:
    lo, hi = y - h / 2, y + h / 2
    return np.stack(
        [np.stack([x0, lo], 1), np.stack([x0, hi], 1), np.stack([x1, hi], 1), np.stack([x1, lo], 1)], 1
    )


def _save(fig: plt.Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return path


def gantt(
    records: list[JobRecord],
    capacity: Capacity,
    path: str | Path,
    *,
    max_jobs: int | None = 400,
    window: tuple[float, float] | None = None,
    title: str | None = None,
) -> Path:
    """Node-by-time chart: one bar per node per run, failed runs red and hatched.

    With `window` (start, end in seconds) every run overlapping it is drawn, clipped to it;
    otherwise the runs of the first `max_jobs` jobs by submit time (None: all jobs).
    """
    segs = _pick_segments(records, max_jobs, window)
    height = min(max(3.0, 1.5 + 0.06 * capacity.nodes), 20.0)
    fig, ax = plt.subplots(figsize=(12, height), layout="constrained")
    x0, x1, node, job, kind = _bars(segs, window)
    colours = plt.get_cmap("tab20")(job % 20)
    handles = []
    if (kind == 0).any():
        m = kind == 0
        ax.add_collection(PolyCollection(_rects(x0[m], x1[m], node[m]), facecolors=colours[m],
                                         edgecolors="none"))
        handles.append(Patch(facecolor=plt.get_cmap("tab20")(0), label="run (colour = job)"))
    if (kind == 2).any():
        m = kind == 2
        ax.add_collection(PolyCollection(_rects(x0[m], x1[m], node[m]), facecolors=_OTHER_COLOUR,
                                         edgecolors="none"))
        handles.append(Patch(facecolor=_OTHER_COLOUR, label="timeout / cancelled"))
    if (kind == 1).any():
        m = kind == 1
        ax.add_collection(PolyCollection(_rects(x0[m], x1[m], node[m]), facecolors=_FAIL_COLOUR,
                                         edgecolors="black", linewidths=0.3, hatch="///"))
        handles.append(Patch(facecolor=_FAIL_COLOUR, hatch="///", label="failed run"))
    if len(x0):
        lo, hi = (window[0] / 3600, window[1] / 3600) if window else (x0.min(), x1.max())
        pad = (hi - lo) * 0.01 or 0.01
        ax.set_xlim(lo - pad, hi + pad)
    else:
        ax.text(0.5, 0.5, "no runs to draw", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylim(-0.5, max(capacity.nodes, int(node.max()) + 1 if len(node) else 1) - 0.5)
    ax.set_xlabel("time (hours)")
    ax.set_ylabel("node")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if handles:
        ax.legend(handles=handles, loc="upper right", fontsize="small")
    jobs = len({s.job_id for s in segs})
    ax.set_title(title or f"Runs by node ({jobs} jobs, {len(segs)} runs)")
    return _save(fig, path)


def utilization_chart(
    records: list[JobRecord],
    capacity: Capacity,
    path: str | Path,
    *,
    title: str | None = None,
) -> Path:
    """Busy GPUs (CPUs on a GPU-less machine) over time against the machine's capacity."""
    resource = primary_resource(capacity)
    total = capacity.gpus if resource == "gpu" else capacity.cpus
    times, busy = utilization_series(records, capacity, resource)
    fig, ax = plt.subplots(figsize=(12, 4), layout="constrained")
    util = utilization(records, capacity, resource)
    label = f"busy {resource.upper()}s" + (f" (mean utilisation {util:.1%})" if util is not None else "")
    if len(times):
        # Start the line at zero from the first submit so idle time before the first run shows.
        t0 = min(r.submit for r in records)
        if t0 < times[0]:
            times, busy = np.r_[t0, times], np.r_[0.0, busy]
        ax.step(times / 3600.0, busy, where="post", lw=0.8, label=label)
    else:
        ax.text(0.5, 0.5, "no runs to draw", ha="center", va="center", transform=ax.transAxes)
    ax.axhline(total, ls="--", color="black", lw=1, label=f"capacity ({total} {resource.upper()}s)")
    ax.set_ylim(0, max(total, float(busy.max()) if len(busy) else 0) * 1.05 or 1)
    ax.set_xlabel("time (hours)")
    ax.set_ylabel(f"busy {resource.upper()}s")
    ax.legend(loc="lower right", fontsize="small")
    ax.set_title(title or f"{resource.upper()} utilisation")
    return _save(fig, path)
