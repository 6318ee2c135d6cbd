"""Pictures of a replay: who ran on which node when, and how busy the machine was.

Both charts show the whole replay over the same hours, so they can be read together.
The Gantt draws all bars of a colour as one compound path and the utilisation one line,
so a 100k-job trace renders in seconds on the Agg backend with no display.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Patch, PathPatch  # noqa: E402
from matplotlib.path import Path as MplPath  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from minislurm.sim.metrics import primary_resource, span, utilization, utilization_series  # noqa: E402
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


_RECT_CODES = np.array([MplPath.MOVETO, MplPath.LINETO, MplPath.LINETO, MplPath.LINETO,
                        MplPath.CLOSEPOLY], dtype=MplPath.code_type)


def _bar_patch(ax: plt.Axes, x0: np.ndarray, x1: np.ndarray, y: np.ndarray, **style) -> PathPatch:
    """All bars of one colour as a single compound path.

    One path per colour renders ~300k bars in about a second; a PolyCollection builds a
    Path object per bar and takes several times as long.  add_artist, not add_patch: we
    set the limits ourselves, and add_patch would walk every vertex in Python.
    """
    r = _rects(x0, x1, y)
    verts = np.concatenate([r, r[:, :1]], 1).reshape(-1, 2)
    patch = PathPatch(MplPath(verts, np.tile(_RECT_CODES, len(r))), transform=ax.transData, **style)
    ax.add_artist(patch)
    return patch


def _save(fig: plt.Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return path


def _hours(x: float) -> str:
    return f"{x:.1f}".removesuffix(".0") if abs(x) < 10 else f"{x:,.0f}"


def time_range(records: list[JobRecord]) -> tuple[float, float] | None:
    """(first submit, last end) in hours: the span both charts draw, so they line up."""
    sp = span(records)
    return None if sp is None else (sp[0] / 3600.0, sp[1] / 3600.0)


def _set_time_axis(ax: plt.Axes, lo: float, hi: float) -> None:
    pad = (hi - lo) * 0.01 or 0.01
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_xlabel("time (hours)")


def _what_is_shown(records: list[JobRecord], segs: list[Segment], window: tuple[float, float] | None,
                   whole: tuple[float, float] | None) -> str:
    """The subtitle: which jobs and hours the Gantt holds, out of the whole replay."""
    ran = sum(1 for r in records if r.segments)
    shown = len({s.job_id for s in segs})
    extent = f"{_hours(whole[0])}-{_hours(whole[1])} h" if whole else "no time"
    if window is not None:
        what = (f"runs in {_hours(window[0] / 3600)}-{_hours(window[1] / 3600)} h only: "
                f"{shown:,} of {ran:,} jobs; the replay spans {extent}")
    elif shown < ran:
        what = f"first {shown:,} of {ran:,} jobs by submit time only; the replay spans {extent}"
    else:
        what = f"all {ran:,} jobs ({len(segs):,} runs), {extent}"
    never = len(records) - ran
    return what + (f"; {never:,} never started" if never else "")


def gantt_figure(
    records: list[JobRecord],
    capacity: Capacity,
    *,
    max_jobs: int | None = None,
    window: tuple[float, float] | None = None,
    title: str | None = None,
) -> plt.Figure:
    """Node-by-time chart: one bar per node per run, failed runs red and hatched.

    A run on several nodes has a bar on each; jobs sharing a node overlap on its row.
    By default every run is drawn over the same hours as the utilisation chart.  With
    `window` (start, end in seconds) only runs overlapping it, clipped to it; with
    `max_jobs` only the first jobs by submit time.  The subtitle says which.
    """
    segs = _pick_segments(records, max_jobs, window)
    height = min(max(3.0, 1.5 + 0.06 * capacity.nodes), 20.0)
    fig, ax = plt.subplots(figsize=(12, height), layout="constrained")
    x0, x1, node, job, kind = _bars(segs, window)
    cmap = plt.get_cmap("tab20")
    handles = []
    colour = job % 20
    for c in np.unique(colour[kind == 0]):
        m = (kind == 0) & (colour == c)
        _bar_patch(ax, x0[m], x1[m], node[m], facecolor=cmap(int(c)), edgecolor="none")
    if (kind == 0).any():
        handles.append(Patch(facecolor=cmap(0), label="run (colour = job)"))
    if (kind == 2).any():
        m = kind == 2
        _bar_patch(ax, x0[m], x1[m], node[m], facecolor=_OTHER_COLOUR, edgecolor="none")
        handles.append(Patch(facecolor=_OTHER_COLOUR, label="timeout / cancelled"))
    if (kind == 1).any():
        m = kind == 1
        _bar_patch(ax, x0[m], x1[m], node[m], facecolor=_FAIL_COLOUR, edgecolor="black",
                   linewidth=0.3, hatch="///")
        handles.append(Patch(facecolor=_FAIL_COLOUR, hatch="///", label="failed run"))
    whole = time_range(records)
    shown = (window[0] / 3600, window[1] / 3600) if window else whole
    if shown is not None:
        _set_time_axis(ax, *shown)
    else:
        ax.set_xlabel("time (hours)")
    if not len(x0):
        ax.text(0.5, 0.5, "no runs to draw", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylim(-0.5, max(capacity.nodes, int(node.max()) + 1 if len(node) else 1) - 0.5)
    ax.set_ylabel("node")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if handles:
        ax.legend(handles=handles, loc="upper right", fontsize="small")
    ax.set_title(f"{title or 'Runs by node'}\n{_what_is_shown(records, segs, window, whole)}")
    return fig


def gantt(
    records: list[JobRecord],
    capacity: Capacity,
    path: str | Path,
    *,
    max_jobs: int | None = None,
    window: tuple[float, float] | None = None,
    title: str | None = None,
) -> Path:
    """gantt_figure written to `path` as a PNG."""
    return _save(gantt_figure(records, capacity, max_jobs=max_jobs, window=window, title=title), path)


def utilization_figure(
    records: list[JobRecord],
    capacity: Capacity,
    *,
    title: str | None = None,
) -> plt.Figure:
    """Busy GPUs (CPUs on a GPU-less machine) over time against the machine's capacity."""
    resource = primary_resource(capacity)
    total = capacity.gpus if resource == "gpu" else capacity.cpus
    times, busy = utilization_series(records, capacity, resource)
    fig, ax = plt.subplots(figsize=(12, 4), layout="constrained")
    util = utilization(records, capacity, resource)
    unit = f"{resource.upper()}s"
    label = f"busy {unit}" + (f" (mean utilisation {util:.1%})" if util is not None else "")
    whole = time_range(records)
    if len(times):
        # Start the line at zero from the first submit so idle time before the first run shows.
        t0 = min(r.submit for r in records)
        if t0 < times[0]:
            times, busy = np.r_[t0, times], np.r_[0.0, busy]
        ax.step(times / 3600.0, busy, where="post", lw=0.8, label=label)
        _set_time_axis(ax, *whole)
        what = f"all {len(records):,} jobs, {_hours(whole[0])}-{_hours(whole[1])} h; " \
               f"peak {busy.max():,.0f} of {total:,} {unit} busy"
    else:
        ax.text(0.5, 0.5, "no runs to draw", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel("time (hours)")
        what = "no runs"
    ax.axhline(total, ls="--", color="black", lw=1, label=f"capacity ({total} {unit})")
    ax.set_ylim(0, max(total, float(busy.max()) if len(busy) else 0) * 1.05 or 1)
    ax.set_ylabel(f"busy {unit}")
    ax.legend(loc="lower right", fontsize="small")
    ax.set_title(f"{title or resource.upper() + ' utilisation'}\n{what}")
    return fig


def utilization_chart(
    records: list[JobRecord],
    capacity: Capacity,
    path: str | Path,
    *,
    title: str | None = None,
) -> Path:
    """utilization_figure written to `path` as a PNG."""
    return _save(utilization_figure(records, capacity, title=title), path)
