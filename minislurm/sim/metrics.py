"""Numbers a replay is judged by: waits, bounded slowdown, utilisation, failures.

The definitions follow the batch-scheduling literature (Feitelson's bounded slowdown,
utilisation over the makespan) so runs can be set beside published tables.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from minislurm.sim.records import Capacity, JobRecord, Segment

RESOURCES = ("gpu", "cpu", "node")
CSV_COLUMNS = (
    "id", "submit", "start", "end", "nodes", "gpus", "wait", "state", "restarts",
    "cpus", "runtime", "time_limit", "backfilled",
)


def _clean(x: Any) -> float | None:
    """A plain float for JSON, or None where the value is undefined (None/NaN/inf)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _units(seg: Segment, resource: str) -> int:
    if resource == "gpu":
        return seg.gpus
    if resource == "cpu":
        return seg.cpus
    if resource == "node":
        return len(seg.nodes)
    raise ValueError(f"resource must be one of {RESOURCES}, not {resource!r}")


def _total(capacity: Capacity, resource: str) -> int:
    return {"gpu": capacity.gpus, "cpu": capacity.cpus, "node": capacity.nodes}[resource]


def primary_resource(capacity: Capacity) -> str:
    """GPUs are the scarce resource on an AI cluster; CPUs on a classic HPC machine."""
    return "gpu" if capacity.gpus > 0 else "cpu"


def _segments(records: Iterable[JobRecord]) -> Iterable[Segment]:
    for r in records:
        yield from r.segments


def span(records: list[JobRecord]) -> tuple[float, float] | None:
    """(first submit, last end), the interval utilisation is measured over; None if no job ended."""
    if not records:
        return None
    ends = [r.end for r in records if r.end is not None]
    ends += [s.end for s in _segments(records)]
    if not ends:
        return None
    return min(r.submit for r in records), max(ends)


def utilization(records: list[JobRecord], capacity: Capacity, resource: str) -> float | None:
    """Busy unit-seconds over (capacity x makespan); None where it is undefined."""
    total = _total(capacity, resource)
    sp = span(records)
    if total <= 0 or sp is None or sp[1] <= sp[0]:
        return None
    busy = sum(_units(s, resource) * (s.end - s.start) for s in _segments(records))
    return busy / (total * (sp[1] - sp[0]))


def _mean(xs: list[float]) -> float | None:
    return _clean(np.mean(xs)) if xs else None


def summarize(
    records: list[JobRecord],
    capacity: Capacity,
    *,
    policy: str,
    wall_s: float,
    tau: float = 10.0,
) -> dict[str, Any]:
    """One JSON-able dict of the numbers a replay is compared on.

    Definitions (times in seconds):
    - wait = first start - submit, over jobs that started (wait_* keys; p95 is numpy's
      linear percentile).
    - finished jobs are those with both a first start and a final end.
    - run = final end - first start, i.e. the job's whole time in the system after it first
      started, requeues and the gaps between runs included; so wait + run = end - submit.
    - bsld = mean over finished jobs of max(1, (wait + run) / max(run, tau)).
    - jct = final end - submit, mean over finished jobs.
    - makespan = last end (of any job or segment) - first submit.
    - utilisation = sum over segments of units x (end - start) / (capacity x makespan);
      `utilization` is for the primary resource (GPUs if the machine has any, else CPUs).
    Undefined values (no jobs, no GPUs, wall_s = 0) are None, never NaN.
    """
    started = [r for r in records if r.start is not None]
    finished = [r for r in started if r.end is not None]
    waits = [r.start - r.submit for r in started]
    bslds, jcts = [], []
    for r in finished:
        run = r.end - r.start
        jct = r.end - r.submit
        jcts.append(jct)
        bslds.append(max(1.0, jct / max(run, tau)))
    segs = list(_segments(records))
    sp = span(records)
    primary = primary_resource(capacity)
    return {
        "policy": policy,
        "jobs": len(records),
        "completed": sum(1 for r in records if r.state == "COMPLETED"),
        "started": len(started),
        "finished": len(finished),
        "primary_resource": primary,
        "utilization": _clean(utilization(records, capacity, primary)),
        "gpu_utilization": _clean(utilization(records, capacity, "gpu")),
        "cpu_utilization": _clean(utilization(records, capacity, "cpu")),
        "wait_mean_s": _mean(waits),
        "wait_median_s": _clean(np.median(waits)) if waits else None,
        "wait_p95_s": _clean(np.percentile(waits, 95)) if waits else None,
        "bsld_tau_s": float(tau),
        "bsld_mean": _mean(bslds),
        "jct_mean_s": _mean(jcts),
        "makespan_s": _clean(sp[1] - sp[0]) if sp else None,
        "gpu_hours_lost_to_failures": float(sum(s.lost_gpu_s for s in segs)) / 3600.0,
        "node_failures": sum(1 for s in segs if s.state == "NODE_FAIL"),
        "requeues": sum(int(r.restarts) for r in records),
        "backfilled": sum(1 for r in records if r.backfilled),
        "wall_s": float(wall_s),
        "jobs_per_s": _clean(len(records) / wall_s) if wall_s > 0 else None,
    }


def _cell(x: Any) -> Any:
    if x is None:
        return ""
    if isinstance(x, bool):
        return int(x)
    return x


def write_jobs_csv(records: list[JobRecord], path: str | Path) -> Path:
    """One row per job, so a replay can be opened in a spreadsheet or pandas."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in records:
            row = (r.job_id, r.submit, r.start, r.end, r.nodes, r.gpus, r.wait, r.state,
                   r.restarts, r.cpus, r.runtime, r.time_limit, r.backfilled)
            w.writerow([_cell(x) for x in row])
    return path


def utilization_series(
    records: list[JobRecord],
    capacity: Capacity,
    resource: str = "gpu",
    step: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Busy units over time as a right-continuous step function.

    busy[i] holds on [times[i], times[i+1]); the last value is 0 once every run has ended.
    With `step`, the function is sampled on a regular grid from the first event instead.
    `capacity` is unused today; it is taken so callers pass the same arguments everywhere.
    """
    if resource not in RESOURCES:
        raise ValueError(f"resource must be one of {RESOURCES}, not {resource!r}")
    segs = [s for s in _segments(records) if s.end > s.start]
    if not segs:
        return np.zeros(0, dtype=float), np.zeros(0, dtype=float)
    starts = np.fromiter((s.start for s in segs), float, len(segs))
    ends = np.fromiter((s.end for s in segs), float, len(segs))
    units = np.fromiter((_units(s, resource) for s in segs), float, len(segs))
    t = np.concatenate([starts, ends])
    d = np.concatenate([units, -units])
    order = np.argsort(t, kind="stable")
    t, level = t[order], np.cumsum(d[order])
    # Keep the level after the last event at each distinct time.
    last = np.r_[t[1:] != t[:-1], True]
    times, busy = t[last], level[last]
    busy = np.where(np.abs(busy) < 1e-9, 0.0, busy)
    if step is None:
        return times, busy
    if step <= 0:
        raise ValueError("step must be positive")
    grid = np.arange(times[0], times[-1] + step, step)
    idx = np.searchsorted(times, grid, side="right") - 1
    return grid, busy[np.clip(idx, 0, None)]
