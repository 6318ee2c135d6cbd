"""minislurm's own small trace format, for lessons and hand-written scenarios.

A CSV file whose header names the columns (any order)::

    # comment lines start with '#'; blank lines are ignored
    id,submit,runtime,limit,nodes,gpus_per_node,cpus_per_node,user,account,partition
    1,0,1:30:00,2:00:00,1,8,32,alice,physics,
    2,60,600,30,2,8,,bob,nlp,gpu

Required: ``id, submit, runtime, limit, nodes, gpus_per_node``.  Optional: ``cpus_per_node``,
``mem_per_node`` (MB), ``user``, ``account``, ``partition``; an empty cell means the default.

Times:
- ``submit`` and ``runtime``: a bare number is **seconds**; ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``
  and ``D-H:M:S`` are read exactly, as Slurm writes durations.
- ``limit``: exactly what ``sbatch --time`` accepts (``minislurm.core.timefmt.parse_time_limit``),
  so a bare number is **minutes** (``30`` = 30 min, as in ``#SBATCH -t 30``), seconds round up to
  the minute, and ``UNLIMITED``/``INFINITE``/``-1``/``0`` mean no limit.  Empty: the estimate model.
- a runtime above the limit is clamped to the limit, as in the other readers (Slurm kills the job
  at its limit).
Defaults: ``cpus_per_node`` = the GPUs' share of the node's cores (1 for a CPU-only job), user
``user``, account ``default``, partition None (the cluster's default partition).
"""

from __future__ import annotations

import math

from minislurm.core.timefmt import parse_time_limit

from ._common import (Source, Tally, TraceJob, TraceReadResult, blank_comments, check_args,
                      clamp_runtime, csv_rows, finish, finite, gpu_share_cpus, open_lines)
from .estimate import DEFAULT_ESTIMATE, EstimateModel

REQUIRED = ("id", "submit", "runtime", "limit", "nodes", "gpus_per_node")
OPTIONAL = ("cpus_per_node", "mem_per_node", "user", "account", "partition")


def parse_seconds(text: str) -> float:
    """Seconds from ``123``/``12.5`` (seconds) or ``M:S``, ``H:M:S``, ``D-H[:M[:S]]``, exactly."""
    s = text.strip()
    try:
        value = float(s)
    except ValueError:
        pass
    else:
        if not math.isfinite(value):
            raise ValueError(f"invalid duration: {text!r}")
        return value
    days = "0"
    if "-" in s:
        days, _, s = s.partition("-")
        parts = s.split(":")
        if len(parts) > 3:
            raise ValueError(f"invalid duration: {text!r}")
        h, m, sec = parts + ["0"] * (3 - len(parts))
    else:
        parts = s.split(":")
        if len(parts) == 2:
            h, m, sec = "0", parts[0], parts[1]
        elif len(parts) == 3:
            h, m, sec = parts
        else:
            raise ValueError(f"invalid duration: {text!r}")
    if not (days.isdigit() and h.isdigit() and m.isdigit()):
        raise ValueError(f"invalid duration: {text!r}")
    seconds = float(sec)  # ValueError on junk
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(f"invalid duration: {text!r}")
    return ((int(days) * 24 + int(h)) * 60 + int(m)) * 60 + seconds


def _limit_seconds(text: str) -> float:
    minutes = parse_time_limit(text)
    return minutes if math.isinf(minutes) else minutes * 60.0


def read_native(source: Source, *, cores_per_node: int, gpus_per_node: int,
                limit: int | None = None, estimate: EstimateModel | None = None) -> TraceReadResult:
    """Read a native CSV trace (see the module docstring for columns and time rules).

    Skipped and counted: bad values (per column), runtime <= 0, negative submit, nodes < 1,
    a job larger than one node (GPUs or CPUs per node), a repeated id.  An unknown or missing
    column in the header raises ``ValueError``: it is almost always a typo worth stopping for.
    """
    check_args(cores_per_node, gpus_per_node, limit)
    model = estimate or DEFAULT_ESTIMATE
    jobs: list[TraceJob] = []
    bad, notes = Tally(), Tally()
    seen: set[int] = set()
    with open_lines(source) as lines:
        rows = csv_rows(blank_comments(lines), bad)
        header = next((r for _, r in rows if r and "".join(r).strip()), None)
        if header is None:
            return finish(jobs, bad, notes, "native")
        names = [h.strip().lower() for h in header]
        unknown = [n for n in names if n not in REQUIRED + OPTIONAL]
        missing = [n for n in REQUIRED if n not in names]
        if unknown or missing:
            known = ", ".join(REQUIRED + OPTIONAL)
            raise ValueError(f"native trace header: missing {missing or 'none'}, "
                             f"unknown {unknown or 'none'} (columns: {known})")
        for line_no, row in rows:
            if limit is not None and len(jobs) >= limit:
                break
            if not row or not "".join(row).strip():
                continue
            if len(row) > len(names) or len(row) < len(REQUIRED):
                bad.add(f"wrong field count (expected {len(names)})", line_no)
                continue
            row += [""] * (len(names) - len(row))
            cell = dict(zip(names, (c.strip() for c in row)))
            column = "id"
            try:
                job_id = int(cell["id"])
                column = "submit"
                submit = parse_seconds(cell["submit"])
                column = "runtime"
                runtime = parse_seconds(cell["runtime"])
                column = "limit"
                time_limit = _limit_seconds(cell["limit"]) if cell["limit"] else None
                column = "nodes"
                nodes = int(cell["nodes"])
                column = "gpus_per_node"
                gpus = int(cell["gpus_per_node"])
                column = "cpus_per_node"
                cpus = int(cell["cpus_per_node"]) if cell.get("cpus_per_node") else None
                column = "mem_per_node"
                mem = int(cell["mem_per_node"]) if cell.get("mem_per_node") else 0
            except (ValueError, OverflowError):
                bad.add(f"bad {column} value", line_no)
                continue
            if not finite(submit, runtime):
                bad.add("non-numeric field", line_no)
                continue
            if submit < 0:
                bad.add("negative submit time", line_no)
                continue
            if runtime <= 0:
                bad.add("runtime <= 0", line_no)
                continue
            if nodes < 1 or gpus < 0 or (cpus is not None and cpus < 1) or mem < 0:
                bad.add("nodes < 1 or negative resources", line_no)
                continue
            if cpus is None:
                cpus = gpu_share_cpus(gpus, gpus_per_node, cores_per_node)
            if gpus > gpus_per_node or cpus > cores_per_node:
                bad.add(f"job needs more than a node has ({cores_per_node} CPUs, "
                        f"{gpus_per_node} GPUs)", line_no)
                continue
            if job_id in seen:
                bad.add("repeated id", line_no)
                continue
            seen.add(job_id)
            if time_limit is None:
                time_limit = model.limit_for(runtime)
            runtime = clamp_runtime(runtime, time_limit, notes, line_no)
            jobs.append(TraceJob(job_id, submit, runtime, time_limit, nodes, cpus, gpus,
                                 mem_per_node=mem, user=cell.get("user") or "user",
                                 account=cell.get("account") or "default",
                                 partition=cell.get("partition") or None))
    return finish(jobs, bad, notes, "native")
